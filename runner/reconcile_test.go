package runner_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// ambiguousJob returns a job whose targets all end AMBIGUOUS_EFFECT, with hook as its
// reconcile hook.
func ambiguousJob(name string, hook func(ctx context.Context, target, step, key string) (runner.Reconciliation, error), targets ...string) *reconcilingJob {
	base := newLedgerJob(name, targets...)
	base.noCheckpoint = true
	base.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		return runner.Ambiguous(errors.New("timeout after send"))
	}
	return &reconcilingJob{ledgerJob: base, reconcile: hook}
}

// reconcile requests a reconcile of entry id on r and waits for its outcome: the entry as
// resolved, or an error (the refusal, or the request's FAILED message).
func (b *bundle) reconcile(r *runner.Runner, id int64, actor string) (*bt.LedgerEntry, error) {
	b.T.Helper()
	req, err := r.Ledger().Reconcile(context.Background(), id, actor)
	if err != nil {
		return nil, err
	}
	done := b.awaitReconcile(r, req.ID)
	if done.Status != bt.ReconcileDone {
		return nil, fmt.Errorf("reconcile request %d %s: %s", done.ID, done.Status, done.Message)
	}
	return r.Ledger().Entry(context.Background(), id)
}

func (b *bundle) awaitReconcile(r *runner.Runner, id int64) *bt.ReconcileRequest {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q, err := r.Ledger().AwaitReconcile(ctx, id)
	if err != nil {
		b.T.Fatalf("reconcile request %d did not end: %v (%+v)", id, err, q)
	}
	return q
}

// TestReconcileReturnsBeforeTheHook: asking for a reconcile returns while the job's hook is
// still waiting on the outside system; the hook runs on a worker and its answer resolves the
// entry afterwards, audited twice (the request, the outcome).
func TestReconcileReturnsBeforeTheHook(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	entered, answer := make(chan struct{}, 1), make(chan struct{})
	job := ambiguousJob("slow-hook", func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		entered <- struct{}{}
		select {
		case <-answer:
			return runner.Reconciliation{Applied: true, EvidenceRef: "late"}, nil
		case <-ctx.Done():
			return runner.Reconciliation{}, ctx.Err()
		}
	}, "x1")
	r := b.runner(nil, job)
	b.succeed(r, runner.StartParams{Job: "slow-hook"})
	e := b.mustEntry("slow-hook", "x1")

	returned := make(chan *bt.ReconcileRequest, 1)
	go func() {
		req, err := r.Ledger().Reconcile(ctx, e.ID, "ops")
		if err != nil {
			t.Errorf("reconcile request: %v", err)
		}
		returned <- req
	}()
	var req *bt.ReconcileRequest
	select {
	case req = <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("ReconcileEntry did not return while the reconcile hook was blocked: the hook runs on the caller's thread")
	}
	if req == nil || req.Status != bt.ReconcilePending || req.EntryID != e.ID || req.RequestedBy != "ops" {
		t.Fatalf("request %+v, want PENDING for entry %d by ops", req, e.ID)
	}
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the reconcile hook was never called")
	}
	if st := b.mustEntry("slow-hook", "x1").State; st != bt.LedgerAmbiguous {
		t.Fatalf("entry is %s while the hook is out, want AMBIGUOUS_EFFECT", st)
	}
	if q, err := r.Ledger().ReconcileRequest(ctx, req.ID); err != nil || q.Status != bt.ReconcileRunning {
		t.Fatalf("request while the hook is out: %v %+v, want RUNNING", err, q)
	}
	close(answer)
	if done := b.awaitReconcile(r, req.ID); done.Status != bt.ReconcileDone || done.ResultState == nil || *done.ResultState != bt.LedgerConfirmed {
		t.Fatalf("request ended %+v, want DONE CONFIRMED", done)
	}
	if got := b.mustEntry("slow-hook", "x1"); got.State != bt.LedgerConfirmed || deref(got.EvidenceRef) != "late" {
		t.Fatalf("entry %s evidence %s, want CONFIRMED with the hook's evidence", got.State, deref(got.EvidenceRef))
	}
	b.wantAudit("ops", "reconcile", "ledger:"+itoa(e.ID), string(bt.ReconcilePending))
	b.wantAudit("ops", "reconcile", "ledger:"+itoa(e.ID), string(bt.LedgerConfirmed))
}

