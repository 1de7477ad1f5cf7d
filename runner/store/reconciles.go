package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Reconciles holds reconcile requests: inserted PENDING, claimed by one worker of any instance
// under a lease, and ended fenced on that lease, with the entry's resolution.
type Reconciles interface {
	// InsertReconcile records a PENDING request for an AMBIGUOUS_EFFECT entry and audits it
	// together: NOT_FOUND for an unknown entry, CONFLICT for one not in doubt, ALREADY_RUNNING
	// when a reconcile of the entry is already open.
	InsertReconcile(ctx context.Context, entryID int64, requestedBy string, audit AuditRecord) (*bt.ReconcileRequest, error)
	// InsertReconcileMany is InsertReconcile for many entries, in one transaction: each member
	// that can be requested is, each that cannot (NOT_FOUND, CONFLICT, ALREADY_RUNNING) is
	// reported in failed, and audit's one row, made from the outcome, commits with them.
	InsertReconcileMany(ctx context.Context, entryIDs []int64, requestedBy string, audit BulkAuditFunc) (requested []*bt.ReconcileRequest, failed map[int64]error, err error)
	// ReconcileRequest returns one request, or NOT_FOUND.
	ReconcileRequest(ctx context.Context, id int64) (*bt.ReconcileRequest, error)
	// PendingReconciles counts the PENDING requests of jobs.
	PendingReconciles(ctx context.Context, jobs []string) (int, error)
	// ClaimReconcile takes the oldest PENDING request of one of jobs for instance under a new
	// lease (token): a request is claimed once, whoever claims at the same time. It returns
	// nil when there is none, else the request and how long its lease has left.
	ClaimReconcile(ctx context.Context, jobs []ReconcileLease, instance, token string) (*bt.ReconcileRequest, time.Duration, error)
	// FinishReconcile ends a claimed request as out says, fenced on its lease (LEASE_LOST and
	// nothing changes otherwise), resolving the entry in the same transaction while it is
	// still AMBIGUOUS_EFFECT.
	FinishReconcile(ctx context.Context, fence ReconcileFence, out ReconcileOutcome, audit AuditRecord) (*bt.ReconcileRequest, error)
	// RecoverReconciles ends the expired leases of RUNNING requests: each goes back to PENDING,
	// or after maxAttempts claims to FAILED. It returns the requests changed.
	RecoverReconciles(ctx context.Context, maxAttempts int) ([]*bt.ReconcileRequest, error)
}

// ReconcileLease says how long a claim of a job's reconcile requests holds.
type ReconcileLease struct {
	Job   string
	Lease time.Duration
}

// ReconcileFence identifies the lease a reconcile request's outcome must still hold.
type ReconcileFence struct {
	ID    int64
	Token string
}

// ReconcileOutcome is how a claimed reconcile request ends. Resolve set: the entry becomes
// Resolve (CONFIRMED or NOT_APPLIED) with EffectRef and EvidenceRef and Note, and the request
// DONE; otherwise the request is FAILED with Message and the entry is left as it is.
type ReconcileOutcome struct {
	Resolve     bt.LedgerState
	EffectRef   *string
	EvidenceRef *string
	Note        string
	Message     string
}
