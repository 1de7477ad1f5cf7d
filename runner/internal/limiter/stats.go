package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Outcomes of a finished call, for Record.
const (
	OutcomeOK        = "ok"
	OutcomeError     = "error"
	OutcomeThrottled = "throttled"
)

// minWait is the shortest wait Record counts as one: below it the permit's wait is the round
// trip to Redis, not a wait for a turn.
const minWait = time.Millisecond

// flushEvery is how often Record's counts go to Redis.
const flushEvery = time.Second

// Pushback records that the downstream answered 429 or 503: it lowers the effective rate for
// every caller (multiplicative decrease, at most once per Adapt.Cooldown; a pushback without
// a Retry-After only once Adapt.Evidence of them came within one cooldown) and, when
// retryAfter > 0, holds every call until now+retryAfter, cluster-wide. The rate recovers
// lazily, computed by each Acquire. While degraded it applies to this instance's share.
func (l *Limiter) Pushback(ctx context.Context, name string, lim Limits, retryAfter time.Duration) {
	if lim.validate(name) != nil {
		return
	}
	l.pushbackLocal(name, lim, retryAfter)
	if (lim.Rate == 0 && retryAfter <= 0) || !l.useRedis() {
		return
	}
	a := l.adapt
	_, _ = l.run(ctx, func(ctx context.Context) ([]int64, error) {
		return pushbackScript.Run(ctx, l.cfg.Redis, []string{l.ks.key(name, keyAdapt)},
			lim.Rate, a.Decrease, a.Cooldown.Microseconds(), a.minFraction(lim.Rate),
			a.Recovery.Microseconds(), retryAfter.Microseconds(), a.Evidence).Int64Slice()
	})
}

// counts are one downstream's calls recorded since the last flush.
type counts struct{ calls, throttled, errors, waits, waitMicros int64 }

func (c *counts) add(o counts) {
	c.calls += o.calls
	c.throttled += o.throttled
	c.errors += o.errors
	c.waits += o.waits
	c.waitMicros += o.waitMicros
}

// Record counts a finished call to name for the live figures: outcome is "ok", "error" or
// "throttled"; waited is the permit's wait. The counts go to Redis (per-second buckets that
// expire after a minute) once a second from a background goroutine, and on Close, so
// Record adds no round trip to a call.
func (l *Limiter) Record(name, outcome string, waited time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.counts[name]
	if c == nil {
		c = &counts{}
		l.counts[name] = c
	}
	c.calls++
	switch outcome {
	case OutcomeThrottled:
		c.throttled++
	case OutcomeError:
		c.errors++
	}
	if waited >= minWait {
		c.waits++
		c.waitMicros += waited.Microseconds()
	}
}

func (l *Limiter) flushLoop() {
	defer close(l.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.flush()
		case <-l.stop:
			l.flush()
			return
		}
	}
}

// flush writes the recorded counts to Redis. Counts that fail to go stay for the next flush;
// while degraded they wait for Redis to be back, so that flushing costs no timeouts.
func (l *Limiter) flush() {
	l.mu.Lock()
	pending := l.counts
	if len(pending) == 0 || l.degraded {
		l.mu.Unlock()
		return
	}
	l.counts = map[string]*counts{}
	l.mu.Unlock()
	failed := map[string]*counts{}
	for name, c := range pending {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
		err := flushScript.Run(ctx, l.cfg.Redis, []string{l.ks.key(name, keyStats)},
			c.calls, c.throttled, c.errors, c.waits, c.waitMicros).Err()
		cancel()
		if err != nil {
			failed[name] = c
		}
	}
	if len(failed) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, c := range failed {
		if cur := l.counts[name]; cur != nil {
			c.add(*cur)
		}
		l.counts[name] = c
	}
}

// State is a downstream's figures across the cluster.
type State struct {
	CallsPerSecond                  float64   // last 10 s, cluster-wide
	Calls, Throttled, Errors, Waits int64     // last 60 s
	WaitSeconds                     float64   // last 60 s
	EffectiveRate                   float64   // now; 0 when lim.Rate is 0
	BlockedUntil                    time.Time // zero when not blocked (Redis clock)
	InFlight                        int       // slots held now
	QuotaUsed                       int64     // in the current window
}

// State reads the cluster-wide figures of name under lim, in one round trip. Record's counts
// show up after their flush, within about a second.
func (l *Limiter) State(ctx context.Context, name string, lim Limits) (State, error) {
	if err := lim.validate(name); err != nil {
		return State{}, err
	}
	var win int64
	if lim.Quota > 0 {
		win = lim.QuotaWindow.Microseconds()
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	r, err := stateScript.Run(ctx, l.cfg.Redis, l.ks.all(name),
		l.adapt.minFraction(lim.Rate), l.adapt.Recovery.Microseconds(), win).Int64Slice()
	if err == nil && len(r) != 11 {
		err = errors.New("unexpected script reply")
	}
	if err != nil {
		return State{}, fmt.Errorf("read state of downstream %q: %w", name, err)
	}
	s := State{
		CallsPerSecond: float64(r[5]) / 10,
		Calls:          r[6], Throttled: r[7], Errors: r[8], Waits: r[9],
		WaitSeconds: float64(r[10]) / 1e6,
		InFlight:    int(r[1]),
		QuotaUsed:   r[4],
	}
	if lim.Rate > 0 {
		s.EffectiveRate = lim.Rate * float64(r[2]) / 1e6
	}
	if r[3] > 0 {
		s.BlockedUntil = time.UnixMicro(r[3])
	}
	return s, nil
}
