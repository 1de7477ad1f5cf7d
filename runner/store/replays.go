package store

import (
	"context"
	"errors"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Replays holds replay and restart requests, moved between statuses by compare-and-set and
// audited in the same transaction.
type Replays interface {
	// InsertReplay records a request and its audit row together. An empty Kind is REPLAY.
	InsertReplay(ctx context.Context, r *bt.ReplayRequest, audit AuditRecord) (*bt.ReplayRequest, error)
	// DecideReplay applies d to request id and audits it, or returns CONFLICT when the request
	// is no longer in d.From.
	DecideReplay(ctx context.Context, id int64, d ReplayDecision, audit AuditRecord) (*bt.ReplayRequest, error)
	// ClaimReplay claims APPROVED request id for token until lapse from now: CONFLICT when the
	// request is not APPROVED or another claim on it has not lapsed. Only the holder of the
	// claim can start the request's run (NewRun.RequestClaim).
	ClaimReplay(ctx context.Context, id int64, token string, lapse time.Duration) (*bt.ReplayRequest, error)
	// ReleaseReplayClaim gives up token's claim on request id; a claim already lost is left alone.
	ReleaseReplayClaim(ctx context.Context, id int64, token string) error
	// ReplayRequest returns one request, or NOT_FOUND.
	ReplayRequest(ctx context.Context, id int64) (*bt.ReplayRequest, error)
	// ReplayRequests lists requests, newest first, before beforeID (0: from the newest).
	ReplayRequests(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error)
}

// ReplayDecision moves a request from one status to another by compare-and-set.
type ReplayDecision struct {
	From, To  bt.ReplayStatus
	DecidedBy *string
	// DecidedByTokenID is the decider's token id; nil for a decision by code, or to keep it.
	DecidedByTokenID *int64
	Note             *string
	Preflight        *bt.Preflight // a fresh preflight to store, if any
	RunID            *int64
	// Reopen, with To PENDING_APPROVAL, is why the request needs approval again: its decision
	// is dropped and Reopen stored as its reopen reason.
	Reopen *string
}

// ErrClaimLost is the insert of a request's run under a claim that no longer holds: it lapsed
// and another execute took it, or the request left APPROVED. Nothing is written.
var ErrClaimLost = errors.New("the claim on the request was lost")
