package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/limiter"
	"github.com/baton-run/baton/runner/internal/pipeline"
	"github.com/baton-run/baton/runner/store"
)

// How the downstream limits reach every instance (docs/adr/0018-downstream-limits.md): the
// instance that changes a downstream publishes its name on Redis, and every instance reads the
// downstreams table when it hears it, so a change applies cluster-wide within a second. Each
// instance also reads the table at every poll (Config.PollInterval), for a change published
// while Redis was away, and beats its row in runner_instances at the same pace; an instance
// that has not beaten for three beats is not counted in the local share. An idle instance so
// adds no database transaction but its beat.
const (
	dsMinBeat = time.Second
	dsChannel = "ds:changed"
)

// downstreams is the runner's side of the downstream limits: the limits as the database
// holds them, cached; the Redis limiter that enforces them; the live instances for the local
// share; and the metrics. It implements pipeline.Downstreams.
type downstreams struct {
	store    store.Downstreams
	rdb      redis.UniversalClient
	channel  string        // where changes are announced
	every    time.Duration // the safety poll and the heartbeat
	lim      *limiter.Limiter
	log      *slog.Logger
	instance string
	m        dsMetrics

	limits   atomic.Pointer[map[string]bt.DownstreamState]
	live     atomic.Int64
	mark     atomic.Int64 // the limits' mark at the last beat (store.Beat.Limits)
	mu       sync.Mutex
	quotaEnd map[string]quotaHold // a spent quota holds calls until its window ends
	degraded []string             // the instances on their local share, at the last beat
	noted    sync.Map             // names of undeclared downstreams this instance has recorded

	// jobsFunc lists the jobs this instance runs, and pendingFunc is told when the beat finds
	// a shard of one of them waiting for a slot (the claimer's safety net; nil: not asked).
	jobsFunc    func() []string
	pendingFunc func()

	// acquireFault, when set (tests), fails Acquire with its error before the limiter is asked.
	acquireFault atomic.Pointer[func(name string) error]
	// clock is this instance's clock (time.Now; tests skew it), by which a quota hold, its
	// length computed on the Redis clock, is waited out.
	clock atomic.Pointer[func() time.Time]
	// waited, when set (tests), is called when a call's turn granted with a wait is about to
	// be taken (limiter.Config.Waited).
	waited atomic.Pointer[func(id string)]
}

// now reads the instance's clock.
func (d *downstreams) now() time.Time {
	if c := d.clock.Load(); c != nil {
		return (*c)()
	}
	return time.Now()
}

func newDownstreams(cfg Config, st store.Downstreams, log *slog.Logger) (*downstreams, error) {
	d := &downstreams{store: st, rdb: cfg.Redis, channel: "baton:{" + cfg.Env + "}:" + dsChannel,
		every: max(cfg.PollInterval, dsMinBeat), log: log, instance: cfg.Instance, quotaEnd: map[string]quotaHold{}}
	d.live.Store(1)
	empty := map[string]bt.DownstreamState{}
	d.limits.Store(&empty)
	d.lim = limiter.New(limiter.Config{Redis: cfg.Redis, Prefix: "baton:{" + cfg.Env + "}:ds:", Instance: cfg.Instance,
		Share: func() int { return int(d.live.Load()) },
		Waited: func(id string) {
			if f := d.waited.Load(); f != nil {
				(*f)(id)
			}
		}})
	m, err := newDSMetrics(cfg.Registerer)
	d.m = m
	return d, err
}

// declare records the jobs' downstreams and loads the limits.
func (d *downstreams) declare(ctx context.Context, ds []bt.Downstream) error {
	if len(ds) > 0 {
		if err := d.store.DeclareDownstreams(ctx, ds); err != nil {
			return err
		}
	}
	return d.refresh(ctx)
}

