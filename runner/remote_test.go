package runner_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestAPIOnlyInstanceHandsStartsToWorkers(t *testing.T) {
	b := setup(t)
	job := newItemsJob("handed", 3)
	api := b.runner(func(c *runner.Config) { c.PoolSize = -1; c.Instance = "api-only" }, job)
	// No worker instance yet: refused at once (after the wait), nothing written or left queued.
	apiShort := b.runner(func(c *runner.Config) { c.PoolSize = -1; c.RemoteStartWait = 200 * time.Millisecond }, job)
	if _, err := apiShort.Start(context.Background(), runner.StartParams{Job: "handed"}); !errors.Is(err, bt.ErrCapacityExceeded) {
		t.Fatalf("start with no worker instance: %v, want CAPACITY_EXCEEDED", err)
	}
	if n := b.count(`SELECT count(*) FROM job_runs`); n != 0 {
		t.Fatalf("a refused start left %d run rows", n)
	}
	if n := b.Redis.LLen(context.Background(), "baton:{"+b.Env+"}:starts").Val(); n != 0 {
		t.Fatalf("%d start requests left waiting: starts must not queue", n)
	}

	b.runner(func(c *runner.Config) { c.PoolSize = 2; c.Instance = "worker-1" }, job)
	run, err := api.Start(context.Background(), runner.StartParams{Job: "handed", Actor: "ops"})
	if err != nil || run == nil {
		t.Fatalf("start through the API-only instance: %v, %v", run, err)
	}
	id := run.ID
	b.waitStatus(id, bt.StatusSucceeded)
	var instance, actor string
	if err := b.Pool.QueryRow(context.Background(), `SELECT instance, requested_by FROM job_runs WHERE id = $1`, id).Scan(&instance, &actor); err != nil {
		t.Fatal(err)
	}
	if instance != "worker-1" || actor != "ops" {
		t.Fatalf("run on %q requested by %q; want worker-1 and ops", instance, actor)
	}
	// Outcomes travel back with their codes.
	gate := make(chan struct{})
	defer close(gate)
	job.gate = func(int) <-chan struct{} { return gate }
	// RESTART: a RESUME would continue after the last item the first run committed, find
	// nothing left to do and end at once, and the job would not be held.
	first, err := api.Start(context.Background(), runner.StartParams{Job: "handed", Mode: bt.ModeRestart})
	if err != nil {
		t.Fatal(err)
	}
	b.waitStatus(first.ID, bt.StatusRunning)
	if _, err := api.Start(context.Background(), runner.StartParams{Job: "handed"}); !errors.Is(err, bt.ErrAlreadyRunning) {
		t.Fatalf("second start through the API-only instance: %v, want ALREADY_RUNNING", err)
	}
	if _, err := api.Start(context.Background(), runner.StartParams{Job: "nope"}); !errors.Is(err, bt.ErrNotFound) {
		t.Fatalf("unknown job: %v, want NOT_FOUND", err)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'startJob'`); n != 5 {
		t.Fatalf("%d startJob audit rows, want 5 (one per start asked of an API-only instance, none from the worker)", n)
	}
}

// Every kind of start asked of an API-only instance runs on a worker as it was asked: a plain
// start, a RESUME, a RESTART, a replay of selected targets and an approved RESTART request.
func TestAPIOnlyInstanceHandsOverEveryKindOfStart(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job, phase := settleJob("handover", "t1", "tr2", "tr3", "tr4", "t5")
	high, highPhase := settleJob("handover-high", "h1", "h2")
	high.info.Risk = bt.RiskHigh
	highPhase.Store(2)
	api := b.runner(func(c *runner.Config) { c.PoolSize = -1; c.Instance = "api-only" }, job, high)
	worker := b.runner(func(c *runner.Config) { c.PoolSize = 2; c.Instance = "worker-1" }, job, high)
	onWorker := func(what string, id int64) *bt.RunRecord {
		t.Helper()
		rec := b.finish(worker, id)
		if rec.Status != bt.StatusSucceeded || rec.Instance != "worker-1" {
			t.Fatalf("%s: run %d %s on %q, want SUCCEEDED on worker-1", what, id, rec.Status, rec.Instance)
		}
		return rec
	}
	calls := func() map[string]int {
		out := map[string]int{}
		for _, k := range []string{"t1", "tr2", "tr3", "tr4", "t5"} {
			out[k] = job.callsOf(k)
		}
		return out
	}
	wantCalls := func(what string, want map[string]int) {
		t.Helper()
		if got := calls(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: calls %v, want %v", what, got, want)
		}
	}

	// A plain start: tr2–tr4 fail TRANSIENT.
	first := onWorker("plain start", mustStart(t, api, runner.StartParams{Job: "handover", Actor: "ops"}))
	wantCalls("plain start", map[string]int{"t1": 1, "tr2": 1, "tr3": 1, "tr4": 1, "t5": 1})
	phase.Store(2)

	// A replay of tr2 alone calls tr2 and nothing else.
	req, err := api.Replays().Request(ctx, runner.ReplayParams{RunID: first.ID, Scope: bt.ScopeTransient, TargetKeys: []string{"tr2"},
		Reason: "provider back", Actor: "alice"})
	if err != nil || req.Status != bt.ReplayExecuted || req.ReplayRunID == nil {
		t.Fatalf("replay of tr2 through the API-only instance: %v %+v, want EXECUTED", err, req)
	}
	rep := onWorker("replay of tr2", *req.ReplayRunID)
	if rep.Trigger != bt.TriggerReplay || rep.RequestedBy != "alice" || rep.ReplayRequestID == nil || *rep.ReplayRequestID != req.ID {
		t.Fatalf("replay run %+v: want a REPLAY by alice for request %d", rep, req.ID)
	}
	wantCalls("replay of tr2", map[string]int{"t1": 1, "tr2": 2, "tr3": 1, "tr4": 1, "t5": 1})

	// A RESUME continues generation 1 from its checkpoint: nothing is left to call.
	res := onWorker("RESUME", mustStart(t, api, runner.StartParams{Job: "handover", Mode: bt.ModeResume, Actor: "ops"}))
	if res.Mode != bt.ModeResume || res.Generation != 1 {
		t.Fatalf("RESUME run: mode %s generation %d, want RESUME in generation 1", res.Mode, res.Generation)
	}
	wantCalls("RESUME", map[string]int{"t1": 1, "tr2": 2, "tr3": 1, "tr4": 1, "t5": 1})

	// A RESTART opens generation 2 and calls every target again.
	rs := onWorker("RESTART", mustStart(t, api, runner.StartParams{Job: "handover", Mode: bt.ModeRestart, Actor: "ops"}))
	if rs.Mode != bt.ModeRestart || rs.Generation != 2 || rs.RequestedBy != "ops" {
		t.Fatalf("RESTART run: mode %s generation %d by %s, want RESTART in generation 2 by ops", rs.Mode, rs.Generation, rs.RequestedBy)
	}
	wantCalls("RESTART", map[string]int{"t1": 2, "tr2": 3, "tr3": 2, "tr4": 2, "t5": 2})

	// An approved RESTART request of a HIGH-risk job.
	onWorker("first run of the HIGH-risk job", mustStart(t, api, runner.StartParams{Job: "handover-high", Actor: "ops"}))
	rr, err := api.Replays().RequestRestart(ctx, runner.RestartParams{Job: "handover-high", Reason: "new rates", CompensationRef: "REV-1", Actor: "alice"})
	if err != nil || rr.Status != bt.ReplayPendingApproval {
		t.Fatalf("RESTART request: %v %+v, want PENDING_APPROVAL", err, rr)
	}
	done, err := api.Replays().Approve(ctx, rr.ID, runner.Actor{Name: "bob"}, "ok")
	if err != nil || done.Status != bt.ReplayExecuted || done.ReplayRunID == nil {
		t.Fatalf("approve through the API-only instance: %v %+v, want EXECUTED", err, done)
	}
	hr := onWorker("approved RESTART", *done.ReplayRunID)
	if hr.Mode != bt.ModeRestart || hr.Generation != 2 || hr.RequestedBy != "alice" || hr.ReplayRequestID == nil || *hr.ReplayRequestID != rr.ID {
		t.Fatalf("approved RESTART run %+v: want RESTART in generation 2, requested by alice, for request %d", hr, rr.ID)
	}
	if high.callsOf("h1") != 2 || high.callsOf("h2") != 2 {
		t.Fatalf("approved RESTART called h1 %d and h2 %d times, want 2 each", high.callsOf("h1"), high.callsOf("h2"))
	}
}
