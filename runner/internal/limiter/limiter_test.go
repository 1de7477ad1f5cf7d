package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/limiter"
)

// TestRateAcrossInstances: three instances calling one downstream limited to 50/s with a
// burst of 10 start at most 60 calls in any second, and use the limit.
func TestRateAcrossInstances(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 3, nil)
	lim := limiter.Limits{Rate: 50, Burst: 10}
	const run = 5 * time.Second
	var got starts
	var wg, warm sync.WaitGroup
	var stopAt time.Time
	start := make(chan struct{})
	errs := make(chan error, 18)
	for _, l := range ls {
		for range 6 {
			wg.Add(1)
			warm.Add(1)
			go func() {
				defer wg.Done()
				// Dial the connections and load the script first: that is not the limit's wait.
				_, err := l.Acquire(context.Background(), "warm-up", high, time.Now().Add(time.Second))
				warm.Done()
				if err != nil {
					errs <- err
					return
				}
				<-start
				for {
					p, err := l.Acquire(context.Background(), "provider", lim, stopAt)
					if errors.Is(err, limiter.ErrNoTurn) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
					got.add(time.Now())
					p.Release()
				}
			}()
		}
	}
	warm.Wait()
	stopAt = time.Now().Add(run)
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Acquire: %v", err)
	}
	most, at := got.maxInWindow(time.Second)
	if most > 60 {
		t.Errorf("%d calls started within one second, want <= 60 (rate 50 + burst 10)", most)
	}
	avg := float64(len(at)) / run.Seconds()
	if avg < 0.9*50 {
		t.Errorf("average %.1f calls/s over %s, want >= 45", avg, run)
	}
	t.Logf("%d calls in %s (%.1f/s), at most %d in any second", len(at), run, avg, most)
}

// TestConcurrencyAcrossInstances: a concurrency limit of 5 holds across three instances.
func TestConcurrencyAcrossInstances(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 3, nil)
	lim := limiter.Limits{Concurrency: 5}
	var inFlight, peak, done atomic.Int64
	var wg sync.WaitGroup
	for _, l := range ls {
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 15 {
					p, err := l.Acquire(context.Background(), "provider", lim, time.Now().Add(10*time.Second))
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					n := inFlight.Add(1)
					for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
					}
					time.Sleep(3 * time.Millisecond) // the call
					inFlight.Add(-1)
					p.Release()
					done.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	if got := peak.Load(); got > 5 || got < 2 {
		t.Errorf("peak in flight %d, want 2..5 (limit 5, 15 callers)", got)
	}
	if done.Load() != 225 {
		t.Errorf("%d calls done, want 225", done.Load())
	}
	st, err := ls[0].State(context.Background(), "provider", lim)
	if err != nil || st.InFlight != 0 {
		t.Errorf("State after all released: in flight %d, %v; want 0", st.InFlight, err)
	}
}

// TestSlotOfDeadHolderComesBack: a slot whose holder never releases it (a dead instance)
// comes back at its expiry, the holder's deadline, and another instance gets it.
func TestSlotOfDeadHolderComesBack(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 2, nil)
	lim := limiter.Limits{Concurrency: 1}
	ctx := context.Background()
	if _, err := ls[0].Acquire(ctx, "provider", lim, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err) // the permit is dropped: its holder is gone
	}
	begin := time.Now()
	if _, err := ls[1].Acquire(ctx, "provider", lim, time.Now().Add(200*time.Millisecond)); !errors.Is(err, limiter.ErrNoTurn) {
		t.Fatalf("Acquire while the slot is held = %v, want ErrNoTurn", err)
	}
	if d := time.Since(begin); d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("Acquire with a 200ms deadline gave up after %s", d)
	}
	p, err := ls[1].Acquire(ctx, "provider", lim, time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	defer p.Release()
	if p.Waited < 600*time.Millisecond || p.Waited > 4*time.Second {
		t.Errorf("waited %s for the dead holder's slot, want about the rest of its 1s lease", p.Waited)
	}
}