// TestReconcileTimeout: a hook that does not answer within the reconcile timeout (even one
// that ignores its context) leaves the entry AMBIGUOUS_EFFECT and the request FAILED, saying
// so, while the hook is still out.
func TestReconcileTimeout(t *testing.T) {
	b := setup(t)
	stuck := make(chan struct{})
	var ctxEnded atomic.Bool
	job := ambiguousJob("stuck-hook", func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		<-stuck // ignores ctx, like a client without a deadline
		ctxEnded.Store(ctx.Err() != nil)
		return runner.Reconciliation{Applied: true, EvidenceRef: "too late"}, nil
	}, "x1")
	r := b.runner(func(c *runner.Config) { c.ReconcileTimeout = 300 * time.Millisecond }, job)
	b.succeed(r, runner.StartParams{Job: "stuck-hook"})
	e := b.mustEntry("stuck-hook", "x1")
	req, err := r.Ledger().Reconcile(context.Background(), e.ID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	done := b.awaitReconcile(r, req.ID)
	if done.Status != bt.ReconcileFailed || !testenv.Contains(done.Message, "did not answer within 300ms") ||
		!testenv.Contains(done.Message, "AMBIGUOUS_EFFECT") {
		t.Fatalf("request ended %+v, want FAILED saying the hook did not answer within 300ms", done)
	}
	close(stuck)
	// The late answer changes nothing; the slot it held comes back.
	waitFor(t, "the stuck hook to return", ctxEnded.Load)
	if st := b.mustEntry("stuck-hook", "x1").State; st != bt.LedgerAmbiguous {
		t.Fatalf("entry is %s after a timed-out reconcile, want AMBIGUOUS_EFFECT", st)
	}
	b.wantAudit("ops", "reconcile", "ledger:"+itoa(e.ID), string(bt.ReconcileFailed))
}

// TestReconcileStaleHolder: a holder whose lease ended while its hook was out cannot resolve
// the entry with its late answer; the recoverer hands the request to another claim, whose
// answer stands.
func TestReconcileStaleHolder(t *testing.T) {
	b := setup(t)
	first, calls := make(chan struct{}), atomic.Int32{}
	firstIn := make(chan struct{}, 1)
	job := ambiguousJob("stale-hook", func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		if calls.Add(1) == 1 {
			firstIn <- struct{}{}
			<-first // the paused holder: answers after its lease is gone
			return runner.Reconciliation{Applied: true, EvidenceRef: "stale"}, nil
		}
		return runner.Reconciliation{Applied: false}, nil
	}, "x1")
	refused := make(chan struct{}, 1)
	r := b.runner(func(c *runner.Config) {
		c.Logger = slog.New(signalHandler{msg: "reconcile outcome refused", c: refused})
	}, job)
	b.succeed(r, runner.StartParams{Job: "stale-hook"})
	e := b.mustEntry("stale-hook", "x1")
	req, err := r.Ledger().Reconcile(context.Background(), e.ID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	<-firstIn
	if _, err := b.Pool.Exec(context.Background(), `UPDATE reconcile_requests SET lease_until = statement_timestamp() - interval '1 second' WHERE id = $1`, req.ID); err != nil {
		t.Fatal(err)
	}
	done := b.awaitReconcile(r, req.ID)
	if done.Status != bt.ReconcileDone || *done.ResultState != bt.LedgerNotApplied || done.Attempt != 2 {
		t.Fatalf("request %+v, want DONE NOT_APPLIED by the second claim", done)
	}
	close(first)
	select {
	case <-refused:
	case <-time.After(20 * time.Second):
		t.Fatal("the stale holder's answer was not refused")
	}
	q, err := r.Ledger().ReconcileRequest(context.Background(), req.ID)
	if err != nil || q.Status != bt.ReconcileDone || *q.ResultState != bt.LedgerNotApplied {
		t.Fatalf("request after the stale answer: %v %+v", err, q)
	}
	if got := b.mustEntry("stale-hook", "x1"); got.State != bt.LedgerNotApplied || got.EvidenceRef != nil {
		t.Fatalf("entry %s evidence %s: the stale holder's answer must not land", got.State, deref(got.EvidenceRef))
	}
}

// signalHandler is a slog.Handler that sends on c when a record with message msg is logged.
type signalHandler struct {
	msg string
	c   chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h signalHandler) WithGroup(string) slog.Handler            { return h }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.c <- struct{}{}:
		default:
		}
	}
	return nil
}

