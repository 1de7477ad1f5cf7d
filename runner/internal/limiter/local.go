package limiter

import (
	"context"
	"time"
)

// localLimit is one downstream's limits on this instance alone, used while degraded. The
// Limiter's mutex guards it.
type localLimit struct {
	episode int                 // the degraded episode tat belongs to
	tat     time.Time           // GCRA theoretical arrival time
	holds   map[uint64]slotHold // this instance's calls holding a slot, from Redis or the local share
	ownHeld int                 // how many of them took their slot from the local share
	freed   chan struct{}       // closed (and replaced) when a slot of this instance frees
	kick    chan struct{}       // takes a token when a slot of this instance frees, for one Redis poller
	qWindow int64               // quota window start, µs since the epoch
	qCount  int64               // calls counted in it
	f0      float64             // rate fraction after the latest decrease
	d       time.Time           // time of the latest decrease; zero = none
	blocked time.Time           // calls held until then
	n       int                 // pushbacks in the window from nw (Adapt.Evidence)
	nw      time.Time
}

// locals holds the local limits of each downstream.
type locals map[string]*localLimit

// of returns name's local limits, made on first use. The Limiter's mutex must be held.
func (m locals) of(name string) *localLimit {
	ll := m[name]
	if ll == nil {
		ll = &localLimit{holds: map[uint64]slotHold{}, freed: make(chan struct{}), kick: make(chan struct{}, 1)}
		m[name] = ll
	}
	return ll
}

// fraction returns the rate fraction in effect at now.
func (ll *localLimit) fraction(now time.Time, a Adapt, minf float64) float64 {
	if ll.d.IsZero() {
		return 1
	}
	return fraction(ll.f0, now.Sub(ll.d), a.Recovery, minf)
}

// slotHold is one call of this instance holding a slot.
type slotHold struct {
	expiry time.Time
	own    bool // from the local share, unknown to Redis
}

// prune drops the holds past their expiry, as Redis does (their holder dropped the permit),
// and returns the earliest expiry left.
func (ll *localLimit) prune(now time.Time) (next time.Time) {
	for id, h := range ll.holds {
		if !h.expiry.After(now) {
			ll.drop(id)
		} else if next.IsZero() || h.expiry.Before(next) {
			next = h.expiry
		}
	}
	return next
}

func (ll *localLimit) drop(id uint64) {
	if h, ok := ll.holds[id]; ok {
		delete(ll.holds, id)
		if h.own {
			ll.ownHeld--
		}
	}
}

// freeSlot reports whether fewer than limit calls hold a slot at now; when none is free,
// next is the earliest expiry.
func (ll *localLimit) freeSlot(now time.Time, limit int) (ok bool, next time.Time) {
	if len(ll.holds) < limit {
		return true, time.Time{}
	}
	next = ll.prune(now)
	return len(ll.holds) < limit, next
}

// localGrant is what reserve took for one call.
type localGrant struct {
	code   int           // replyOK, replyQuota, replyNoSlot or replyNoTurn
	wait   time.Duration // until the turn (replyOK), or the turn past the deadline (replyNoTurn)
	until  time.Time     // the quota window's end (replyQuota), or the next slot expiry (replyNoSlot)
	hold   uint64        // the local slot taken, 0 = none
	window int64         // the quota window counted, 0 = none
}

