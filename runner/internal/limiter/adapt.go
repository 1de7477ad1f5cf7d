package limiter

import (
	"math"
	"time"
)

// Adapt tunes the reaction to pushback (AIMD-like).
type Adapt struct {
	Decrease float64       // multiply the effective rate by this on a pushback; default 0.7
	Cooldown time.Duration // at most one decrease per cooldown, so a flurry of 429s counts once; default 1s
	Floor    float64       // the effective rate never drops below Floor × Rate (and never below 0.1/s); default 0.02
	// Recovery is the time from a decrease until the rate climbs back to Rate if no pushback
	// comes; default 20s. The climb is quadratic in the time since the decrease: slow at
	// first and faster later, so the rate settles just under a provider's true limit.
	Recovery time.Duration
	// Evidence is how many pushbacks without a Retry-After must come within one Cooldown
	// before the rate is lowered; default 3. One with a Retry-After lowers it at once. A
	// provider failing 1 % of 60 calls/s at random sends 3 in a second about once a minute,
	// so sporadic errors do not drive the rate to its floor; a provider past its limit sends
	// them by the dozen.
	Evidence int
}

// Adapt defaults.
const (
	DefaultDecrease = 0.7
	DefaultCooldown = time.Second
	DefaultFloor    = 0.02
	DefaultRecovery = 20 * time.Second
	DefaultEvidence = 3
)

// minRate is the effective rate no pushback goes below, in calls per second.
const minRate = 0.1

func (a Adapt) withDefaults() Adapt {
	if a.Decrease <= 0 || a.Decrease >= 1 {
		a.Decrease = DefaultDecrease
	}
	if a.Cooldown <= 0 {
		a.Cooldown = DefaultCooldown
	}
	if a.Floor <= 0 || a.Floor > 1 {
		a.Floor = DefaultFloor
	}
	if a.Recovery <= 0 {
		a.Recovery = DefaultRecovery
	}
	if a.Evidence <= 0 {
		a.Evidence = DefaultEvidence
	}
	return a
}

// minFraction is the lowest share of rate the effective rate may drop to.
func (a Adapt) minFraction(rate float64) float64 {
	f := a.Floor
	if rate > 0 && minRate/rate > f {
		f = minRate / rate
	}
	return math.Min(f, 1)
}

// fraction returns the share of the configured rate in effect elapsed after a decrease to
// f0: f0 + (1−f0)·(elapsed/recovery)², reaching 1 at recovery, never below minf. The scripts
// compute the same on the Redis clock.
func fraction(f0 float64, elapsed, recovery time.Duration, minf float64) float64 {
	if f0 >= 1 || elapsed >= recovery || recovery <= 0 {
		return 1
	}
	if elapsed < 0 {
		elapsed = 0
	}
	x := float64(elapsed) / float64(recovery)
	f := f0 + (1-f0)*x*x
	return math.Max(f, minf)
}

// decreased returns the fraction after a pushback when the current fraction is f.
func (a Adapt) decreased(f, minf float64) float64 {
	return math.Max(f*a.Decrease, minf)
}

// tolerance is the GCRA burst tolerance (burst−1)·T less a margin of T/4, at most 5ms, as the
// acquire script computes it: the burst's last call comes that much later, so the worst 1 s
// window holds one call less than rate + burst on exact timing, and a call's delivery jitter
// cannot push it over.
func tolerance(burst int, T time.Duration) time.Duration {
	if burst <= 1 {
		return 0
	}
	return time.Duration(burst-1)*T - min(T/4, 5*time.Millisecond)
}
