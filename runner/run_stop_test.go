package runner_test

import (
	"context"
	"testing"

	"github.com/baton-run/baton/runner"
)

// TestRunStoppedWhileStartingIsClean: a Run told to stop before it has registered its
// maintenance job (a SIGTERM right after start) stops cleanly: nothing had started.
func TestRunStoppedWhileStartingIsClean(t *testing.T) {
	b := setup(t)
	r, err := runner.New(runner.Config{DB: b.Pool, Redis: b.Redis, Env: b.Env, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Run(ctx); err != nil {
		t.Errorf("Run stopped before it started: %v; want nil", err)
	}
}
