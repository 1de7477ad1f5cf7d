// Package limiter holds calls to outside systems ("downstreams") to limits that apply across
// every instance of the cluster: a rate (GCRA), a number of calls in flight (leased slots) and
// a quota per hour or day, all kept in Redis by Lua scripts on the Redis server's clock, so the
// instances' own clocks do not matter.
//
// The limiter knows nothing of runs or the database: the caller passes the limits of a
// downstream on every call and says how many instances are live. A downstream that answers
// 429 or 503 is slowed for every caller (Pushback): its effective rate drops multiplicatively
// and climbs back lazily, computed by each reservation from the time of the last decrease.
//
// A call takes its concurrency slot first and its rate turn with it, in one script: calls
// waiting for slots that free together still start at the rate. When the slot is free,
// Acquire is one round trip and Release another.
//
// When Redis fails or times out, the limiter is degraded: each instance holds its calls to its
// local share of each limit (the limit divided by the live instances, rounded up) and tries
// Redis again at most once a second. The local share counts the calls of the instance that
// already hold Redis slots and its bucket starts empty; once Redis is back, the calls still
// holding local slots count against the cluster's concurrency until they end. (The second
// after Redis comes back may see the local shares' last calls on top of the cluster's burst.)
//
// Every key of a downstream starts with Config.Prefix and the name, e.g.
// "baton:{dev}:ds:provider:slots". The prefix's hash tag keeps them on one cluster slot, which
// the scripts rely on: the per-second statistics buckets are named inside the scripts from the
// key they are given.
package limiter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	bt "github.com/baton-run/baton/runner/batontype"
)

// DefaultTimeout bounds each Redis operation when Config.Timeout is 0.
const DefaultTimeout = 250 * time.Millisecond

// DefaultLease is how long a concurrency slot is held, if its holder dies, when Acquire is
// given neither a deadline nor a context with one.
const DefaultLease = time.Minute

// retryEvery is how often a degraded limiter tries Redis again.
const retryEvery = time.Second

// ErrNoTurn reports that a call's turn (or a free slot) would come only after its deadline.
// Acquire reserved nothing for it.
var ErrNoTurn = errors.New("no turn before the deadline")

// ErrTurnLeft reports, with ErrNoTurn, a call not made whose intent Redis may still hold as
// waiting or granted with a wait, which Revoke would take for a call never made: the call
// must not be made under that intent, from the local share either, but under a new one.
var ErrTurnLeft = errors.New("its turn may be left in Redis")

// HeldError reports that calls to a downstream are held until Until: Reason "QUOTA" means its
// quota for the current window is spent, and Until is the window's end (Redis clock). For is
// how long from now that is, by the same clock: a caller waits For on its own monotonic clock
// and never compares its clock with Until (invariant 3, one clock per decision).
type HeldError struct {
	Reason string
	Until  time.Time
	For    time.Duration
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("downstream held (%s) until %s", e.Reason, e.Until.UTC().Format(time.RFC3339))
}

// Limits are the limits of one downstream; a zero field sets no limit of that kind.
type Limits struct {
	Rate        float64       // calls per second; 0 = no rate limit
	Burst       int           // calls at once above the rate (>=1 when Rate > 0; 0 means 1)
	Concurrency int           // calls in flight; 0 = none
	Quota       int64         // calls per QuotaWindow; 0 = none
	QuotaWindow time.Duration // time.Hour or 24*time.Hour; windows aligned to UTC epoch on the Redis clock
}

// none reports whether lim limits nothing.
func (lim Limits) none() bool { return lim.Rate == 0 && lim.Concurrency == 0 && lim.Quota == 0 }

func (lim Limits) burst() int {
	if lim.Burst < 1 {
		return 1
	}
	return lim.Burst
}

