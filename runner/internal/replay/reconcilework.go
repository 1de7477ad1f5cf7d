package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// reconcileWork is one claimed request on its slot.
type reconcileWork struct {
	c     *Reconciles
	q     *bt.ReconcileRequest
	fence store.ReconcileFence
	// leaseEnd is by this instance's clock, from the remaining time the database gave, so
	// never later than the real end.
	leaseEnd time.Time
	log      *slog.Logger
	entry    *bt.LedgerEntry // the entry as the work read it; nil until then, or if it could not
}

// hookAnswer is what a reconcile hook returned.
type hookAnswer struct {
	rec Reconciliation
	err error
}

// run does the request: the hook's call, bounded by the reconcile timeout and three quarters
// of the lease, then the fenced outcome. The slot is freed when the hook returns, even after a
// timeout, so that the pool bounds the hooks actually running.
func (w *reconcileWork) run() {
	defer w.c.cfg.Slots.Done()
	w.c.publish(w.q)
	job, ok := w.c.cfg.JobFunc(w.q.JobName)
	rctx, cancelRead := context.WithTimeout(context.Background(), storeTimeout)
	e, err := w.c.cfg.Store.LedgerEntry(rctx, w.q.EntryID)
	cancelRead()
	if err == nil {
		w.entry = e
	}
	var refused string
	switch {
	case !ok || job.Hook == nil:
		refused = fmt.Sprintf("job %s has no reconcile hook on instance %s", w.q.JobName, w.c.cfg.Instance)
	case err != nil:
		refused = fmt.Sprintf("ledger entry %d could not be read", w.q.EntryID)
	case e.State != bt.LedgerAmbiguous:
		refused = fmt.Sprintf("ledger entry %d is %s, not AMBIGUOUS_EFFECT any more: nothing to reconcile", e.ID, e.State)
	}
	if refused != "" {
		w.c.cfg.Slots.Free()
		w.finish(store.ReconcileOutcome{Message: refused}, nil)
		return
	}
	a, msg := w.call(job.Hook, e)
	if msg != "" {
		w.finish(store.ReconcileOutcome{Message: msg}, nil)
		return
	}
	w.finish(w.outcome(a.rec, job.SensitiveEvidence))
}

// call calls the hook on its own goroutine, which frees the slot when the hook returns, and
// waits for its answer until the bound. It returns the answer, or why there is none.
func (w *reconcileWork) call(hook Reconciler, e *bt.LedgerEntry) (hookAnswer, string) {
	timeout := w.c.cfg.Timeout
	until := time.Until(w.leaseEnd) * 3 / 4
	bound := fmt.Sprintf("the reconcile timeout (%s)", timeout)
	if until < timeout {
		timeout, bound = max(until, 0), fmt.Sprintf("the request's lease (%s left)", time.Until(w.leaseEnd).Round(time.Millisecond))
	}
	hctx, hcancel := context.WithTimeout(context.Background(), timeout)
	answers := make(chan hookAnswer, 1)
	go func() {
		defer w.c.cfg.Slots.Free()
		defer hcancel()
		defer func() {
			if v := recover(); v != nil {
				w.log.Error("reconcile hook panicked", "panic", v)
				answers <- hookAnswer{err: fmt.Errorf("the reconcile hook panicked: %v", v)}
			}
		}()
		rec, err := hook.Reconcile(hctx, e.Target, e.Step, e.IdempotencyKey)
		answers <- hookAnswer{rec, err}
	}()
	var a hookAnswer
	select {
	case a = <-answers:
	case <-hctx.Done():
		// A hook that ignores its context still holds the slot until it returns; the request
		// does not wait for it.
		select {
		case a = <-answers:
		default:
			a.err = hctx.Err()
		}
	}
	if a.err == nil {
		return a, ""
	}
	if errors.Is(hctx.Err(), context.DeadlineExceeded) { // our bound passed, not one of the hook's own
		return a, fmt.Sprintf("the reconcile hook did not answer within %s, bounded by %s; the entry stays AMBIGUOUS_EFFECT: try again or resolve it by hand",
			timeout.Round(time.Millisecond), bound)
	}
	return a, fmt.Sprintf("the reconcile hook failed: %s; the entry stays AMBIGUOUS_EFFECT", bt.Truncate(a.err.Error(), 500))
}

// outcome turns the hook's answer into the request's outcome and its audit arguments.
func (w *reconcileWork) outcome(rec Reconciliation, sensitive bool) (store.ReconcileOutcome, map[string]any) {
	to, note := bt.LedgerNotApplied, "reconciled: the outside system has no effect for this key"
	if rec.Applied {
		to, note = bt.LedgerConfirmed, "reconciled: the outside system confirmed the effect"
	}
	args := map[string]any{"resolution": to}
	out := store.ReconcileOutcome{Resolve: to, Note: note, Message: note}
	if !rec.Applied {
		return out, args
	}
	if ev := rec.EvidenceRef; ev != "" {
		if sensitive {
			ev = w.c.cfg.MaskFunc(ev)
		}
		out.EvidenceRef = &ev
		args["evidenceRef"] = ev
	}
	if rec.EffectRef != "" {
		eff := rec.EffectRef
		out.EffectRef = &eff
		args["effectRef"] = eff
	}
	return out, args
}

// finish writes the outcome, fenced on the request's lease, and publishes it.
func (w *reconcileWork) finish(out store.ReconcileOutcome, args map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	args["instance"] = w.c.cfg.Instance
	if w.entry != nil {
		entryArgs(args, w.entry)
	} else {
		args["job"] = w.q.JobName
	}
	done, err := w.c.cfg.Store.FinishReconcile(ctx, w.fence, out, store.AuditRecord{Actor: w.q.RequestedBy, Action: "reconcile",
		Target: fmt.Sprintf("ledger:%d", w.q.EntryID), Arguments: args})
	if err != nil {
		// LEASE_LOST: the recoverer took the request back; anything else: it will once the
		// lease ends. Either way this worker writes nothing more.
		w.log.Warn("reconcile outcome refused", "err", err)
		return
	}
	w.log.Info("reconcile finished", "status", done.Status, "message", done.Message)
	w.c.publish(done)
}
