package runner

import (
	"context"
	"errors"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// errPending marks an operation whose implementation lands in a following change.
var errPending = errors.New("not implemented yet")

// Reconciler is an optional interface a Job implements to ask the outside system whether an
// AMBIGUOUS_EFFECT target's effect happened. applied=true resolves it CONFIRMED with the
// evidence; applied=false resolves it NOT_APPLIED (safe to retry).
type Reconciler interface {
	Reconcile(ctx context.Context, target, step, idempotencyKey string) (applied bool, evidenceRef string, err error)
}

// LedgerFilter selects ledger entries of a job, by keyset on id (ascending).
type LedgerFilter struct {
	JobName      string
	States       []LedgerState
	RunID        int64 // 0: any run
	Generation   int64 // 0: any generation
	TargetPrefix string
	AfterID      int64
	Limit        int
}

// Ledger lists ledger entries matching f.
func (r *Runner) Ledger(ctx context.Context, f LedgerFilter) ([]bt.LedgerEntry, error) {
	return nil, errPending
}

// LedgerEntry returns one ledger entry, or NOT_FOUND.
func (r *Runner) LedgerEntry(ctx context.Context, id int64) (*bt.LedgerEntry, error) {
	return nil, errPending
}

// LedgerSummary returns per-state counts of a run (runID != 0) or of a generation, from the
// counters kept in the item transactions (never a COUNT over the ledger).
func (r *Runner) LedgerSummary(ctx context.Context, job string, generation, runID int64) (map[LedgerState]int64, error) {
	return r.store.LedgerCounts(ctx, job, generation, runID)
}

// Preflight computes what replaying scope of run's generation would do and whether it may.
func (r *Runner) Preflight(ctx context.Context, runID int64, scope bt.ReplayScope) (*bt.Preflight, error) {
	return nil, errPending
}

// ReplayParams is a replay request.
type ReplayParams struct {
	RunID           int64
	Scope           bt.ReplayScope
	Reason          string
	CompensationRef string
	Actor           string
}

// RequestReplay records a replay request with its preflight. It comes back BLOCKED (with
// the blocking reasons), PENDING_APPROVAL, or — when no approval is needed — EXECUTED with
// the replay run started on this instance.
func (r *Runner) RequestReplay(ctx context.Context, p ReplayParams) (*bt.ReplayRequest, error) {
	return nil, errPending
}

// ApproveReplay approves a PENDING_APPROVAL request (the approver must not be the requester)
// and starts its REPLAY run; the request becomes EXECUTED.
func (r *Runner) ApproveReplay(ctx context.Context, requestID int64, actor, note string) (*bt.ReplayRequest, error) {
	return nil, errPending
}

// RejectReplay rejects a PENDING_APPROVAL request.
func (r *Runner) RejectReplay(ctx context.Context, requestID int64, actor, note string) (*bt.ReplayRequest, error) {
	return nil, errPending
}

// ReplayRequests lists replay requests, newest first, by keyset on id.
func (r *Runner) ReplayRequests(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error) {
	return nil, errPending
}

// ReplayRequest returns one replay request, or NOT_FOUND.
func (r *Runner) ReplayRequest(ctx context.Context, id int64) (*bt.ReplayRequest, error) {
	return nil, errPending
}

// Resolution is how an operator resolves an ambiguous target.
type Resolution string

// Resolutions.
const (
	ResolveConfirmed  Resolution = "CONFIRMED"
	ResolveNotApplied Resolution = "NOT_APPLIED"
)

// ReconcileEntry asks the job's Reconciler about an AMBIGUOUS_EFFECT entry and resolves it.
// Jobs without a Reconciler get INVALID_INPUT.
func (r *Runner) ReconcileEntry(ctx context.Context, entryID int64, actor string) (*bt.LedgerEntry, error) {
	return nil, errPending
}

// ResolveAmbiguous resolves an AMBIGUOUS_EFFECT entry by hand, with evidence and a note.
func (r *Runner) ResolveAmbiguous(ctx context.Context, entryID int64, res Resolution, evidenceRef, note, actor string) (*bt.LedgerEntry, error) {
	return nil, errPending
}

// Alerts returns the active alarms.
func (r *Runner) Alerts(ctx context.Context) ([]bt.Alert, error) {
	return nil, errPending
}

// Audit records a mutation in audit_log. The runner audits its own control operations; the
// API audits what it refuses before reaching them.
func (r *Runner) Audit(ctx context.Context, actor, action, target string, args map[string]any, outcome string) error {
	return errPending
}

// AuditLog lists audit entries, newest first, by keyset on id.
func (r *Runner) AuditLog(ctx context.Context, beforeID int64, limit int) ([]bt.AuditEntry, error) {
	return nil, errPending
}

var _ = time.Second
