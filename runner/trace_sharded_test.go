package runner_test

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestShardedRunSpanCoversItsLife: a sharded run's span ends when the run does — after the
// last of its shards, worked on two instances — with the run's final status, not when its
// plan handed it to the shards.
func TestShardedRunSpanCoversItsLife(t *testing.T) {
	b := setup(t)
	tp := newRecorded(t)
	job := newShardedJob(b, "traced-life", 4, 2)
	mod := func(name string) func(*runner.Config) {
		return func(c *runner.Config) {
			c.Instance, c.PoolSize, c.TracerProvider, c.PollInterval = name, 2, tp, 200*time.Millisecond
		}
	}
	a := b.runner(mod("a"), job)
	b.runner(mod("b"), job)
	id := mustStart(t, a, runner.StartParams{Job: "traced-life"})
	b.waitStatus(id, bt.StatusSucceeded)
	var run sdktrace.ReadOnlySpan
	waitFor(t, "the run's span and its four shards' spans", func() bool {
		runs := tp.spans("run traced-life")
		if len(runs) == 1 {
			run = runs[0]
		}
		return run != nil && len(tp.spans("shard traced-life")) == 4
	})
	if got := attr(run, "baton.run.status"); got != string(bt.StatusSucceeded) {
		t.Errorf("the run's span ended with status %q; want SUCCEEDED", got)
	}
	for _, s := range tp.spans("shard traced-life") {
		if s.EndTime().After(run.EndTime()) {
			t.Errorf("shard %s's span ended after the run's: the run's span does not cover its life", attr(s, "baton.shard.key"))
		}
	}
}
