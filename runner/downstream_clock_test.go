package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// fakeClock is an instance clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// A spent quota holds calls until its window ends by the Redis clock, however far the
// instance's own clock is off: an instance ten minutes behind holds no longer than one on time.
func TestDownstreamQuotaHoldIgnoresTheInstanceClock(t *testing.T) {
	b := setup(t)
	job := runner.NewJob(runner.JobInfo{Name: "quota-clock", Version: "1", StopConditions: []runner.StopCondition{},
		Downstreams: []runner.Downstream{{Name: "metered", Defaults: bt.DownstreamLimits{Quota: 1, QuotaWindow: bt.QuotaHour}}}},
		func(context.Context, *runner.Run) error { return nil })
	r := b.runner(nil, job)
	clock := &fakeClock{t: time.Now().Add(-10 * time.Minute)} // ten minutes behind
	r.SetDownstreamClock(clock.now)
	ctx := context.Background()
	if err := r.AcquireDownstream(ctx, "metered"); err != nil {
		t.Fatalf("the quota's one call: %v", err)
	}
	err := r.AcquireDownstream(ctx, "metered")
	if err == nil || r.DownstreamHeld("metered") != "QUOTA" {
		t.Fatalf("a second call under a quota of 1 got %v, held %q; want a QUOTA hold", err, r.DownstreamHeld("metered"))
	}
	// How long the hour's window has left, by the Redis clock.
	tm, terr := b.Redis.Time(ctx).Result()
	if terr != nil {
		t.Fatal(terr)
	}
	left := tm.Truncate(time.Hour).Add(time.Hour).Sub(tm)
	if left > 2*time.Second {
		clock.add(left - 2*time.Second)
		if got := r.DownstreamHeld("metered"); got != "QUOTA" {
			t.Fatalf("held %q with %s of the window left; want QUOTA", got, 2*time.Second)
		}
	}
	clock.add(4 * time.Second) // past the window's end, by the instance's clock run since the hold
	if got := r.DownstreamHeld("metered"); got != "" {
		t.Fatalf("still held (%s) past the window's end: the instance's clock, ten minutes behind, lengthened the hold", got)
	}
}
