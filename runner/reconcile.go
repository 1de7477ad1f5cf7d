package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// Reconciles run off the request path. LedgerService.Reconcile (the API) checks the request and
// records it PENDING; a worker of any instance with the job registered claims it from the
// database (FOR UPDATE SKIP LOCKED: once cluster-wide), takes one of its pool slots, and calls
// the job's hook under the request's lease, bounded by a timeout. The outcome is written
// fenced on that lease and published to the EventSink, if it is also a ReconcileSink.

// DefaultReconcileTimeout bounds a reconcile hook's call when Config.ReconcileTimeout is 0.
const DefaultReconcileTimeout = 30 * time.Second

// reconcileStoreTimeout bounds each database call of a reconcile worker.
const reconcileStoreTimeout = 10 * time.Second

// reconcileAttempts is how many times a request is claimed before a holder that keeps dying
// (a hook that crashes its process, say) fails it for good.
const reconcileAttempts = 3

// ReconcileSink is an EventSink that also receives every change of a reconcile request:
// recorded, claimed, retried, ended. The runner checks Config.Events for it.
type ReconcileSink interface {
	ReconcileChanged(req bt.ReconcileRequest)
}

// reconcileState is the Runner's reconcile machinery; its zero value is ready.
type reconcileState struct {
	once sync.Once
	wake chan struct{}
}

func (s *reconcileState) wakeC() chan struct{} {
	s.once.Do(func() { s.wake = make(chan struct{}, 1) })
	return s.wake
}

func (r *Runner) requestReconcile(ctx context.Context, entryID int64, actor string, args map[string]any, target string) (*bt.ReconcileRequest, error) {
	e, err := r.store.LedgerEntry(ctx, entryID)
	if err != nil {
		return nil, err
	}
	job, ok := r.Job(e.JobName)
	if _, isRec := job.(Reconciler); !ok || !isRec {
		return nil, bt.Errorf(bt.CodeInvalidInput, "job %s has no reconcile hook: resolve the entry by hand", e.JobName)
	}
	if e.State != bt.LedgerAmbiguous {
		return nil, bt.Errorf(bt.CodeConflict, "ledger entry %d is %s, not AMBIGUOUS_EFFECT", entryID, e.State)
	}
	return r.store.InsertReconcile(ctx, entryID, actorOr(actor),
		postgres.AuditRecord{Actor: actorOr(actor), Action: "reconcile", Target: target, Arguments: args, Outcome: string(bt.ReconcilePending)})
}

// reconcileTimeout is the configured bound of one hook call.
func (r *Runner) reconcileTimeout() time.Duration {
	if r.cfg.ReconcileTimeout > 0 {
		return r.cfg.ReconcileTimeout
	}
	return DefaultReconcileTimeout
}

// startReconciles runs the reconcile worker loop beside Run's other loops, on instances with
// worker slots (an API-only instance leaves its requests to the others).
func (r *Runner) startReconciles(ctx context.Context, wg *sync.WaitGroup) {
	if cap(r.slots) == 0 {
		return
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.serveReconciles(ctx) }()
}