// validate refuses limits no downstream can have; the caller's store should never hand them in.
func (lim Limits) validate(name string) error {
	bad := func(field, format string, args ...any) error {
		return &bt.Error{Code: bt.CodeInvalidInput, Field: field,
			Message: fmt.Sprintf("downstream %q: ", name) + fmt.Sprintf(format, args...)}
	}
	switch {
	case name == "":
		return bad("name", "a downstream needs a name")
	case math.IsNaN(lim.Rate) || math.IsInf(lim.Rate, 0) || lim.Rate < 0:
		return bad("rate", "rate %v is not a number of calls per second >= 0", lim.Rate)
	case lim.Burst < 0:
		return bad("burst", "burst %d is negative", lim.Burst)
	case lim.Concurrency < 0:
		return bad("concurrency", "concurrency %d is negative", lim.Concurrency)
	case lim.Quota < 0:
		return bad("quota", "quota %d is negative", lim.Quota)
	case lim.Quota > 0 && lim.QuotaWindow < time.Second:
		return bad("quotaWindow", "quota window %s is not a window of at least 1s", lim.QuotaWindow)
	}
	return nil
}

// share returns the local share of lim for one of n live instances: each limit divided by n,
// rounded up, at least 1.
func (lim Limits) share(n int) Limits {
	if n <= 1 {
		return lim
	}
	ceil := func(v int64) int64 { return (v + int64(n) - 1) / int64(n) }
	s := lim
	s.Rate = lim.Rate / float64(n)
	if lim.Rate > 0 {
		s.Burst = int(ceil(int64(lim.burst())))
	}
	s.Concurrency = int(ceil(int64(lim.Concurrency)))
	s.Quota = ceil(lim.Quota)
	return s
}

// Config configures a Limiter.
type Config struct {
	// Redis holds the shared state. Give it ContextTimeoutEnabled, so that Timeout bounds
	// every operation even when Redis stalls.
	Redis    redis.UniversalClient
	Prefix   string        // key prefix, e.g. "baton:{dev}:ds:"; its hash tag keeps a cluster on one slot
	Instance string        // names this process in slot holders (a random token is added to it)
	Timeout  time.Duration // per Redis operation; 0 means 250ms. A failure or timeout means degraded
	// Share returns the live instances in the cluster, for the local share; nil or <1 means 1.
	Share func() int
	// Now is the local clock for the fallback and the deadlines; nil means time.Now.
	Now   func() time.Time
	Adapt Adapt        // zero fields take defaults
	Log   *slog.Logger // nil means slog.Default()
	// Waited, if set, is called with an intent's id when the wait its turn was granted with is
	// over, before the turn is taken (takeTurn); tests stall a holder there.
	Waited func(id string)
}

