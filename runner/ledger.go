package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// Reconciler is an optional interface a Job implements to ask the outside system whether an
// AMBIGUOUS_EFFECT target's effect happened.
type Reconciler interface {
	Reconcile(ctx context.Context, target, step, idempotencyKey string) (Reconciliation, error)
}

// Reconciliation is what the outside system said about one idempotency key. Applied resolves
// the target CONFIRMED with EffectRef (the outside system's id for the effect, as
// Attempt.SetEffectRef records it on a normal call) and EvidenceRef; not applied resolves it
// NOT_APPLIED, safe to retry with the same key.
type Reconciliation struct {
	Applied     bool
	EffectRef   string
	EvidenceRef string
}

// LedgerFilter selects ledger entries of a job, by keyset on id (ascending).
type LedgerFilter struct {
	JobName      string
	States       []LedgerState
	RunID        int64 // 0: any run
	Generation   int64 // 0: any generation
	TargetPrefix string
	AfterID      int64
	Limit        int // 1..1000; 0 means 20
}

// Entries lists ledger entries matching f.
func (s *LedgerService) Entries(ctx context.Context, f LedgerFilter) ([]*bt.LedgerEntry, error) {
	if f.Limit < 0 || f.Limit > 1000 {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "limit must be between 1 and 1000", Field: "first"}
	}
	return s.r.store.Ledger(ctx, postgres.LedgerQuery(f))
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

// Resolution is how an ambiguous target is resolved.
type Resolution string

// Resolutions.
const (
	ResolveConfirmed  Resolution = "CONFIRMED"
	ResolveNotApplied Resolution = "NOT_APPLIED"
)

// ResolveAmbiguous resolves an AMBIGUOUS_EFFECT entry by hand. CONFIRMED needs an evidence
// reference; both need a note. Audited.
func (s *LedgerService) ResolveAmbiguous(ctx context.Context, entryID int64, res Resolution, evidenceRef, note, actor string) (*bt.LedgerEntry, error) {
	r := s.r
	target := fmt.Sprintf("ledger:%d", entryID)
	evidenceRef, note = strings.TrimSpace(evidenceRef), strings.TrimSpace(note)
	// What reaches the ledger and the audit log: masked for a job with sensitive evidence.
	stored := evidenceRef
	if stored != "" {
		if e, lerr := r.store.LedgerEntry(ctx, entryID); lerr == nil {
			if job, ok := r.Job(e.JobName); ok && job.Info().SensitiveEvidence {
				stored = maskEvidence(stored)
			}
		}
	}
	args := map[string]any{"entryId": entryID, "resolution": res, "evidenceRef": stored, "note": note}
	var err error
	switch {
	case res != ResolveConfirmed && res != ResolveNotApplied:
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "resolution must be CONFIRMED or NOT_APPLIED", Field: "resolution"}
	case note == "":
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "say why in a note", Field: "note"}
	case res == ResolveConfirmed && evidenceRef == "":
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "confirming an effect needs an evidence reference", Field: "evidenceRef"}
	case len(note) > 2000 || len(evidenceRef) > 500:
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "note (2000) or evidence reference (500) too long"}
	}
	if err != nil {
		r.audit(ctx, actor, "resolveAmbiguous", target, args, err)
		return nil, err
	}
	var ev *string
	if stored != "" {
		ev = &stored
	}
	e, err := r.store.ResolveAmbiguous(ctx, entryID, bt.LedgerState(res), nil, ev, "resolved by hand: "+note,
		postgres.AuditRecord{Actor: actorOr(actor), Action: "resolveAmbiguous", Target: target, Arguments: args, Outcome: string(res)})
	if err != nil {
		r.audit(ctx, actor, "resolveAmbiguous", target, args, err)
	}
	return e, err
}

// judgeDownstream adds to a preflight a check for each downstream-error-rate stop condition,
// judged on the job's calls over the last five minutes, and blocks it when one would trip:

// Reconcile asks for a reconcile of an AMBIGUOUS_EFFECT entry and returns the request at
// once, PENDING: the job's reconcile hook runs on a worker, and the outcome (DONE with the
// entry CONFIRMED or NOT_APPLIED, or FAILED with the entry left AMBIGUOUS_EFFECT) arrives
// through the EventSink and ReconcileRequest. Refusals, each audited: NOT_FOUND (no such
// entry), INVALID_INPUT (the job has no reconcile hook), CONFLICT (the entry is not
// AMBIGUOUS_EFFECT), ALREADY_RUNNING (a reconcile of the entry is already open).
func (s *LedgerService) Reconcile(ctx context.Context, entryID int64, actor string) (*bt.ReconcileRequest, error) {
	r := s.r
	target := fmt.Sprintf("ledger:%d", entryID)
	args := map[string]any{"entryId": entryID}
	req, err := r.requestReconcile(ctx, entryID, actor, args, target)
	if err != nil {
		r.audit(ctx, actor, "reconcile", target, args, err)
		return nil, err
	}
	r.publishReconcile(req)
	select {
	case r.reconcile.wakeC() <- struct{}{}:
	default:
	}
	return req, nil
}

// ReconcileRequest returns one reconcile request, or NOT_FOUND.
func (s *LedgerService) ReconcileRequest(ctx context.Context, id int64) (*bt.ReconcileRequest, error) {
	return s.r.store.ReconcileRequest(ctx, id)
}

// AwaitReconcile waits until reconcile request id has ended (DONE or FAILED) or ctx ends,
// reading it from the database, and returns it as it last read it. It is for Go callers (tools,
// tests) that want the outcome without an EventSink.
func (s *LedgerService) AwaitReconcile(ctx context.Context, id int64) (*bt.ReconcileRequest, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		q, err := s.r.store.ReconcileRequest(ctx, id)
		if err != nil || !q.Status.Open() {
			return q, err
		}
		select {
		case <-ctx.Done():
			return q, fmt.Errorf("wait for reconcile request %d: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}
