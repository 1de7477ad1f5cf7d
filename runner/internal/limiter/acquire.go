package limiter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"time"
)

// Reply codes of acquireScript.
const (
	replyOK      = 0
	replyQuota   = 1
	replyNoSlot  = 2
	replyNoTurn  = 3
	replyRevoked = 4
)

// Slot polling backoff: a few ms, doubling, capped.
const (
	pollMin = 2 * time.Millisecond
	pollMax = 25 * time.Millisecond
)

// Acquire waits until a call to downstream name may start under lim, and returns the permit
// for it. It takes a concurrency slot first (waiting for one), then the rate turn (GCRA: it
// reserves the next emission time and sleeps until it), then counts the call in the quota
// window; when the slot is free all three are one round trip.
//
// It never waits past deadline (nor ctx): when the turn or a free slot would come after
// deadline it reserves nothing and returns an error wrapping ErrNoTurn, at once or when it
// finds out. A spent quota returns *HeldError{Reason: "QUOTA"} at once, taking nothing. The
// slot is held until Release or, if the holder dies, until ctx's deadline (deadline when ctx
// has none), so a caller may bound the wait tighter than the call. A zero deadline means
// ctx's deadline, or DefaultLease from now. Zero Limits return a permit at once without
// touching Redis. Limits no downstream can have are refused with an INVALID_INPUT error.
//
// Given an Intent (at most one), the turn is for that intent's call: it leaves a marker in
// Redis that Revoke reads (turns.go). Without one, or with a zero one, it leaves none.
func (l *Limiter) Acquire(ctx context.Context, name string, lim Limits, deadline time.Time, intent ...Intent) (*Permit, error) {
	var in Intent
	if len(intent) > 0 {
		in = intent[0]
	}
	start := l.now()
	if err := lim.validate(name); err != nil {
		return nil, err
	}
	if lim.none() {
		return &Permit{}, nil
	}
	if deadline.IsZero() {
		deadline = start.Add(DefaultLease)
		if d, ok := ctx.Deadline(); ok {
			deadline = d
		}
	}
	// The slot is held until the call's context ends (its lease), which may be later than
	// the wait may last: a call that waited half its lease still holds its slot to the end.
	hold := deadline
	if d, ok := ctx.Deadline(); ok {
		if d.Before(deadline) {
			deadline = d
		}
		hold = d
	}
	if l.useRedis() {
		p, err := l.acquireRedis(ctx, name, lim, start, deadline, hold, in)
		if !errors.Is(err, errUnavailable) {
			return p, err
		}
	}
	if l.marked.has(in.ID, l.now()) {
		// Redis may say this call waits for its turn (or for its granted turn's wait): a turn
		// from the local share would let the recoverer take a call made for one never made.
		return nil, fmt.Errorf("downstream %q: its turn was asked of Redis, which is unavailable: %w", name, ErrNoTurn)
	}
	return l.acquireLocal(ctx, name, lim, start, deadline, hold)
}

// errUnavailable marks a failed Redis operation; the caller falls back to the local share.
var errUnavailable = errors.New("redis unavailable")

// noTurn wraps ErrNoTurn with the downstream and the wait it would have needed.
func noTurn(name string, wait time.Duration) error {
	return fmt.Errorf("downstream %q: turn in %s: %w", name, wait.Round(time.Millisecond), ErrNoTurn)
}

