package runner_test

import (
	"context"
	"errors"
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