// TestReconcileOnceAcrossInstances: two instances with the job, many requests: each is done
// once, by one of them, and each entry's hook is called once.
func TestReconcileOnceAcrossInstances(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	calls := map[string]int{}
	by := map[string]bool{}
	hook := func(instance string) func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		return func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
			mu.Lock()
			calls[target]++
			by[instance] = true
			mu.Unlock()
			return runner.Reconciliation{Applied: true, EvidenceRef: "ev-" + target}, nil
		}
	}
	targets := make([]string, 20)
	for i := range targets {
		targets[i] = fmt.Sprintf("t%02d", i)
	}
	a := b.runner(func(c *runner.Config) { c.Instance = "a" }, ambiguousJob("twice", hook("a"), targets...))
	bb := b.runner(func(c *runner.Config) { c.Instance = "b" }, ambiguousJob("twice", hook("b"), targets...))
	api := b.runner(func(c *runner.Config) { c.Instance = "api"; c.PoolSize = -1 }, ambiguousJob("twice", hook("api"), targets...))
	b.succeed(a, runner.StartParams{Job: "twice"})
	var reqs []int64
	for _, target := range targets {
		req, err := api.Ledger().Reconcile(context.Background(), b.mustEntry("twice", target).ID, "ops")
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req.ID)
	}
	for _, id := range reqs {
		if q := b.awaitReconcile(bb, id); q.Status != bt.ReconcileDone || q.Attempt != 1 {
			t.Fatalf("request %+v, want DONE at its first claim", q)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, target := range targets {
		if calls[target] != 1 {
			t.Errorf("the hook was called %d times for %s, want once", calls[target], target)
		}
	}
	if by["api"] {
		t.Error("the API-only instance ran a reconcile hook")
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'reconcile' AND outcome = 'CONFIRMED'`); n != len(targets) {
		t.Errorf("%d outcome audit rows, want %d", n, len(targets))
	}
}

// TestReconcileRefusals: bad requests get coded errors and leave no request behind.
func TestReconcileRefusals(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	answer := make(chan struct{})
	job := ambiguousJob("refusals", func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		select {
		case <-answer:
		case <-ctx.Done():
		}
		return runner.Reconciliation{}, errors.New("provider down")
	}, "x1", "x2")
	plain, _ := settleJob("plain", "amb")
	r := b.runner(nil, job, plain)
	t.Cleanup(func() { close(answer) }) // before the runner's shutdown, which waits for the hook
	b.succeed(r, runner.StartParams{Job: "refusals"})
	b.succeed(r, runner.StartParams{Job: "plain"})
	e, settled := b.mustEntry("refusals", "x1"), b.mustEntry("refusals", "x2")
	if _, err := r.Ledger().ResolveAmbiguous(ctx, settled.ID, runner.ResolveNotApplied, "", "checked the provider", "erin"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ledger().Reconcile(ctx, e.ID, "ops"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		id   int64
		want bt.Code
	}{
		{"already pending", e.ID, bt.CodeAlreadyRunning},
		{"missing entry", 999999, bt.CodeNotFound},
		{"job without a hook", b.mustEntry("plain", "amb").ID, bt.CodeInvalidInput},
		{"entry not in doubt", settled.ID, bt.CodeConflict},
	} {
		if _, err := r.Ledger().Reconcile(ctx, c.id, "ops"); code(err) != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	if n := b.count(`SELECT count(*) FROM reconcile_requests`); n != 1 {
		t.Errorf("%d reconcile requests, want only the accepted one", n)
	}
	b.wantAudit("ops", "reconcile", "ledger:"+itoa(e.ID), string(bt.CodeAlreadyRunning))
}

// TestReconcileTakesAPoolSlot: a reconcile's hook runs on one of the pool's slots (a start
// meanwhile finds none free), and a request that finds every slot busy waits, PENDING, for a
// later poll instead of a queue.
func TestReconcileTakesAPoolSlot(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	entered, answer := make(chan struct{}, 1), make(chan struct{})
	job := ambiguousJob("one-slot", func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		entered <- struct{}{}
		select {
		case <-answer:
		case <-ctx.Done():
		}
		return runner.Reconciliation{Applied: false}, nil
	}, "x1", "x2")
	gate := make(chan struct{})
	busy := newItemsJob("busy", 1)
	busy.gate = func(int) <-chan struct{} { return gate }
	busy.reached = make(chan int, 1)
	r := b.runner(func(c *runner.Config) { c.PoolSize = 1 }, job, busy)
	t.Cleanup(func() { close(answer) }) // before the runner's shutdown, which waits for the hook
	b.succeed(r, runner.StartParams{Job: "one-slot"})

	// The hook holds the only slot: no run may start.
	req, err := r.Ledger().Reconcile(ctx, b.mustEntry("one-slot", "x1").ID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the reconcile hook was never called")
	}
	if _, err := r.Start(ctx, runner.StartParams{Job: "busy"}); code(err) != bt.CodeCapacityExceeded {
		t.Fatalf("start while the reconcile holds the only slot: %v, want CAPACITY_EXCEEDED", err)
	}
	answer <- struct{}{}
	if q := b.awaitReconcile(r, req.ID); q.Status != bt.ReconcileDone {
		t.Fatalf("request %+v, want DONE", q)
	}

	// A run holds the only slot: the next request waits, then is done once the slot frees.
	var run int64
	waitFor(t, "the slot to come back from the hook", func() bool {
		rec, err := r.Start(ctx, runner.StartParams{Job: "busy"})
		if err != nil {
			return false
		}
		run = rec.ID
		return true
	})
	<-busy.reached
	req, err = r.Ledger().Reconcile(ctx, b.mustEntry("one-slot", "x2").ID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if q, err := r.Ledger().ReconcileRequest(ctx, req.ID); err != nil || q.Status != bt.ReconcilePending {
		t.Fatalf("request while the run holds the only slot: %v %+v, want PENDING", err, q)
	}
	close(gate)
	b.finish(r, run)
	<-entered
	answer <- struct{}{}
	if q := b.awaitReconcile(r, req.ID); q.Status != bt.ReconcileDone || q.Attempt != 1 {
		t.Fatalf("request %+v, want DONE at its first claim", q)
	}
}