// refresh loads the limits from the database.
func (d *downstreams) refresh(ctx context.Context) error {
	rows, err := d.store.Downstreams(ctx)
	if err != nil {
		return err
	}
	next := make(map[string]bt.DownstreamState, len(rows))
	for _, r := range rows {
		next[r.Name] = r
		d.m.setLimits(r.Name, r.Limits)
	}
	d.limits.Store(&next)
	return nil
}

// serve keeps the limits and the instance's heartbeat fresh until ctx ends.
func (d *downstreams) serve(ctx context.Context) {
	sub := d.rdb.Subscribe(ctx, d.channel) // go-redis resubscribes by itself after an outage
	defer sub.Close()
	changed := sub.Channel()
	tick := time.NewTicker(d.every)
	defer tick.Stop()
	d.beat(ctx)
	for {
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = d.store.LeaveInstance(lctx, d.instance)
			cancel()
			d.lim.Close()
			return
		case <-changed:
			d.reload(ctx)
		case <-tick.C:
			d.beat(ctx) // and reloads the limits if they changed unheard
		}
	}
}

func (d *downstreams) reload(ctx context.Context) {
	if err := d.refresh(ctx); err != nil && ctx.Err() == nil {
		d.log.Warn("read downstream limits failed; the last ones read still apply", "err", err)
	}
}

// announce tells every instance that downstream name changed. A lost announcement (Redis
// away) is made up by the next poll.
func (d *downstreams) announce(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := d.rdb.Publish(ctx, d.channel, name).Err(); err != nil {
		d.log.Warn("announce a downstream change failed; the other instances apply it at their next poll", "downstream", name, "err", err)
	}
}

func (d *downstreams) beat(ctx context.Context) {
	d.lim.Probe(ctx) // an instance making no calls learns of a Redis outage, and its end, here
	var since *time.Time
	if on, at := d.lim.Degraded(); on {
		since = &at
	}
	var jobs []string
	if d.jobsFunc != nil {
		jobs = d.jobsFunc()
	}
	b, err := d.store.BeatInstance(ctx, d.instance, since, 3*d.every+time.Second, jobs)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("instance heartbeat failed; the local share keeps its last divisor", "err", err)
		}
		return
	}
	d.live.Store(int64(max(b.Live, 1)))
	if b.ShardsPending && d.pendingFunc != nil {
		d.pendingFunc()
	}
	d.mu.Lock()
	d.degraded = b.Degraded
	d.mu.Unlock()
	if b.Limits != d.mark.Swap(b.Limits) {
		d.reload(ctx)
	}
}

// degradedInstances returns the instances that limited on their local share at the last beat.
func (d *downstreams) degradedInstances() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.degraded...)
}

func (d *downstreams) get(name string) (bt.DownstreamState, bool) {
	s, ok := (*d.limits.Load())[name]
	return s, ok
}

