package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/internal/logthrottle"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/maintenance"
	"github.com/baton-run/baton/runner/internal/metrics"
	"github.com/baton-run/baton/runner/internal/replay"
	"github.com/baton-run/baton/runner/internal/schedule"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/redislock"
	"github.com/baton-run/baton/runner/store"
)

// The defaults of the runner's settings. A zero Config field takes them, and package server
// shows the same values as the defaults of `baton serve` (its settings table uses these
// constants), so an embedding program and the command agree.
const (
	// DefaultEnv is the Redis namespace when Config.Env is empty. It is "dev", the namespace
	// `baton serve` has always used, so instances of either kind share locks and events.
	DefaultEnv = "dev"
	// DefaultPoolSize is the number of worker slots when Config.PoolSize is 0.
	DefaultPoolSize = 4
	// DefaultPollInterval is the recoverer's and the scheduler's safety poll.
	DefaultPollInterval = 10 * time.Second
	// DefaultJobLease is the lease of a job that declares none.
	DefaultJobLease = 30 * time.Second
	// DefaultShutdownTimeout bounds how long Run waits for jobs to reach a boundary.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultRemoteStartWait is how long an instance without workers waits for a worker
	// instance to take a start it hands over.
	DefaultRemoteStartWait = 2 * time.Second
)

// Config configures a Runner. DB and Redis are required; everything else has a default.
type Config struct {
	// DB is the shared PostgreSQL (schema migrated with package migrations).
	DB *pgxpool.Pool
	// Store is the database behind the runner, as package store declares it; nil means
	// runner/postgres over DB. Another implementation (one that passes store/storetest) can be
	// plugged in here. DB is still required: the scheduler LISTENs on it (or on ListenDB) for
	// schedule changes (postgres.ScheduleChannel), so the implementation must NOTIFY there as
	// runner/postgres does.
	Store store.Store
	// ListenDB is the pool the scheduler LISTENs on for schedule changes; nil means DB. Give
	// a pool on a direct connection to PostgreSQL when DB goes through PgBouncer in
	// transaction mode, which cannot hold a LISTEN.
	ListenDB *pgxpool.Pool
	// Redis is the shared Redis, used for the ShedLock-style pre-emption lock. Build it with
	// ContextTimeoutEnabled set (server.Serve does): every lock call carries a short deadline,
	// which go-redis otherwise ignores on socket reads, so a stalled Redis could hold a lease
	// renewal for seconds.
	Redis redis.UniversalClient
	// Env namespaces Redis keys: baton:{Env}:lock:{job}. "" means DefaultEnv ("dev").
	Env string
	// Instance names this process in runs and logs. Default hostname-pid.
	Instance string
	// PoolSize is the number of worker slots; 0 means DefaultPoolSize, -1 means no workers (an API-only
	// instance: every Start fails with CAPACITY_EXCEEDED).
	PoolSize int
	// Scheduler runs the cron scheduler and lease recoverer on this instance.
	Scheduler bool
	// PollInterval of the recoverer and the scheduler's safety poll; 0 means
	// DefaultPollInterval. Fires do not
	// wait for it: the scheduler sleeps until the earliest next fire.
	PollInterval time.Duration
	// DefaultLease for jobs that set none; 0 means DefaultJobLease.
	DefaultLease time.Duration
	// ShutdownTimeout bounds how long Run waits for jobs to reach a boundary; 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the runner's Prometheus metrics; nil registers none.
	Registerer prometheus.Registerer
	// Events receives run changes (for live subscriptions); nil drops them.
	Events EventSink
	// NowFunc is the application clock, used only for local durations. Leases, schedules,
	// staleness and the minutes of call statistics are judged by the database clock, so a
	// skewed NowFunc changes nothing.
	NowFunc func() time.Time
	// WorkerVersion is recorded on runs (the binary's version).
	WorkerVersion string
	// MaintenanceCron schedules the built-in retention job; "" means "@hourly", "-" leaves
	// the job unregistered.
	MaintenanceCron string
	// Retention is how long the retention job keeps runs, run errors, schedule events, call
	// statistics and audit rows; each zero period means its default (see Retention).
	Retention Retention
	// RemoteStartWait is how long an instance without workers (PoolSize -1) waits for a
	// worker instance with a free slot to take a start it hands over through Redis; 0 means
	// DefaultRemoteStartWait, -1 refuses such starts at once with CAPACITY_EXCEEDED. Instances with workers take
	// handed-over starts whenever they have a free slot.
	RemoteStartWait time.Duration
	// TracerProvider makes the spans of runs (docs/operator-runbook.md, "Tracing a run"): each
	// run, its Process and ProcessBatch calls, their commits and item calls, and its lease
	// renewals. nil makes no span at all, at no cost on the item path; pass
	// otel.GetTracerProvider() to use the program's global one.
	TracerProvider trace.TracerProvider
	// ReconcileTimeout bounds one call of a job's reconcile hook, which a worker makes for a
	// reconcile request; 0 means DefaultReconcileTimeout. Three quarters of the job's lease
	// bound it too, whichever is shorter, so the outcome is written while the lease holds.
	ReconcileTimeout time.Duration
	// Notify configures the delivery of alarm notifications to webhooks, Slack and PagerDuty
	// (docs/adr/0021-alert-notifications.md); its zero value queues deliveries and sends none.
	Notify NotifyConfig
}

