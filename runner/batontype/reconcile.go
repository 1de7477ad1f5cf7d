package batontype

import "time"

// ReconcileStatus is the lifecycle state of a reconcile request.
type ReconcileStatus string

// Reconcile statuses. PENDING and RUNNING are open: an entry has at most one open request.
const (
	// ReconcilePending waits for a worker with a free slot.
	ReconcilePending ReconcileStatus = "PENDING"
	// ReconcileRunning is held by a worker under a lease while the job's hook runs.
	ReconcileRunning ReconcileStatus = "RUNNING"
	// ReconcileDone resolved the entry (ResultState says how).
	ReconcileDone ReconcileStatus = "DONE"
	// ReconcileFailed left the entry AMBIGUOUS_EFFECT (Message says why).
	ReconcileFailed ReconcileStatus = "FAILED"
)

// Open reports whether s is not final yet.
func (s ReconcileStatus) Open() bool { return s == ReconcilePending || s == ReconcileRunning }

// ReconcileRequest is a request to ask a job's reconcile hook about one AMBIGUOUS_EFFECT
// ledger entry, done off the request path by a worker of any instance.
type ReconcileRequest struct {
	ID          int64
	EntryID     int64
	JobName     string
	RequestedBy string
	Status      ReconcileStatus
	// ResultState is CONFIRMED or NOT_APPLIED once the request is DONE.
	ResultState *LedgerState
	// Message says what happened: the outcome, or why the request failed.
	Message string
	// Attempt counts the claims of the request by workers (a holder that died is retried).
	Attempt int
	// Instance is the instance that last claimed it.
	Instance   *string
	LeaseUntil *time.Time
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
}