// Limiter holds calls to downstreams to their limits. Its methods are safe for concurrent use.
type Limiter struct {
	cfg   Config
	now   func() time.Time // cfg.Now
	ks    keyspace
	adapt Adapt
	log   *slog.Logger
	seq   atomic.Uint64

	mu       sync.Mutex
	degraded bool
	since    time.Time // when degraded began
	lastTry  time.Time // the latest Redis attempt while degraded
	episode  int       // counts entries into degraded mode
	local    locals
	counts   map[string]*counts

	marked turnMarks // intents whose turn marker may say "waiting" (turns.go)

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// New returns a Limiter on cfg.Redis. It starts a goroutine that flushes Record's counts once a
// second; Close stops it.
func New(cfg Config) *Limiter {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	token := make([]byte, 4)
	_, _ = rand.Read(token)
	cfg.Instance += ":" + hex.EncodeToString(token) // two processes never share a holder name
	l := &Limiter{
		cfg:    cfg,
		now:    cfg.Now,
		ks:     keyspace(cfg.Prefix),
		adapt:  cfg.Adapt.withDefaults(),
		log:    cfg.Log,
		local:  locals{},
		counts: map[string]*counts{},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if _, cluster := cfg.Redis.(*redis.ClusterClient); cluster && !hasHashTag(cfg.Prefix) {
		l.log.Warn("downstream limits: the key prefix has no hash tag, so a downstream's keys fall on "+
			"different cluster slots and its scripts fail (limits hold per instance only)", "prefix", cfg.Prefix)
	}
	go l.flushLoop()
	return l
}

// Close flushes the counts Record has not yet written and stops the background goroutine.
// Permits taken before stay valid.
func (l *Limiter) Close() {
	l.closeOnce.Do(func() {
		close(l.stop)
		<-l.done
	})
}

func (l *Limiter) shareOf() int {
	if l.cfg.Share == nil {
		return 1
	}
	if n := l.cfg.Share(); n > 1 {
		return n
	}
	return 1
}

// Permit is a call's leave to start. Release it when the call ends.
type Permit struct {
	Waited   time.Duration // how long Acquire waited in all
	Degraded bool          // the permit came from the local share (Redis unreachable)

	l        *Limiter
	name     string
	member   string      // the slot held in Redis, if any
	slot     *localLimit // counts the call in this instance's calls in flight, if it holds a slot
	hold     uint64      // its entry there
	released atomic.Bool
}

// Release gives the concurrency slot back. It is idempotent and safe on a nil Permit. A slot
// whose release does not reach Redis comes back at its expiry; while degraded, Release does
// not try, so that it never waits for the timeout.
func (p *Permit) Release() {
	if p == nil || p.l == nil || !p.released.CompareAndSwap(false, true) {
		return
	}
	if down, _ := p.l.Degraded(); p.member != "" && !down {
		ctx, cancel := context.WithTimeout(context.Background(), p.l.cfg.Timeout)
		_ = p.l.cfg.Redis.ZRem(ctx, p.l.ks.key(p.name, keySlots), p.member).Err()
		cancel()
	}
	if p.slot != nil {
		p.l.releaseLocal(p.slot, p.hold) // after the ZREM: it wakes a waiter of this instance
	}
}

// Degraded reports whether the latest Redis operation failed, so that the limiter holds calls
// to its local share, and since when.
func (l *Limiter) Degraded() (bool, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.degraded, l.since
}

// useRedis reports whether the next operation should go to Redis: always when healthy, once
// a second when degraded (so calls do not each pay the timeout).
func (l *Limiter) useRedis() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.degraded {
		return true
	}
	now := l.now()
	if now.Sub(l.lastTry) < retryEvery {
		return false
	}
	l.lastTry = now
	return true
}

// Probe checks that Redis answers (one PING under the timeout), entering or leaving degraded
// mode as a call would. An instance that makes no calls learns of an outage, and of its end,
// only this way: the runner probes at every heartbeat.
func (l *Limiter) Probe(ctx context.Context) {
	_, _ = l.run(ctx, func(ctx context.Context) ([]int64, error) {
		if err := l.cfg.Redis.Ping(ctx).Err(); err != nil {
			return nil, err
		}
		return []int64{1}, nil
	})
}

// redisFailed marks the limiter degraded after err, logging on entry.
func (l *Limiter) redisFailed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.lastTry = now
	if l.degraded {
		return
	}
	l.degraded, l.since = true, now
	l.episode++
	l.log.Warn("downstream limits: Redis unreachable, holding calls to this instance's share",
		"err", err, "instances", l.shareOf())
}

// redisWorked clears degraded mode, logging on exit.
func (l *Limiter) redisWorked() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.degraded {
		return
	}
	l.degraded = false
	l.log.Info("downstream limits: Redis reachable again, limits hold cluster-wide",
		"degraded_for", l.now().Sub(l.since).Round(time.Millisecond))
}

// newMember names one slot holder: the instance, its token and a sequence number.
func (l *Limiter) newMember() string {
	return l.cfg.Instance + ":" + strconv.FormatUint(l.seq.Add(1), 36)
}

// hasHashTag reports whether key has a Redis Cluster hash tag: a non-empty "{...}".
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	end := strings.IndexByte(key[open+1:], '}')
	return end > 0
}