// TestSlotHeldUntilTheCallsContextEnds: the wait may be bounded tighter than the call (the
// runner waits at most half the lease); the slot of a holder that dies is held until the
// call's context would have ended, not until the end of the wait.
func TestSlotHeldUntilTheCallsContextEnds(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 2, nil)
	lim := limiter.Limits{Concurrency: 1}
	call, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	callEnd, _ := call.Deadline()
	if _, err := ls[0].Acquire(call, "provider", lim, time.Now().Add(100*time.Millisecond)); err != nil {
		t.Fatal(err) // the permit is dropped: its holder is gone
	}
	// Well past the first call's wait bound, well before its context's end.
	if _, err := ls[1].Acquire(context.Background(), "provider", lim, time.Now().Add(500*time.Millisecond)); !errors.Is(err, limiter.ErrNoTurn) {
		t.Fatalf("Acquire while the dead call's context lasts = %v, want ErrNoTurn", err)
	}
	p, err := ls[1].Acquire(context.Background(), "provider", lim, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatalf("Acquire after the dead call's context ended: %v", err)
	}
	defer p.Release()
	if got := time.Now(); got.Before(callEnd.Add(-50 * time.Millisecond)) {
		t.Errorf("the slot came back %s before the dead call's context ended", callEnd.Sub(got))
	}
}

