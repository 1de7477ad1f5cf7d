package limiter

import (
	"math"
	"testing"
	"time"
)

func TestFraction(t *testing.T) {
	t.Parallel()
	const rec = 20 * time.Second
	for _, tc := range []struct {
		f0      float64
		elapsed time.Duration
		minf    float64
		want    float64
	}{
		{0.7, 0, 0.02, 0.7},
		{0.7, 5 * time.Second, 0.02, 0.7 + 0.3/16}, // slow at first: a quarter of the way, a sixteenth of the climb
		{0.7, 10 * time.Second, 0.02, 0.775},
		{0.7, 15 * time.Second, 0.02, 0.7 + 0.3*9.0/16},
		{0.7, rec, 0.02, 1},
		{0.7, time.Hour, 0.02, 1},
		{0.01, 0, 0.02, 0.02}, // never below the floor
		{1, time.Second, 0.02, 1},
		{0.5, -time.Second, 0.02, 0.5}, // a clock step back counts as no time
	} {
		if got := fraction(tc.f0, tc.elapsed, rec, tc.minf); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("fraction(%v, %s) = %v, want %v", tc.f0, tc.elapsed, got, tc.want)
		}
	}
}

func TestAdaptDefaultsAndFloor(t *testing.T) {
	t.Parallel()
	a := Adapt{}.withDefaults()
	if a.Decrease != 0.7 || a.Cooldown != time.Second || a.Floor != 0.02 || a.Recovery != 20*time.Second {
		t.Fatalf("defaults = %+v", a)
	}
	for _, tc := range []struct{ rate, want float64 }{
		{1000, 0.02}, // 20/s
		{2, 0.05},    // 0.1/s is more than 2% of 2/s
		{0.05, 1},    // a rate below 0.1/s is never lowered
	} {
		if got := a.minFraction(tc.rate); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("minFraction(%v) = %v, want %v", tc.rate, got, tc.want)
		}
	}
	f := 1.0
	for range 20 {
		f = a.decreased(f, a.minFraction(100))
	}
	if f != 0.02 {
		t.Errorf("20 decreases from 1 at rate 100 = %v, want the floor 0.02", f)
	}
}

func TestShare(t *testing.T) {
	t.Parallel()
	lim := Limits{Rate: 50, Burst: 10, Concurrency: 5, Quota: 1000, QuotaWindow: time.Hour}
	for _, tc := range []struct {
		n    int
		want Limits
	}{
		{1, lim},
		{3, Limits{Rate: 50.0 / 3, Burst: 4, Concurrency: 2, Quota: 334, QuotaWindow: time.Hour}},
		{10, Limits{Rate: 5, Burst: 1, Concurrency: 1, Quota: 100, QuotaWindow: time.Hour}},
		{100, Limits{Rate: 0.5, Burst: 1, Concurrency: 1, Quota: 10, QuotaWindow: time.Hour}},
	} {
		if got := lim.share(tc.n); got != tc.want {
			t.Errorf("share(%d) = %+v, want %+v", tc.n, got, tc.want)
		}
	}
	if got := (Limits{Rate: 10}).share(3); got.Burst != 1 || got.Concurrency != 0 || got.Quota != 0 {
		t.Errorf("share of a rate alone = %+v, want burst 1 and no other limit", got)
	}
}

func TestTolerance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		burst int
		T     time.Duration
		want  time.Duration
	}{
		{0, 20 * time.Millisecond, 0},
		{1, 20 * time.Millisecond, 0},
		{10, 20 * time.Millisecond, 180*time.Millisecond - 5*time.Millisecond},
		{10, 100 * time.Millisecond, 900*time.Millisecond - 5*time.Millisecond}, // the margin is at most 5ms
		{2, 4 * time.Millisecond, 3 * time.Millisecond},                         // and at most T/4
	} {
		if got := tolerance(tc.burst, tc.T); got != tc.want {
			t.Errorf("tolerance(%d, %s) = %s, want %s", tc.burst, tc.T, got, tc.want)
		}
	}
}

func TestHasHashTag(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"baton:{dev}:ds:": true, "baton:dev:ds:": false, "baton:{}:ds:": false, "baton:{dev:ds:": false, "}{x}": true,
	} {
		if got := hasHashTag(key); got != want {
			t.Errorf("hasHashTag(%q) = %v, want %v", key, got, want)
		}
	}
}