// serveReconciles recovers expired reconcile leases and claims pending requests every
// PollInterval, and at once when this instance records a request.
func (r *Runner) serveReconciles(ctx context.Context) {
	wake := r.reconcile.wakeC()
	for {
		r.reconcilePass(ctx)
		t := time.NewTimer(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// reconcilePass is one poll: expired leases first (so their requests can be claimed now),
// then a claim per free slot while requests are pending. A request that finds every slot
// busy stays PENDING for the next poll of any instance: a slot is never waited for.
func (r *Runner) reconcilePass(ctx context.Context) {
	recovered, err := r.store.RecoverReconciles(ctx, reconcileAttempts)
	if err != nil && ctx.Err() == nil {
		r.log.Error("recover reconcile leases", "err", err)
	}
	for _, q := range recovered {
		r.log.Warn("reconcile lease expired", "request", q.ID, "entry", q.EntryID, "status", q.Status)
		r.publishReconcile(q)
	}
	leases := r.reconcileLeases()
	if len(leases) == 0 {
		return
	}
	names := make([]string, len(leases))
	for i, l := range leases {
		names[i] = l.Job
	}
	pending, err := r.store.PendingReconciles(ctx, names)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("read pending reconciles", "err", err)
		}
		return
	}
	for ; pending > 0 && ctx.Err() == nil; pending-- {
		if !r.claimReconcile(ctx, leases) {
			return
		}
	}
}

// reconcileLeases lists the registered jobs with a reconcile hook and each one's lease.
func (r *Runner) reconcileLeases() []postgres.ReconcileLease {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []postgres.ReconcileLease
	for name, j := range r.jobs {
		if _, ok := j.(Reconciler); !ok {
			continue
		}
		lease := j.Info().Lease
		if lease <= 0 {
			lease = r.cfg.DefaultLease
		}
		out = append(out, postgres.ReconcileLease{Job: name, Lease: lease})
	}
	return out
}

// claimReconcile takes a free slot and claims a request for it, handing both to a worker
// goroutine. It reports whether to try another claim.
func (r *Runner) claimReconcile(ctx context.Context, leases []postgres.ReconcileLease) bool {
	r.startMu.RLock()
	defer r.startMu.RUnlock()
	if r.draining.Load() {
		return false
	}
	select {
	case r.slots <- struct{}{}:
	default:
		return false // every slot busy: the next poll tries again
	}
	token := newToken()
	sent := time.Now() // a local duration's start, so the real clock and not NowFunc
	q, remaining, err := r.store.ClaimReconcile(ctx, leases, r.cfg.Instance, token)
	if err != nil || q == nil {
		r.freeSlot()
		if err != nil && ctx.Err() == nil {
			r.log.Error("claim a reconcile request", "err", err)
		}
		return false
	}
	r.workers.Add(1)
	go r.runReconcile(q, postgres.ReconcileFence{ID: q.ID, Token: token}, sent.Add(remaining))
	return true
}

// hookAnswer is what a reconcile hook returned.
type hookAnswer struct {
	rec Reconciliation
	err error
}

// runReconcile does one claimed request on its slot: the hook's call, bounded by the
// reconcile timeout and three quarters of the lease (leaseEnd is by this instance's clock,
// from the remaining time the database gave, so never later than the real end), then the
// fenced outcome. The slot is freed when the hook returns, even after a timeout, so that the
// pool bounds the hooks actually running.
func (r *Runner) runReconcile(q *bt.ReconcileRequest, fence postgres.ReconcileFence, leaseEnd time.Time) {
	defer r.workers.Done()
	log := r.log.With("reconcile", q.ID, "entry", q.EntryID, "job", q.JobName)
	r.publishReconcile(q)

	finish := func(out postgres.ReconcileOutcome, args map[string]any) {
		ctx, cancel := context.WithTimeout(context.Background(), reconcileStoreTimeout)
		defer cancel()
		done, err := r.store.FinishReconcile(ctx, fence, out, postgres.AuditRecord{Actor: q.RequestedBy, Action: "reconcile",
			Target: fmt.Sprintf("ledger:%d", q.EntryID), Arguments: withInstance(args, r.cfg.Instance)})
		if err != nil {
			// LEASE_LOST: the recoverer took the request back; anything else: it will once the
			// lease ends. Either way this worker writes nothing more.
			log.Warn("reconcile outcome refused", "err", err)
			return
		}
		log.Info("reconcile finished", "status", done.Status, "message", done.Message)
		r.publishReconcile(done)
	}

	job, ok := r.Job(q.JobName)
	hook, isRec := job.(Reconciler)
	rctx, cancelRead := context.WithTimeout(context.Background(), reconcileStoreTimeout)
	e, err := r.store.LedgerEntry(rctx, q.EntryID)
	cancelRead()
	switch {
	case !ok || !isRec:
		r.freeSlot()
		finish(postgres.ReconcileOutcome{Message: fmt.Sprintf("job %s has no reconcile hook on instance %s", q.JobName, r.cfg.Instance)}, nil)
		return
	case err != nil:
		r.freeSlot()
		finish(postgres.ReconcileOutcome{Message: fmt.Sprintf("ledger entry %d could not be read", q.EntryID)}, nil)
		return
	case e.State != bt.LedgerAmbiguous:
		r.freeSlot()
		finish(postgres.ReconcileOutcome{Message: fmt.Sprintf("ledger entry %d is %s, not AMBIGUOUS_EFFECT any more: nothing to reconcile", e.ID, e.State)}, nil)
		return
	}

	timeout := r.reconcileTimeout()
	until := time.Until(leaseEnd) * 3 / 4
	bound := fmt.Sprintf("the reconcile timeout (%s)", timeout)
	if until < timeout {
		timeout, bound = max(until, 0), fmt.Sprintf("the request's lease (%s left)", time.Until(leaseEnd).Round(time.Millisecond))
	}
	hctx, hcancel := context.WithTimeout(context.Background(), timeout)
	answers := make(chan hookAnswer, 1)
	go func() {
		defer r.freeSlot()
		defer hcancel()
		defer func() {
			if v := recover(); v != nil {
				log.Error("reconcile hook panicked", "panic", v)
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
	if a.err != nil {
		msg := fmt.Sprintf("the reconcile hook failed: %s; the entry stays AMBIGUOUS_EFFECT", truncate(a.err.Error(), 500))
		if errors.Is(hctx.Err(), context.DeadlineExceeded) { // our bound passed, not one of the hook's own
			msg = fmt.Sprintf("the reconcile hook did not answer within %s, bounded by %s; the entry stays AMBIGUOUS_EFFECT: try again or resolve it by hand",
				timeout.Round(time.Millisecond), bound)
		}
		finish(postgres.ReconcileOutcome{Message: msg}, nil)
		return
	}
	to, note := bt.LedgerNotApplied, "reconciled: the outside system has no effect for this key"
	if a.rec.Applied {
		to, note = bt.LedgerConfirmed, "reconciled: the outside system confirmed the effect"
	}
	args := map[string]any{"resolution": to}
	out := postgres.ReconcileOutcome{Resolve: to, Note: note, Message: note}
	if a.rec.Applied {
		if ev := a.rec.EvidenceRef; ev != "" {
			if job.Info().SensitiveEvidence {
				ev = maskEvidence(ev)
			}
			out.EvidenceRef = &ev
			args["evidenceRef"] = ev
		}
		if a.rec.EffectRef != "" {
			eff := a.rec.EffectRef
			out.EffectRef = &eff
			args["effectRef"] = eff
		}
	}
	finish(out, args)
}

func withInstance(args map[string]any, instance string) map[string]any {
	if args == nil {
		args = map[string]any{}
	}
	args["instance"] = instance
	return args
}

// publishReconcile sends a reconcile request's state to the EventSink, if it takes them.
func (r *Runner) publishReconcile(q *bt.ReconcileRequest) {
	if s, ok := r.cfg.Events.(ReconcileSink); ok && q != nil {
		s.ReconcileChanged(*q)
	}
}