// Held says why calls to name wait at the boundary: paused, or its quota spent.
func (d *downstreams) Held(name string) string {
	s, ok := d.get(name)
	if ok && s.Limits.Paused {
		return "PAUSED"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if h, spent := d.quotaEnd[name]; spent {
		if d.now().Before(h.until) && h.version == s.Version {
			return "QUOTA"
		}
		delete(d.quotaEnd, name) // the window ended, or the limits changed: try again
	}
	return ""
}

// quotaHold is a spent quota: calls wait until its window ends, unless the limits change.
// until is on this instance's clock: now, plus how long the window has left by Redis's.
type quotaHold struct {
	until   time.Time
	version int64
}

// Acquire waits for a call to name to take its turn under the cluster-wide limits. The grant
// is recorded for intent (limiter.Acquire), for the recoverer (notCalled).
func (d *downstreams) Acquire(ctx context.Context, name string, intent pipeline.TurnIntent, deadline time.Time) (pipeline.Turn, error) {
	s, ok := d.get(name)
	if ok && s.Limits.Paused {
		return nil, fmt.Errorf("%w: the downstream is paused", pipeline.ErrWaiting)
	}
	if !ok {
		d.note(name)
	}
	lim := limitsOf(s.Limits)
	var p *limiter.Permit
	var err error
	if fault := d.acquireFault.Load(); fault != nil {
		err = (*fault)(name)
	}
	if err == nil {
		p, err = d.lim.Acquire(ctx, name, lim, deadline, limiter.Intent{ID: intent.ID, Note: string(intent.NotCalled)})
	}
	if err != nil {
		var held *limiter.HeldError
		if errors.As(err, &held) {
			d.mu.Lock()
			// Until is on the Redis clock; For, its distance from now on that clock, is
			// what this instance waits, on its own.
			d.quotaEnd[name] = quotaHold{until: d.now().Add(held.For), version: s.Version}
			d.mu.Unlock()
		}
		if held != nil || errors.Is(err, limiter.ErrNoTurn) {
			err = fmt.Errorf("%w: %w", pipeline.ErrWaiting, err) // its turn comes later
		}
		if errors.Is(err, limiter.ErrTurnLeft) {
			err = fmt.Errorf("%w: %w", pipeline.ErrFreshIntent, err)
		}
		d.m.calls.WithLabelValues(name, "not_called").Inc()
		return nil, err
	}
	if p.Waited > 0 {
		d.m.wait.WithLabelValues(name).Observe(p.Waited.Seconds())
	}
	return &dsTurn{d: d, name: name, lim: lim, p: p}, nil
}

// turnRevokeTTL is how long a revoked intent stays revoked: far past any lease, during which
// a holder thought dead could still ask for its turn.
const turnRevokeTTL = 24 * time.Hour

// notCalled tells the recoverer which intents of dead holders never had their turn: Redis held
// them waiting, and now never grants them one. It returns the state each such intent's target
// is settled as (store.NotCalledFunc). Any other intent may have been called; an error says
// nothing of any.
func (d *downstreams) notCalled(ctx context.Context, intents []store.OpenIntent) (map[int64]bt.LedgerState, error) {
	ids := make([]string, len(intents))
	for i, in := range intents {
		ids[i] = pipeline.TurnID(in.RunID, in.IdempotencyKey, in.Attempt)
	}
	revoked, err := limiter.Revoke(ctx, d.lim, ids, turnRevokeTTL)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]bt.LedgerState, len(revoked))
	for i, in := range intents {
		if note, ok := revoked[ids[i]]; ok {
			switch state := bt.LedgerState(note); state {
			case bt.LedgerValidationRejected, bt.LedgerConflict, bt.LedgerPolicyBlocked, bt.LedgerBugSuspected:
				out[in.ID] = state // the rejected class a replay was retrying: no call changed it
			default:
				out[in.ID] = bt.LedgerTransient
			}
		}
	}
	return out, nil
}

// note records, once per instance, a downstream that an item names but no job declares: it
// is unlimited, and listed so that an operator can set its limits.
func (d *downstreams) note(name string) {
	if _, done := d.noted.LoadOrStore(name, true); done {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.declare(ctx, []bt.Downstream{{Name: name}}); err != nil {
			d.noted.Delete(name) // try again on a later call
			d.log.Warn("record an undeclared downstream failed", "downstream", name, "err", err)
		}
	}()
}

// dsTurn is one call's turn at its downstream.
type dsTurn struct {
	d    *downstreams
	name string
	lim  limiter.Limits
	p    *limiter.Permit
}

func (t *dsTurn) Done(err error) {
	t.p.Release()
	outcome := "ok"
	if retryAfter, throttled := pipeline.ThrottledBy(err); throttled {
		outcome = "throttled"
		t.d.m.throttled.WithLabelValues(t.name).Inc()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		t.d.lim.Pushback(ctx, t.name, t.lim, retryAfter)
		cancel()
	} else if err != nil {
		outcome = "error"
	}
	t.d.m.calls.WithLabelValues(t.name, outcome).Inc()
	t.d.lim.Record(t.name, outcome, t.p.Waited)
}