// reserve is acquireScript on the local clock and the local share sh of lim. It reserves
// nothing unless it grants. l.mu must be held.
func (l *Limiter) reserve(ll *localLimit, now time.Time, lim, sh Limits, deadline, hold time.Time) localGrant {
	var win int64
	if sh.Quota > 0 {
		size := sh.QuotaWindow.Microseconds()
		win = now.UnixMicro() / size * size
		if ll.qWindow == win && ll.qCount >= sh.Quota {
			return localGrant{code: replyQuota, until: time.UnixMicro(win + size)}
		}
	}
	if sh.Concurrency > 0 {
		if ok, next := ll.freeSlot(now, sh.Concurrency); !ok {
			return localGrant{code: replyNoSlot, until: next}
		}
	}
	var wait time.Duration
	maxWait := deadline.Sub(now)
	if sh.Rate > 0 {
		eff := sh.Rate * ll.fraction(now, l.adapt, l.adapt.minFraction(lim.Rate))
		T := time.Duration(float64(time.Second) / eff)
		tau := tolerance(sh.burst(), T)
		if ll.episode != l.episode {
			// A fresh local bucket starts empty: the cluster may have spent the burst
			// just before Redis went away.
			ll.episode, ll.tat = l.episode, now.Add(tau)
		}
		tat := later(ll.tat, now)
		if ll.blocked.After(now) {
			tat = later(tat, ll.blocked.Add(tau))
		}
		if wait = tat.Add(-tau).Sub(now); wait > maxWait {
			return localGrant{code: replyNoTurn, wait: wait}
		}
		ll.tat = tat.Add(T)
	} else if ll.blocked.After(now) {
		if wait = ll.blocked.Sub(now); wait > maxWait {
			return localGrant{code: replyNoTurn, wait: wait}
		}
	}
	g := localGrant{code: replyOK, wait: max(wait, 0)}
	if sh.Concurrency > 0 {
		g.hold = l.seq.Add(1)
		ll.holds[g.hold] = slotHold{expiry: hold, own: true}
		ll.ownHeld++
	}
	if sh.Quota > 0 {
		if ll.qWindow != win {
			ll.qWindow, ll.qCount = win, 0
		}
		ll.qCount++
		g.window = win
	}
	return g
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// acquireLocal is Acquire on this instance's share of lim.
func (l *Limiter) acquireLocal(ctx context.Context, name string, lim Limits, start, deadline, hold time.Time) (*Permit, error) {
	sh := lim.share(l.shareOf())
	for {
		l.mu.Lock()
		ll := l.local.of(name)
		now := l.now()
		g := l.reserve(ll, now, lim, sh, deadline, hold)
		freed := ll.freed
		l.mu.Unlock()
		switch g.code {
		case replyOK:
			if err := sleep(ctx, g.wait); err != nil {
				l.undoLocal(ll, g)
				return nil, err
			}
			p := &Permit{Waited: l.now().Sub(start), Degraded: true, l: l, name: name}
			if g.hold != 0 {
				p.slot, p.hold = ll, g.hold
			}
			return p, nil
		case replyQuota:
			return nil, &HeldError{Reason: "QUOTA", Until: g.until, For: g.until.Sub(now)}
		case replyNoTurn:
			return nil, noTurn(name, g.wait)
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return nil, noTurn(name, 0)
		}
		if !g.until.IsZero() && g.until.Sub(now) < left {
			left = max(g.until.Sub(now), time.Millisecond)
		}
		t := time.NewTimer(left)
		select {
		case <-freed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// undoLocal gives back what reserve took for a call that did not start.
func (l *Limiter) undoLocal(ll *localLimit, g localGrant) {
	if g.hold != 0 {
		l.releaseLocal(ll, g.hold)
	}
	if g.window != 0 {
		l.mu.Lock()
		if ll.qWindow == g.window && ll.qCount > 0 {
			ll.qCount--
		}
		l.mu.Unlock()
	}
}

// holdLocal counts a call holding a Redis slot until expiry in this instance's calls in
// flight, so that the local share, should Redis go away, counts the calls already running.
func (l *Limiter) holdLocal(name string, expiry time.Time) (*localLimit, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ll := l.local.of(name)
	id := l.seq.Add(1)
	ll.holds[id] = slotHold{expiry: expiry}
	return ll, id
}

// ownHeld returns how many calls of this instance to name hold slots taken from the local
// share while degraded: Redis does not count them, so the acquire script adds them.
func (l *Limiter) ownHeld(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	ll := l.local.of(name)
	if ll.ownHeld > 0 {
		ll.prune(l.now())
	}
	return ll.ownHeld
}

// releaseLocal frees this instance's slot id and wakes its waiters.
func (l *Limiter) releaseLocal(ll *localLimit, id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ll.drop(id)
	close(ll.freed)
	ll.freed = make(chan struct{})
	select {
	case ll.kick <- struct{}{}:
	default:
	}
}

// pushbackLocal is Pushback on the local limits.
func (l *Limiter) pushbackLocal(name string, lim Limits, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ll := l.local.of(name)
	now := l.now()
	if now.Sub(ll.nw) >= l.adapt.Cooldown {
		ll.n, ll.nw = 0, now
	}
	ll.n++
	if lim.Rate > 0 && (ll.d.IsZero() || now.Sub(ll.d) >= l.adapt.Cooldown) && (retryAfter > 0 || ll.n >= l.adapt.Evidence) {
		minf := l.adapt.minFraction(lim.Rate)
		ll.f0, ll.d = l.adapt.decreased(ll.fraction(now, l.adapt, minf), minf), now
	}
	if retryAfter > 0 {
		ll.blocked = later(ll.blocked, now.Add(retryAfter))
	}
}