// acquireRedis runs acquireScript until it grants or refuses, polling while no slot is free.
func (l *Limiter) acquireRedis(ctx context.Context, name string, lim Limits, start, deadline, hold time.Time, in Intent) (*Permit, error) {
	keys := l.ks.all(name)[:4]
	if in.ID != "" {
		keys = append(keys, l.ks.turn(in.ID))
	}
	member := l.newMember()
	poll := pollMin
	answered := false // Redis has answered this Acquire once: later polls mark the intent waiting
	for {
		maxWait := deadline.Sub(l.now())
		if maxWait < 0 {
			return nil, noTurn(name, -maxWait)
		}
		own := 0
		if lim.Concurrency > 0 {
			own = l.ownHeld(name)
		}
		args := []any{member, lim.Concurrency, lim.Rate, lim.burst(), lim.Quota, lim.QuotaWindow.Microseconds(),
			maxWait.Microseconds(), max(hold.Sub(l.now()), maxWait).Microseconds(), l.adapt.minFraction(lim.Rate), l.adapt.Recovery.Microseconds(), own}
		ttl := markTTL(hold.Sub(l.now()))
		if in.ID != "" {
			mark := 0
			if answered {
				mark = 1
				l.marked.waiting(in.ID, ttl, l.now()) // before the script runs: its reply may be lost
			}
			args = append(args, mark, in.Note, ttl.Milliseconds())
		}
		reply, err := l.run(ctx, func(ctx context.Context) ([]int64, error) {
			return acquireScript.Run(ctx, l.cfg.Redis, keys, args...).Int64Slice()
		})
		if err != nil {
			return nil, askFailed(l, name, in, answered, ttl, err)
		}
		answered = true
		switch reply[0] {
		case replyOK:
			wait := time.Duration(reply[1]) * time.Microsecond
			if err := sleep(ctx, wait); err != nil {
				l.undo(name, member, lim.Concurrency > 0, reply[3])
				return nil, err
			}
			if in.ID != "" && wait > 0 {
				l.marked.waiting(in.ID, ttl, l.now()) // "r" until taken: no turn from the local share
				if err := takeTurn(ctx, l, name, in, ttl); err != nil {
					l.undo(name, member, lim.Concurrency > 0, reply[3])
					return nil, err
				}
			}
			p := &Permit{Waited: l.now().Sub(start), l: l, name: name}
			if lim.Concurrency > 0 {
				p.member = member
				p.slot, p.hold = l.holdLocal(name, hold)
			}
			return p, nil
		case replyQuota:
			return nil, &HeldError{Reason: "QUOTA", Until: time.UnixMicro(reply[1]), For: time.Duration(reply[2]) * time.Microsecond}
		case replyNoTurn:
			return nil, noTurn(name, time.Duration(reply[1])*time.Microsecond)
		case replyRevoked:
			return nil, fmt.Errorf("downstream %q: the recoverer settled this call as not made: %w", name, ErrNoTurn)
		}
		// No free slot: poll again shortly, never past the deadline, or at once when a call
		// of this instance frees a slot.
		d := min(poll/2+rand.N(poll/2+1), deadline.Sub(l.now())+time.Millisecond)
		if err := l.pollWait(ctx, name, d); err != nil {
			return nil, err
		}
		poll = min(poll*2, pollMax)
	}
}

// askFailed returns the error of an ask of acquireScript for in that failed with err. It
// wraps errUnavailable (the caller falls back to the local share) only when Redis cannot hold
// in as waiting or granted with a wait, which a turn from the local share would contradict;
// otherwise it wraps ErrNoTurn (and ErrTurnLeft when the lost reply may have granted it).
func askFailed(l *Limiter, name string, in Intent, answered bool, ttl time.Duration, err error) error {
	if in.ID == "" {
		return err
	}
	if !answered && !neverSent(err) {
		// The script may have run and granted the turn with a wait ("r"), its reply lost.
		l.marked.waiting(in.ID, ttl, l.now())
		if errors.Is(err, errUnavailable) {
			return fmt.Errorf("downstream %q: %w, %w: %v", name, ErrNoTurn, ErrTurnLeft, err)
		}
	}
	if l.marked.has(in.ID, l.now()) && errors.Is(err, errUnavailable) {
		// Redis may hold this intent waiting: no turn from the local share for it.
		return fmt.Errorf("downstream %q: %w: %v", name, ErrNoTurn, err)
	}
	return err
}

// pollWait waits d, or until a call of this instance to name releases its slot (one waiter
// wakes per release), or until ctx ends.
func (l *Limiter) pollWait(ctx context.Context, name string, d time.Duration) error {
	l.mu.Lock()
	kick := l.local.of(name).kick
	l.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-kick:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run does one Redis operation under the configured timeout. A failure marks the limiter
// degraded and returns an error wrapping errUnavailable; success clears degraded mode. When
// ctx itself ends, run returns ctx's error and judges nothing.
func (l *Limiter) run(ctx context.Context, op func(context.Context) ([]int64, error)) ([]int64, error) {
	opCtx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	reply, err := op(opCtx)
	if err == nil && len(reply) == 0 {
		err = errors.New("empty script reply")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		l.redisFailed(err)
		return nil, fmt.Errorf("downstream limits: %w: %w", errUnavailable, err)
	}
	l.redisWorked()
	return reply, nil
}

// undo gives back the slot and quota count of a reservation whose call will not start.
func (l *Limiter) undo(name, member string, slot bool, window int64) {
	if !slot {
		member = ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	_ = undoScript.Run(ctx, l.cfg.Redis, []string{l.ks.key(name, keySlots), l.ks.key(name, keyQuota)},
		member, strconv.FormatInt(window, 10)).Err()
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// neverSent reports whether err is a failure to reach Redis at all (no connection could be
// made), so that no script ran.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
