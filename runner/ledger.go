package runner

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/replay"
	"github.com/baton-run/baton/runner/store"
)

// Reconciler is an optional interface a Job implements to ask the outside system whether an
// AMBIGUOUS_EFFECT target's effect happened.
type Reconciler = replay.Reconciler

// Reconciliation is what the outside system said about one idempotency key. Applied resolves
// the target CONFIRMED with EffectRef (the outside system's id for the effect, as
// Attempt.SetEffectRef records it on a normal call) and EvidenceRef; not applied resolves it
// NOT_APPLIED, safe to retry with the same key.
type Reconciliation = replay.Reconciliation

// LedgerFilter selects ledger entries of a job, by keyset on id (ascending).
type LedgerFilter struct {
	JobName      string
	States       []LedgerState
	RunID        int64 // 0: any run
	Generation   int64 // 0: any generation
	TargetPrefix string
	TargetKey    string // one target exactly; "" any
	AfterID      int64
	Limit        int // 1..1000; 0 means 20
}

// Entries lists ledger entries matching f.
func (s *LedgerService) Entries(ctx context.Context, f LedgerFilter) ([]*bt.LedgerEntry, error) {
	if f.Limit < 0 || f.Limit > 1000 {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "limit must be between 1 and 1000", Field: "first"}
	}
	return s.r.store.Ledger(ctx, store.LedgerQuery(f))
}

// TargetErrors lists the errors the runs of job met on target, oldest first by keyset on id:
// with Entries of the target (TargetKey), its history across runs and generations.
func (s *LedgerService) TargetErrors(ctx context.Context, job, target string, afterID int64, limit int) ([]bt.RunError, error) {
	if limit < 0 || limit > 1000 {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "limit must be between 1 and 1000", Field: "first"}
	}
	return s.r.store.TargetErrors(ctx, job, target, afterID, limit)
}

// Entry returns one ledger entry, or NOT_FOUND.
func (s *LedgerService) Entry(ctx context.Context, id int64) (*bt.LedgerEntry, error) {
	return s.r.store.LedgerEntry(ctx, id)
}

// Summary returns per-state counts of a run (runID != 0) or of a generation, from the
// counters kept in the item transactions (never a COUNT over the ledger).
func (s *LedgerService) Summary(ctx context.Context, job string, generation, runID int64) (map[LedgerState]int64, error) {
	return s.r.store.LedgerCounts(ctx, job, generation, runID)
}

// CountsKey names one set of per-state ledger counts: a generation's (RunID 0) or one run's.
type CountsKey = store.CountsKey

// Counts returns Summary's counts for every key at once, in one statement, keyed as asked: a
// generation's (its job and generation, RunID 0) or a run's (its job, generation and id). A
// key without entries gets an empty map. It serves a page of jobs or runs.
func (s *LedgerService) Counts(ctx context.Context, keys []CountsKey) (map[CountsKey]map[LedgerState]int64, error) {
	return s.r.store.LedgerCountsOf(ctx, keys)
}

// Resolution is how an ambiguous target is resolved.
type Resolution = replay.Resolution

// Resolutions.
const (
	ResolveConfirmed  = replay.ResolveConfirmed
	ResolveNotApplied = replay.ResolveNotApplied
)

// ResolveAmbiguous resolves an AMBIGUOUS_EFFECT entry by hand. CONFIRMED needs an evidence
// reference; both need a note. Audited.
func (s *LedgerService) ResolveAmbiguous(ctx context.Context, entryID int64, res Resolution, evidenceRef, note, actor string) (*bt.LedgerEntry, error) {
	return s.r.replays.ResolveAmbiguous(ctx, entryID, res, evidenceRef, note, actor)
}

// MaxBulkMembers bounds the entries of one bulk resolution or reconcile.
const MaxBulkMembers = replay.MaxMembers

// ResolveAmbiguousMany resolves many AMBIGUOUS_EFFECT entries by hand with one note (and, for
// CONFIRMED, one evidence reference), audited as one row that lists every member and what
// became of it. ResolveAmbiguous's checks, and 1 to MaxBulkMembers entries, refuse the whole
// call (INVALID_INPUT); past them each entry still in doubt is resolved, and each that is not
// (NOT_FOUND, CONFLICT) is left as it was and reported in failed, keyed by id.
func (s *LedgerService) ResolveAmbiguousMany(ctx context.Context, entryIDs []int64, res Resolution, evidenceRef, note, actor string) (resolved []*bt.LedgerEntry, failed map[int64]error, err error) {
	return s.r.replays.ResolveAmbiguousMany(ctx, entryIDs, res, evidenceRef, note, actor)
}

// ReconcileMany asks for a reconcile of many AMBIGUOUS_EFFECT entries (1 to MaxBulkMembers),
// audited as one row that lists every member and what became of it: each entry that can be
// reconciled gets its PENDING request (as Reconcile), each that cannot (NOT_FOUND,
// INVALID_INPUT, CONFLICT, ALREADY_RUNNING) is reported in failed, keyed by id.
func (s *LedgerService) ReconcileMany(ctx context.Context, entryIDs []int64, actor string) (requested []*bt.ReconcileRequest, failed map[int64]error, err error) {
	return s.r.reconciles.RequestMany(ctx, entryIDs, actor)
}

// Reconcile asks for a reconcile of an AMBIGUOUS_EFFECT entry and returns the request at
// once, PENDING: the job's reconcile hook runs on a worker, and the outcome (DONE with the
// entry CONFIRMED or NOT_APPLIED, or FAILED with the entry left AMBIGUOUS_EFFECT) arrives
// through the EventSink and ReconcileRequest. Refusals, each audited: NOT_FOUND (no such
// entry), INVALID_INPUT (the job has no reconcile hook), CONFLICT (the entry is not
// AMBIGUOUS_EFFECT), ALREADY_RUNNING (a reconcile of the entry is already open).
func (s *LedgerService) Reconcile(ctx context.Context, entryID int64, actor string) (*bt.ReconcileRequest, error) {
	return s.r.reconciles.Request(ctx, entryID, actor)
}

// ReconcileRequest returns one reconcile request, or NOT_FOUND.
func (s *LedgerService) ReconcileRequest(ctx context.Context, id int64) (*bt.ReconcileRequest, error) {
	return s.r.reconciles.Get(ctx, id)
}

// AwaitReconcile waits until reconcile request id has ended (DONE or FAILED) or ctx ends,
// reading it from the database, and returns it as it last read it. It is for Go callers (tools,
// tests) that want the outcome without an EventSink.
func (s *LedgerService) AwaitReconcile(ctx context.Context, id int64) (*bt.ReconcileRequest, error) {
	return s.r.reconciles.Await(ctx, id)
}