// limitsOf turns a downstream's limits into the limiter's; a paused downstream is held
// before it gets here.
func limitsOf(l bt.DownstreamLimits) limiter.Limits {
	out := limiter.Limits{Rate: l.RatePerSecond, Burst: l.Burst, Concurrency: l.Concurrency, Quota: l.Quota,
		QuotaWindow: l.QuotaWindow.Duration()}
	if out.Rate > 0 && out.Burst < 1 {
		out.Burst = 1
	}
	if out.Quota > 0 && out.QuotaWindow == 0 {
		out.QuotaWindow = time.Hour
	}
	return out
}

// dsMetrics are the downstream series.
type dsMetrics struct {
	calls     *prometheus.CounterVec
	wait      *prometheus.HistogramVec
	throttled *prometheus.CounterVec
	limit     *prometheus.GaugeVec
}

func newDSMetrics(reg prometheus.Registerer) (dsMetrics, error) {
	m := dsMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_downstream_calls_total",
			Help: "Calls to downstreams from this instance, by outcome (ok, error, throttled; not_called: no turn came in time)."},
			[]string{"downstream", "outcome"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_downstream_wait_seconds",
			Help:    "How long calls that waited for their turn at a downstream waited.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, []string{"downstream"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_downstream_throttled_total",
			Help: "Calls a downstream pushed back on (429 or 503: runner.Throttled), from this instance."}, []string{"downstream"}),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_downstream_limit",
			Help: "A downstream's limits now, by kind (rate, burst, concurrency, quota, effective_rate, paused); 0 is no limit."},
			[]string{"downstream", "kind"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.calls, m.wait, m.throttled, m.limit} {
		if err := reg.Register(c); err != nil {
			return m, err
		}
	}
	return m, nil
}

func (m dsMetrics) setLimits(name string, l bt.DownstreamLimits) {
	paused := 0.0
	if l.Paused {
		paused = 1
	}
	// The downstream's counters exist at zero from the start, so a rule's rate sees the first.
	m.throttled.WithLabelValues(name)
	for _, outcome := range []string{"ok", "error", "throttled", "not_called"} {
		m.calls.WithLabelValues(name, outcome)
	}
	m.limit.WithLabelValues(name, "rate").Set(l.RatePerSecond)
	m.limit.WithLabelValues(name, "burst").Set(float64(l.Burst))
	m.limit.WithLabelValues(name, "concurrency").Set(float64(l.Concurrency))
	m.limit.WithLabelValues(name, "quota").Set(float64(l.Quota))
	m.limit.WithLabelValues(name, "paused").Set(paused)
}

// stats fills s.Stats with the cluster-wide figures of its calls. A Redis that cannot be read
// leaves them zero, and Degraded says why.
func (d *downstreams) stats(ctx context.Context, s *bt.DownstreamState) {
	s.Stats = bt.DownstreamStats{Window: time.Minute}
	own, _ := d.lim.Degraded()
	s.Stats.Degraded = own || len(d.degradedInstances()) > 0
	st, err := d.lim.State(ctx, s.Name, limitsOf(s.Limits))
	if err != nil {
		s.Stats.Degraded = true
		return
	}
	s.Stats.CallsPerSecond, s.Stats.Calls, s.Stats.Throttled, s.Stats.Errors = st.CallsPerSecond, st.Calls, st.Throttled, st.Errors
	s.Stats.Waits, s.Stats.WaitSeconds, s.Stats.EffectiveRate = st.Waits, st.WaitSeconds, st.EffectiveRate
	s.Stats.InFlight, s.Stats.QuotaUsed = st.InFlight, st.QuotaUsed
	if !st.BlockedUntil.IsZero() {
		b := st.BlockedUntil
		s.Stats.BlockedUntil = &b
	}
	d.m.limit.WithLabelValues(s.Name, "effective_rate").Set(st.EffectiveRate)
}