// EventSink receives every change of a run: start, progress, status, finish.
type EventSink interface {
	RunChanged(ev RunEvent)
}

// RunEvent is a run's state after a change. Final is set on the last event of a run.
type RunEvent struct {
	Run   bt.RunRecord
	Final bool
}

// Runner runs registered jobs on a fixed pool of worker slots.
type Runner struct {
	cfg     Config
	store   store.Store
	locks   *redislock.Locker
	log     *slog.Logger
	metrics *metrics.Metrics

	reg      *registry
	handover handover
	spans    *spanFollower // the spans of sharded runs planned here, until the runs end

	slots    chan struct{}
	draining atomic.Bool
	// startMu orders Shutdown after starts in flight: Start holds it shared from its draining
	// check until its worker is counted in workers, Shutdown takes it to set draining.
	startMu   sync.RWMutex
	sched     *schedule.Scheduler
	recoverer *maintenance.Recoverer

	activeMu sync.Mutex
	active   map[int64]*Run
	workers  sync.WaitGroup

	replays    *replay.Service
	reconciles *replay.Reconciles
	ds         *downstreams
	shards     *shardWork
	notify     *notifier
	// tracer makes the runs' spans; nil when Config.TracerProvider is (tracing off).
	tracer trace.Tracer
}

// New returns a Runner. Register jobs, then call Run.
func New(cfg Config) (*Runner, error) {
	if cfg.DB == nil || cfg.Redis == nil {
		return nil, errors.New("runner: Config.DB and Config.Redis are required")
	}
	cfg = cfg.withDefaults()
	if cfg.Store == nil {
		cfg.Store = postgres.New(cfg.DB)
	}
	st := cfg.Store
	m, err := metrics.New(cfg.Registerer, st.RedoneWrites)
	if err != nil {
		return nil, err
	}
	r := &Runner{
		cfg:     cfg,
		store:   st,
		locks:   redislock.New(cfg.Redis, cfg.Env),
		log:     cfg.Logger.With("instance", cfg.Instance),
		metrics: m,
		reg:     &registry{jobs: map[string]Job{}, defaultLease: cfg.DefaultLease},
		slots:   make(chan struct{}, cfg.PoolSize),
		active:  map[int64]*Run{},
	}
	r.shards = &shardWork{r: r, wake: make(chan struct{}, 1)}
	r.handover = handover{r: r, warn: logthrottle.New(0, nil)}
	r.spans = newSpanFollower(r)
	if cfg.TracerProvider != nil {
		r.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	if r.ds, err = newDownstreams(cfg, st, r.log); err != nil {
		return nil, err
	}
	if cfg.PoolSize > 0 {
		r.ds.jobsFunc, r.ds.pendingFunc = r.reg.names, r.shards.wakeUp
	}
	if r.notify, err = newNotifier(r); err != nil {
		return nil, err
	}
	r.recoverer = &maintenance.Recoverer{Store: st, Locks: r.locks, Metrics: m, Logger: r.log}
	r.recoverer.RunEndedFunc = r.shards.recovered
	r.recoverer.NotCalledFunc = r.ds.notCalled
	listenDB := cfg.ListenDB
	if listenDB == nil {
		listenDB = cfg.DB
	}
	r.sched = schedule.New(schedule.Config{Store: st, DB: listenDB, Channel: postgres.ScheduleChannel, Logger: r.log, PollInterval: cfg.PollInterval,
		HasJobsFunc: r.reg.any, ModeFunc: r.reg.scheduledMode, StartFunc: r.startFire, RecoverFunc: r.recoverer.Recover, AutoResumeFunc: r.resumeDue})
	r.replays = replay.New(replay.Config{Store: st, Logger: r.log, JobFunc: r.reg.replayJob, StartFunc: r.startReplay,
		ScheduleFunc: r.Jobs().applyApprovedSchedule, AuditFunc: r.audit, MaskFunc: maskEvidence})
	rc := replay.ReconcileConfig{Store: st, Logger: r.log, Instance: cfg.Instance, PollInterval: cfg.PollInterval,
		Timeout: cfg.ReconcileTimeout, JobFunc: r.reg.replayJob, LeasesFunc: r.reg.reconcileLeases, Slots: reconcileSlots{r},
		TokenFunc: newToken, AuditFunc: r.audit, MaskFunc: maskEvidence}
	if sink, ok := cfg.Events.(ReconcileSink); ok {
		rc.PublishFunc = sink.ReconcileChanged
	}
	r.reconciles = replay.NewReconciles(rc)
	return r, nil
}

// withDefaults returns cfg with every zero setting given its default.
func (cfg Config) withDefaults() Config {
	if cfg.Env == "" {
		cfg.Env = DefaultEnv
	}
	if cfg.Instance == "" {
		host, _ := os.Hostname()
		cfg.Instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	if cfg.PoolSize < 0 {
		cfg.PoolSize = 0
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.DefaultLease <= 0 {
		cfg.DefaultLease = DefaultJobLease
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.ReconcileTimeout <= 0 {
		cfg.ReconcileTimeout = DefaultReconcileTimeout
	}
	if cfg.RemoteStartWait == 0 {
		cfg.RemoteStartWait = DefaultRemoteStartWait
	}
	cfg.Retention = cfg.Retention.WithDefaults()
	return cfg
}

// Instance returns this runner's instance name.
func (r *Runner) Instance() string { return r.cfg.Instance }

// Register adds jobs and records their defaults in job_settings (a job seen before keeps its
// runtime-edited schedule). A name registered twice, an invalid name, cron or timezone fails
// with a coded error and registers nothing of that call.
func (r *Runner) Register(ctx context.Context, jobs ...Job) error {
	r.reg.mu.Lock()
	defer r.reg.mu.Unlock()
	seen := map[string]bool{}
	for _, j := range jobs {
		info := j.Info()
		if err := validateName(info.Name); err != nil {
			return err
		}
		if _, dup := r.reg.jobs[info.Name]; dup || seen[info.Name] {
			return bt.Errorf(bt.CodeDuplicateJob, "job %q is already registered", info.Name)
		}
		seen[info.Name] = true
		if info.Cron != "" {
			if _, err := ParseSchedule(info.Cron, info.Timezone); err != nil {
				return fmt.Errorf("job %q: %w", info.Name, err)
			}
		} else if _, err := schedule.LoadLocation(info.Timezone); err != nil {
			return fmt.Errorf("job %q: %w", info.Name, err)
		}
		if err := validatePolicy(policyOf(info)); err != nil {
			return fmt.Errorf("job %q: %w", info.Name, err)
		}
		if err := validateSharding(info.Shards); err != nil {
			return fmt.Errorf("job %q: %w", info.Name, err)
		}
		for _, d := range info.Downstreams {
			if err := checkDefaults(d); err != nil {
				return fmt.Errorf("job %q: %w", info.Name, err)
			}
		}
	}
	defaults := make([]store.JobDefaults, len(jobs))
	for i, j := range jobs {
		info := j.Info()
		tz := info.Timezone
		if tz == "" {
			tz = "UTC"
		}
		risk := info.Risk
		if risk == "" {
			risk = bt.RiskLow
		}
		defaults[i] = store.JobDefaults{
			Name: info.Name, Description: info.Description, Cron: info.Cron, Timezone: tz,
			RiskLevel: risk, RetentionDays: retentionDays(info), JobVersion: info.Version, AutoResume: policyOf(info),
		}
		if info.Shards != nil {
			defaults[i].MaxConcurrentShards = info.Shards.MaxConcurrent
		}
	}
	// One statement per thousand jobs, not a round trip and a commit per job: an instance
	// starting with ten thousand jobs registers them in well under a second.
	if err := r.store.EnsureJobs(ctx, defaults); err != nil {
		return err
	}
	var declared []bt.Downstream
	for _, j := range jobs {
		declared = append(declared, j.Info().Downstreams...)
	}
	if err := r.ds.declare(ctx, declared); err != nil {
		return fmt.Errorf("declare downstreams: %w", err)
	}
	for _, j := range jobs {
		r.reg.jobs[j.Info().Name] = j
	}
	r.sched.Wake()
	return nil
}

func retentionDays(info JobInfo) int {
	switch {
	case info.RetentionDays > 0:
		return info.RetentionDays
	case info.Risk == bt.RiskHigh:
		return 400
	default:
		return 90
	}
}

func validateName(name string) error { return bt.CheckName("job", name) }

// Job returns a registered job by name.
func (r *Runner) Job(name string) (Job, bool) { return r.reg.get(name) }

// JobNames lists registered job names.
func (r *Runner) JobNames() []string { return r.reg.names() }

// freeSlot gives a worker slot back, and wakes the scheduler if a due fire is waiting for one.
func (r *Runner) freeSlot() {
	<-r.slots
	r.sched.SlotFreed()
	r.shards.wakeUp()
}

// Run runs the scheduler (if configured) until ctx is done, then shuts down gracefully: it
// stops taking work, asks running jobs to stop at their next boundary, waits up to
// ShutdownTimeout, records interrupted runs so RESUME continues them, and releases locks.
func (r *Runner) Run(ctx context.Context) error {
	if r.cfg.MaintenanceCron != "-" {
		if _, ok := r.Job(MaintenanceJobName); !ok {
			cron := r.cfg.MaintenanceCron
			if cron == "" {
				cron = "@hourly"
			}
			// A stop asked for at once still lets the registration finish: it is one short
			// write, and an instance told to stop right after it started stops cleanly.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			err := r.Register(rctx, maintenanceJob{r: r, cron: cron})
			cancel()
			if err != nil {
				return fmt.Errorf("register %s: %w", MaintenanceJobName, err)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.ds.serve(ctx) }()
	go func() { defer wg.Done(); sealChannelURLs(ctx, r); r.notify.serve(ctx) }()
	wg.Add(1)
	go func() { defer wg.Done(); r.spans.serve(ctx) }()
	if cap(r.slots) > 0 { // an API-only instance leaves handed-over starts, shards and reconciles to the others
		wg.Add(3)
		go func() { defer wg.Done(); r.handover.serve(ctx) }()
		go func() { defer wg.Done(); r.reconciles.Serve(ctx) }()
		go func() { defer wg.Done(); r.shards.serve(ctx) }()
	}
	if r.cfg.Scheduler {
		wg.Add(2)
		go func() { defer wg.Done(); r.sched.Run(ctx) }()
		go func() { defer wg.Done(); r.sched.Listen(ctx) }()
	}
	<-ctx.Done()
	wg.Wait()
	return r.Shutdown(context.Background())
}

// Shutdown stops taking work and asks every running job to stop at its next boundary, waiting
// up to ShutdownTimeout (or ctx). Runs still going after that are ended FAILED with reason
// SHUTDOWN_TIMEOUT; either way RESUME continues them from their checkpoint.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.startMu.Lock()
	r.draining.Store(true)
	r.startMu.Unlock()
	r.activeMu.Lock()
	for _, run := range r.active {
		run.requestStop(bt.StopShutdown)
	}
	r.activeMu.Unlock()

	done := make(chan struct{})
	go func() { r.workers.Wait(); close(done) }()
	timer := time.NewTimer(r.cfg.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	r.activeMu.Lock()
	stuck := make([]*Run, 0, len(r.active))
	for _, run := range r.active {
		stuck = append(stuck, run)
	}
	r.activeMu.Unlock()
	for _, run := range stuck {
		run.abandon()
	}
	return fmt.Errorf("shutdown: %d run(s) did not stop within %s", len(stuck), r.cfg.ShutdownTimeout)
}

// Active reports whether this instance's worker for run id is still going.
func (r *Runner) Active(id int64) bool {
	r.activeMu.Lock()
	defer r.activeMu.Unlock()
	_, ok := r.active[id]
	return ok
}
