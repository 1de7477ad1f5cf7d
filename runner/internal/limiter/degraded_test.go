package limiter_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/internal/limiter"
)

// TestDegraded: with Redis stopped, Acquire still gives permits, held to this instance's share
// of the limits (one of three instances: a third), and Degraded says so, logged once; with
// Redis back the limiter leaves degraded mode.
func TestDegraded(t *testing.T) {
	t.Parallel()
	srv := testenv.PrivateRedis(t)
	logs := &countLog{}
	l := newLimiter(t, newClient(t, srv.URL()), "baton:{dev}:ds:", "i0", func(cfg *limiter.Config) {
		cfg.Share = func() int { return 3 }
		cfg.Log = slog.New(logs)
	})
	ctx := context.Background()
	lim := limiter.Limits{Rate: 30, Burst: 3}
	p, err := l.Acquire(ctx, "provider", lim, time.Now().Add(time.Second))
	if err != nil || p.Degraded {
		t.Fatalf("Acquire with Redis up = %+v, %v", p, err)
	}
	slots := limiter.Limits{Concurrency: 6} // a share of 2
	running, err := l.Acquire(ctx, "batch", slots, time.Now().Add(10*time.Second))
	if err != nil || running.Degraded {
		t.Fatalf("Acquire of a slot with Redis up = %+v, %v", running, err)
	}
	srv.Stop(t)

	var got starts
	for i := range 15 {
		p, err := l.Acquire(ctx, "provider", lim, time.Now().Add(3*time.Second))
		if err != nil {
			t.Fatalf("call %d with Redis down: %v", i, err)
		}
		if !p.Degraded {
			t.Fatalf("call %d with Redis down: permit not marked degraded", i)
		}
		got.add(time.Now())
		p.Release()
	}
	// The share is 10/s with a burst of 1, from an empty bucket: 15 calls span 1.4 s.
	most, at := got.maxInWindow(time.Second)
	if span := at[len(at)-1].Sub(at[0]); span < 1200*time.Millisecond || most > 11 {
		t.Errorf("15 degraded calls spanned %s with %d in one second; want >= 1.2s and <= 11 (a third of 30/s)", span, most)
	}
	if d, since := l.Degraded(); !d || since.IsZero() {
		t.Errorf("Degraded() = %v, %s with Redis down", d, since)
	}

	// The call that took its slot from Redis still runs: the share of 2 has one slot left.
	// Its holder drops the second permit; the slot comes back at its expiry.
	second, err := l.Acquire(ctx, "batch", slots, time.Now().Add(400*time.Millisecond))
	if err != nil || !second.Degraded {
		t.Fatalf("the second slot with Redis down = %+v, %v; want a degraded permit", second, err)
	}
	if _, err := l.Acquire(ctx, "batch", slots, time.Now().Add(100*time.Millisecond)); !errors.Is(err, limiter.ErrNoTurn) {
		t.Errorf("a third slot of a share of 2 = %v, want ErrNoTurn", err)
	}
	third, err := l.Acquire(ctx, "batch", slots, time.Now().Add(10*time.Second))
	if err != nil || third.Waited < 150*time.Millisecond || third.Waited > 3*time.Second {
		t.Fatalf("a slot after the dropped one expires = %+v, %v; want it after the rest of its 400ms", third, err)
	}
	running.Release()

	quota := limiter.Limits{Quota: 6, QuotaWindow: time.Hour} // a share of 2
	for i := range 2 {
		if _, err := l.Acquire(ctx, "metered", quota, time.Now().Add(time.Second)); err != nil {
			t.Fatalf("call %d of a quota share of 2: %v", i+1, err)
		}
	}
	var held *limiter.HeldError
	if _, err := l.Acquire(ctx, "metered", quota, time.Now().Add(time.Second)); !errors.As(err, &held) || held.Reason != "QUOTA" {
		t.Errorf("the third call of a quota share of 2 = %v, want *HeldError QUOTA", err)
	}

	srv.Start(t)
	testenv.Eventually(t, 5*time.Second, "a permit from Redis", func() bool {
		p, err := l.Acquire(ctx, "batch", slots, time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		p.Release()
		return !p.Degraded
	})
	if d, _ := l.Degraded(); d {
		t.Error("Degraded() with Redis back")
	}
	// The call that took a local slot while degraded still runs, unknown to Redis: it counts.
	pair := limiter.Limits{Concurrency: 2}
	if p, err := l.Acquire(ctx, "batch", pair, time.Now().Add(time.Second)); err != nil || p.Degraded {
		t.Fatalf("Acquire of 1 of 2 slots with Redis back = %+v, %v", p, err)
	}
	if _, err := l.Acquire(ctx, "batch", pair, time.Now().Add(100*time.Millisecond)); !errors.Is(err, limiter.ErrNoTurn) {
		t.Errorf("Acquire of a second of 2 slots while a degraded call holds one = %v, want ErrNoTurn", err)
	}
	third.Release()
	if _, err := l.Acquire(ctx, "batch", pair, time.Now().Add(time.Second)); err != nil {
		t.Errorf("Acquire after the degraded call ended: %v", err)
	}
	if w, i := logs.count("downstream limits: Redis unreachable"), logs.count("downstream limits: Redis reachable"); w != 1 || i != 1 {
		t.Errorf("logged entering degraded mode %d times and leaving it %d times, want once each", w, i)
	}
}

// TestDegradedOnTimeout: a Redis that does not answer within the timeout degrades the limiter,
// and while degraded calls do not each pay the timeout.
func TestDegradedOnTimeout(t *testing.T) {
	t.Parallel()
	srv := testenv.PrivateRedis(t)
	admin := newClient(t, srv.URL())
	l := newLimiter(t, newClient(t, srv.URL()), "baton:{dev}:ds:", "i0", func(cfg *limiter.Config) {
		cfg.Timeout = 100 * time.Millisecond
	})
	ctx := context.Background()
	lim := limiter.Limits{Concurrency: 10}
	before, err := l.Acquire(ctx, "provider", lim, time.Now().Add(time.Second))
	if err != nil || before.Degraded {
		t.Fatalf("Acquire with Redis up = %+v, %v", before, err)
	}
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 3000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	p, err := l.Acquire(ctx, "provider", lim, time.Now().Add(time.Second))
	if err != nil || !p.Degraded {
		t.Fatalf("Acquire with Redis paused = %+v, %v; want a degraded permit", p, err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("the first degraded Acquire took %s, want about the 100ms timeout, not the 3s pause", d)
	}
	begin = time.Now()
	for range 5 {
		if p, err := l.Acquire(ctx, "provider", lim, time.Now().Add(time.Second)); err != nil || !p.Degraded {
			t.Fatalf("Acquire while degraded = %+v, %v", p, err)
		}
	}
	before.Release() // its Redis slot comes back at its expiry
	if d := time.Since(begin); d > 400*time.Millisecond {
		t.Errorf("5 calls and a release while degraded took %s: they paid the 100ms timeout", d)
	}
}

// TestProbe: an instance that makes no calls learns of an outage and of its end by probing.
func TestProbe(t *testing.T) {
	t.Parallel()
	srv := testenv.PrivateRedis(t)
	l := newLimiter(t, newClient(t, srv.URL()), "baton:{dev}:ds:", "i0", nil)
	ctx := context.Background()
	l.Probe(ctx)
	if on, _ := l.Degraded(); on {
		t.Fatal("degraded with Redis up")
	}
	srv.Stop(t)
	l.Probe(ctx)
	if on, _ := l.Degraded(); !on {
		t.Fatal("a probe with Redis stopped left the limiter not degraded")
	}
	srv.Start(t)
	testenv.Eventually(t, 10*time.Second, "a probe to find Redis back", func() bool {
		l.Probe(ctx)
		on, _ := l.Degraded()
		return !on
	})
}
