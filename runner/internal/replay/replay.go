// Package replay is the ledger's operator workflow: preflights, replay and RESTART requests
// with four-eyes approval, the RESTART gate, resolutions of targets in doubt by hand, and
// reconcile requests with the worker that calls a job's reconcile hook.
package replay

import (
	"context"
	"log/slog"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Store is what the replay workflow reads and writes.
type Store interface {
	Run(ctx context.Context, id int64) (*bt.RunRecord, error)
	ActiveRun(ctx context.Context, job string) (*bt.RunRecord, error)
	LastRun(ctx context.Context, job string) (*bt.RunRecord, error)
	GenerationRun(ctx context.Context, job string, gen int64) (*bt.RunRecord, error)
	Job(ctx context.Context, name string) (*bt.JobSettings, error)
	Now(ctx context.Context) (time.Time, error)
	LedgerCounts(ctx context.Context, job string, gen, runID int64) (map[bt.LedgerState]int64, error)
	CheckpointAge(ctx context.Context, job string, gen int64) (*time.Duration, error)
	CallStats(ctx context.Context, job string, window time.Duration) (calls, downstream, rejects int64, err error)
	LedgerEntry(ctx context.Context, id int64) (*bt.LedgerEntry, error)
	Ledger(ctx context.Context, q store.LedgerQuery) ([]*bt.LedgerEntry, error)
	ResolveAmbiguous(ctx context.Context, id int64, to bt.LedgerState, effectRef, evidenceRef *string, note string, audit store.AuditRecord) (*bt.LedgerEntry, error)
	ResolveAmbiguousMany(ctx context.Context, ids []int64, to bt.LedgerState, evidenceRef *string, note string, audit store.BulkAuditFunc) ([]*bt.LedgerEntry, map[int64]error, error)
	InsertReplay(ctx context.Context, r *bt.ReplayRequest, audit store.AuditRecord) (*bt.ReplayRequest, error)
	DecideReplay(ctx context.Context, id int64, d store.ReplayDecision, audit store.AuditRecord) (*bt.ReplayRequest, error)
	ClaimReplay(ctx context.Context, id int64, token string, lapse time.Duration) (*bt.ReplayRequest, error)
	ReleaseReplayClaim(ctx context.Context, id int64, token string) error
	Audit(ctx context.Context, a store.AuditRecord) error
	ReplayRequest(ctx context.Context, id int64) (*bt.ReplayRequest, error)
	ReplayRequests(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error)
}

// Job is what the workflow knows of a job registered on this instance.
type Job struct {
	Version string
	// Downstream are the job's stop conditions on the downstream error rate, defaults filled.
	Downstream []DownstreamLimit
	// SensitiveEvidence masks evidence references before they are stored.
	SensitiveEvidence bool
	// Lease is the job's lease, the lease of its reconcile requests too.
	Lease time.Duration
	// Hook is the job's reconcile hook; nil if it has none.
	Hook Reconciler
}

// DownstreamLimit is a stop condition on the share of external calls that failed downstream.
type DownstreamLimit struct {
	Name      string
	Threshold float64
	MinCalls  int
}

// StartRequest is the run an executed request starts: a RESTART past the gate (the approval
// answered it), or a REPLAY of Generation with Scope.
type StartRequest struct {
	Job string
	// Actor is the request's requester, recorded as the run's requestedBy.
	Actor     string
	RequestID int64
	// Claim is the execute's claim on the request: the run's insert marks the request
	// EXECUTED under it.
	Claim      string
	Restart    bool
	Generation int64
	Scope      bt.ReplayScope
	// Targets narrows a replay to these targets; nil: every target of Scope.
	Targets []string
}

// Config wires a Service.
type Config struct {
	Store  Store
	Logger *slog.Logger
	// JobFunc returns a job registered on this instance. For any other name it returns false
	// and a Job holding only the default downstream limits.
	JobFunc func(name string) (Job, bool)
	// StartFunc starts the run of an executed request.
	StartFunc func(ctx context.Context, p StartRequest) (*bt.RunRecord, error)
	// ScheduleFunc applies the change of an approved SCHEDULE request, by actor (its requester).
	ScheduleFunc func(ctx context.Context, job string, c bt.ScheduleChange, actor string) error
	// AuditFunc records an operation's outcome in the audit log: "ok" or the error's code.
	AuditFunc func(ctx context.Context, actor, action, target string, args map[string]any, err error)
	// MaskFunc masks a sensitive evidence reference.
	MaskFunc func(ref string) string
}

// Service runs preflights, the request workflow and the RESTART gate, and resolves targets in
// doubt by hand.
type Service struct {
	cfg Config
}

// New returns a Service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// Actor is who calls an operation: the name recorded in runs and the audit log, and the
// api_tokens id of the token the call came with. TokenID 0 is code calling without a token (a
// tool or test linked with the runner): such a caller is known by its name alone.
type Actor struct {
	Name    string
	TokenID int64
}

// NameOr returns a, or "system" for no one.
func NameOr(a string) string {
	if a == "" {
		return "system"
	}
	return a
}

func (a Actor) name() string { return NameOr(a.Name) }

func (a Actor) tokenID() *int64 {
	if a.TokenID == 0 {
		return nil
	}
	id := a.TokenID
	return &id
}

// isRequester reports whether by is the identity that made req. Identities are compared by
// token id; the name counts too, since it is all a caller without a token has, and a token
// name is never reissued, so equal names are the same token (or code speaking as it). The
// four-eyes rule thus holds for tokens, for code, and between the two.
func isRequester(req *bt.ReplayRequest, by Actor) bool {
	if by.TokenID != 0 && req.RequestedByTokenID != nil && *req.RequestedByTokenID == by.TokenID {
		return true
	}
	return by.name() == req.RequestedBy
}

func kindWord(req *bt.ReplayRequest) string {
	if req.Kind == bt.KindRestart {
		return "RESTART"
	}
	if req.Kind == bt.KindSchedule {
		return "schedule change"
	}
	return "replay"
}
