package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/internal/limiter"
)

// TestOnCluster: the scripts work through a Cluster client, for environments whose slot lives
// on another master than the seed, the per-second buckets (named inside the scripts) included.
func TestOnCluster(t *testing.T) {
	t.Parallel()
	set := testenv.PrivateCluster(t)
	c := set.Client(t, 0)
	ctx := context.Background()
	lim := limiter.Limits{Rate: 100, Burst: 2, Concurrency: 2, Quota: 100, QuotaWindow: 24 * time.Hour}
	for _, env := range []string{"alpha", "beta", "gamma", "delta"} {
		l := newLimiter(t, c, "baton:{"+env+"}:ds:", "i0", nil)
		p, err := l.Acquire(ctx, "provider", lim, time.Now().Add(time.Second))
		if err != nil || p.Degraded {
			t.Fatalf("%s: Acquire = %+v, %v", env, p, err)
		}
		if _, err := l.Acquire(ctx, "provider", lim, time.Now().Add(time.Second)); err != nil {
			t.Fatalf("%s: second Acquire: %v", env, err)
		}
		if _, err := l.Acquire(ctx, "provider", lim, time.Now().Add(50*time.Millisecond)); !errors.Is(err, limiter.ErrNoTurn) {
			t.Fatalf("%s: third Acquire with 2 slots held = %v, want ErrNoTurn", env, err)
		}
		p.Release()
		l.Pushback(ctx, "provider", lim, time.Millisecond) // with a Retry-After: lowers the rate at once
		l.Record("provider", limiter.OutcomeThrottled, 0)
		l.Close()
		st, err := l.State(ctx, "provider", lim)
		if err != nil {
			t.Fatalf("%s: State: %v", env, err)
		}
		if st.InFlight != 1 || st.QuotaUsed != 2 || st.Throttled != 1 || st.EffectiveRate > 71 {
			t.Errorf("%s: State = %+v, want 1 in flight, 2 counted, 1 throttled, rate lowered", env, st)
		}
		if d, _ := l.Degraded(); d {
			t.Errorf("%s: degraded on a healthy cluster", env)
		}
	}
}