// TestPushback: a pushback lowers the effective rate for every instance (once per cooldown),
// Retry-After holds every call until it passes on the Redis clock, and without further
// pushback the rate climbs back to the limit within Recovery.
func TestPushback(t *testing.T) {
	t.Parallel()
	const recovery = 2 * time.Second
	ls, c := instances(t, 2, func(cfg *limiter.Config) { cfg.Adapt.Recovery, cfg.Adapt.Evidence = recovery, 1 })
	lim := limiter.Limits{Rate: 100, Burst: 1}
	ctx := context.Background()
	rate := func() float64 {
		st, err := ls[1].State(ctx, "provider", lim)
		if err != nil {
			t.Fatal(err)
		}
		return st.EffectiveRate
	}
	if r := rate(); r != 100 {
		t.Fatalf("effective rate before pushback %.2f, want 100", r)
	}
	ls[0].Pushback(ctx, "provider", lim, 0)
	ls[0].Pushback(ctx, "provider", lim, 0) // within the cooldown: counts once
	if r := rate(); r < 69 || r > 75 {
		t.Fatalf("effective rate after two pushbacks within the cooldown %.2f, want about 70", r)
	}
	ls[0].Pushback(ctx, "provider", lim, 500*time.Millisecond)
	st, err := ls[1].State(ctx, "provider", lim)
	if err != nil || st.BlockedUntil.IsZero() {
		t.Fatalf("State after Retry-After: %+v, %v; want BlockedUntil", st, err)
	}
	if _, err := ls[1].Acquire(ctx, "provider", lim, time.Now().Add(100*time.Millisecond)); !errors.Is(err, limiter.ErrNoTurn) {
		t.Fatalf("Acquire with a deadline before Retry-After ends = %v, want ErrNoTurn", err)
	}
	for i := range 3 {
		p, err := ls[i%2].Acquire(ctx, "provider", lim, time.Now().Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if now := redisNow(t, c); now.Before(st.BlockedUntil) {
			t.Errorf("call %d started at %s (Redis clock), before Retry-After ends at %s", i, now, st.BlockedUntil)
		}
		p.Release()
	}
	// Recovery is quadratic: a few hundred ms after the decrease the rate has barely climbed.
	if r := rate(); r > 85 {
		t.Errorf("effective rate %.2f soon after the decrease, want a slow start of the climb from 70", r)
	}
	last := 0.0
	testenv.Eventually(t, recovery+time.Second, "the effective rate back at 100", func() bool {
		r := rate()
		if r < last-0.01 {
			t.Fatalf("effective rate fell from %.2f to %.2f without pushback", last, r)
		}
		last = r
		return r == 100
	})
}

// TestQuota: the call past an hourly quota of 5 is held until the hour's end, takes nothing.
func TestQuota(t *testing.T) {
	t.Parallel()
	ls, c := instances(t, 2, nil)
	lim := limiter.Limits{Quota: 5, QuotaWindow: time.Hour, Concurrency: 10}
	ctx := context.Background()
	for i := range 5 {
		if _, err := ls[i%2].Acquire(ctx, "provider", lim, time.Now().Add(time.Second)); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	begin := time.Now()
	_, err := ls[0].Acquire(ctx, "provider", lim, time.Now().Add(time.Minute))
	var held *limiter.HeldError
	if !errors.As(err, &held) || held.Reason != "QUOTA" {
		t.Fatalf("6th call = %v, want *HeldError QUOTA", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("the held call took %s, want at once (its deadline is a minute away)", d)
	}
	if want := redisNow(t, c).Truncate(time.Hour).Add(time.Hour); !held.Until.Equal(want) {
		t.Errorf("held until %s, want the hour's end %s", held.Until, want)
	}
	st, err := ls[1].State(ctx, "provider", lim)
	if err != nil || st.QuotaUsed != 5 || st.InFlight != 5 {
		t.Errorf("State = quota used %d, in flight %d, %v; want 5 and 5 (the held call takes nothing)", st.QuotaUsed, st.InFlight, err)
	}
}

// TestNoTurn: a call whose turn comes after its deadline fails at once and reserves nothing.
func TestNoTurn(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 1, nil)
	l := ls[0]
	lim := limiter.Limits{Rate: 0.5, Burst: 1} // a turn every 2 s
	ctx := context.Background()
	if _, err := l.Acquire(ctx, "provider", lim, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err := l.Acquire(ctx, "provider", lim, time.Now().Add(1500*time.Millisecond))
	if !errors.Is(err, limiter.ErrNoTurn) {
		t.Fatalf("second call = %v, want ErrNoTurn", err)
	}
	if d := time.Since(begin); d > 1200*time.Millisecond {
		t.Errorf("ErrNoTurn after %s, want at once, not at the deadline", d)
	}
	p, err := l.Acquire(ctx, "provider", lim, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if p.Waited < 1200*time.Millisecond || p.Waited > 3500*time.Millisecond {
		t.Errorf("third call waited %s, want about 2 s, not 4 s (the refused call reserved nothing)", p.Waited)
	}
}

// TestUnlimited: zero limits give a permit at once without touching Redis.
func TestUnlimited(t *testing.T) {
	t.Parallel()
	c := newClient(t, "redis://127.0.0.1:1/0") // nothing listens there
	l := newLimiter(t, c, "baton:{x}:ds:", "i0", nil)
	p, err := l.Acquire(context.Background(), "provider", limiter.Limits{}, time.Now().Add(time.Second))
	if err != nil || p == nil || p.Degraded {
		t.Fatalf("Acquire with no limits = %+v, %v", p, err)
	}
	p.Release()
	p.Release()
	if d, _ := l.Degraded(); d {
		t.Error("an unlimited call touched Redis")
	}
	var nilPermit *limiter.Permit
	nilPermit.Release()
}

// TestInvalidLimits: limits no downstream can have are refused with a coded error, and
// nothing is reserved.
func TestInvalidLimits(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 1, nil)
	for _, tc := range []struct {
		name, field string
		lim         limiter.Limits
	}{
		{"provider", "rate", limiter.Limits{Rate: -1}},
		{"provider", "burst", limiter.Limits{Rate: 1, Burst: -1}},
		{"provider", "concurrency", limiter.Limits{Concurrency: -2}},
		{"provider", "quota", limiter.Limits{Quota: -5}},
		{"provider", "quotaWindow", limiter.Limits{Quota: 5}},
		{"", "name", limiter.Limits{Rate: 1}},
	} {
		_, err := ls[0].Acquire(context.Background(), tc.name, tc.lim, time.Now().Add(time.Second))
		var e *bt.Error
		if !errors.As(err, &e) || e.Code != bt.CodeInvalidInput || e.Field != tc.field {
			t.Errorf("Acquire(%q, %+v) = %v, want INVALID_INPUT on %s", tc.name, tc.lim, err, tc.field)
		}
	}
}

// TestRecordState: recorded calls show in every instance's State within about a second.
func TestRecordState(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 2, nil)
	lim := limiter.Limits{Rate: 10}
	for range 3 {
		ls[0].Record("provider", limiter.OutcomeOK, 0)
	}
	ls[0].Record("provider", limiter.OutcomeThrottled, 0)
	ls[0].Record("provider", limiter.OutcomeError, 50*time.Millisecond)
	ls[1].Record("provider", limiter.OutcomeOK, 150*time.Millisecond)
	ls[1].Close() // flushes
	var st limiter.State
	testenv.Eventually(t, 3*time.Second, "six calls in State", func() bool {
		var err error
		st, err = ls[1].State(context.Background(), "provider", lim)
		if err != nil {
			t.Fatal(err)
		}
		return st.Calls == 6
	})
	if st.Throttled != 1 || st.Errors != 1 || st.Waits != 2 {
		t.Errorf("State = %+v, want 1 throttled, 1 error, 2 waits", st)
	}
	if st.WaitSeconds < 0.199 || st.WaitSeconds > 0.201 || st.CallsPerSecond != 0.6 {
		t.Errorf("State = %+v, want 0.2 wait seconds and 0.6 calls/s", st)
	}
	if st.EffectiveRate != 10 || st.InFlight != 0 || !st.BlockedUntil.IsZero() {
		t.Errorf("State = %+v, want effective rate 10, nothing in flight, not blocked", st)
	}
}

// TestCancelledWaitGivesBack: a call whose context ends while it waits for its turn gives its
// slot and its quota count back.
func TestCancelledWaitGivesBack(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 1, nil)
	lim := limiter.Limits{Rate: 1, Burst: 1, Concurrency: 5, Quota: 10, QuotaWindow: time.Hour}
	first, err := ls[0].Acquire(context.Background(), "provider", lim, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel) // while it waits for its turn, 1s away
	if _, err := ls[0].Acquire(ctx, "provider", lim, time.Now().Add(5*time.Second)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire whose context ends during the wait = %v, want the context's error", err)
	}
	st, err := ls[0].State(context.Background(), "provider", lim)
	if err != nil || st.InFlight != 1 || st.QuotaUsed != 1 {
		t.Errorf("State = in flight %d, quota used %d, %v; want 1 and 1", st.InFlight, st.QuotaUsed, err)
	}
}

// TestPushbackNeedsEvidence: a pushback without a Retry-After lowers the rate only once
// Adapt.Evidence of them came within one cooldown, on any instances; one with a Retry-After
// lowers it at once. Sporadic errors leave the rate alone.
func TestPushbackNeedsEvidence(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 2, func(cfg *limiter.Config) { cfg.Adapt.Cooldown = time.Minute })
	ctx := context.Background()
	rate := func(lim limiter.Limits) float64 {
		st, err := ls[1].State(ctx, "provider", lim)
		if err != nil {
			t.Fatal(err)
		}
		return st.EffectiveRate
	}
	lim := limiter.Limits{Rate: 100, Burst: 1}
	ls[0].Pushback(ctx, "provider", lim, 0)
	ls[1].Pushback(ctx, "provider", lim, 0)
	if r := rate(lim); r != 100 {
		t.Fatalf("after 2 pushbacks (evidence 3) the rate is %.2f, want 100", r)
	}
	ls[0].Pushback(ctx, "provider", lim, 0)
	if r := rate(lim); r < 69 || r > 71 {
		t.Fatalf("after the 3rd pushback within the cooldown the rate is %.2f, want about 70", r)
	}
	other := limiter.Limits{Rate: 50, Burst: 1}
	ls[1].Pushback(ctx, "other", other, 0)
	ls[1].Pushback(ctx, "other", other, time.Second)
	st, err := ls[0].State(ctx, "other", other)
	if err != nil || st.EffectiveRate < 34 || st.EffectiveRate > 36 {
		t.Fatalf("after a pushback with Retry-After the rate is %+v, %v; want about 35", st, err)
	}
}

// TestPushbackFloor: repeated pushback never takes the effective rate below Floor × Rate.
func TestPushbackFloor(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 1, func(cfg *limiter.Config) {
		cfg.Adapt = limiter.Adapt{Cooldown: time.Microsecond, Floor: 0.05, Decrease: 0.5, Evidence: 1}
	})
	ctx := context.Background()
	for _, tc := range []struct {
		rate, want float64
	}{
		{100, 5},     // 5% of 100/s
		{1, 0.1},     // never below 0.1/s
		{0.05, 0.05}, // a rate below 0.1/s is not lowered
	} {
		lim := limiter.Limits{Rate: tc.rate}
		name := fmt.Sprintf("provider-%v", tc.rate)
		for range 12 {
			ls[0].Pushback(ctx, name, lim, 0)
			time.Sleep(time.Millisecond) // past the cooldown
		}
		st, err := ls[0].State(ctx, name, lim)
		if err != nil || math.Abs(st.EffectiveRate-tc.want) > tc.want*0.01 {
			t.Errorf("rate %v: effective rate after 12 pushbacks %v, %v; want %v", tc.rate, st.EffectiveRate, err, tc.want)
		}
	}
}

// TestRetryAfterWithoutRate: Retry-After holds the calls to a downstream that has no rate
// limit too.
func TestRetryAfterWithoutRate(t *testing.T) {
	t.Parallel()
	ls, c := instances(t, 2, nil)
	lim := limiter.Limits{Concurrency: 3}
	ctx := context.Background()
	ls[0].Pushback(ctx, "provider", lim, 300*time.Millisecond)
	st, err := ls[1].State(ctx, "provider", lim)
	if err != nil || st.BlockedUntil.IsZero() || st.EffectiveRate != 0 {
		t.Fatalf("State after Retry-After = %+v, %v; want blocked, no rate", st, err)
	}
	p, err := ls[1].Acquire(ctx, "provider", lim, time.Now().Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if now := redisNow(t, c); now.Before(st.BlockedUntil) {
		t.Errorf("the call started at %s (Redis clock), before Retry-After ends at %s", now, st.BlockedUntil)
	}
}
