package schedule

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Store is what the scheduler reads and writes of the job settings.
type Store interface {
	// ScheduleState reads one pass's view: the database clock, the maintenance switch, the
	// jobs due or without a next fire, and the earliest future fire.
	ScheduleState(ctx context.Context) (*store.ScheduleState, error)
	// SetNextFires sets the next fire of jobs that have none yet.
	SetNextFires(ctx context.Context, fires []store.NextFire) (int64, error)
}

// Fire is a due fire the scheduler hands to StartFunc: the fire being claimed, the one after
// it, and the fires between them that passed unclaimed.
type Fire struct {
	Job       string
	Mode      bt.Mode
	Due, Next time.Time
	Missed    []time.Time
}

// Config wires a Scheduler.
type Config struct {
	Store Store
	// DB holds the connection that LISTENs for schedule changes on Channel. It must reach
	// PostgreSQL directly (or through a pooler in session mode): a LISTEN does not survive
	// PgBouncer's transaction pooling.
	DB *pgxpool.Pool
	// Channel is the NOTIFY channel on which the store signals a schedule change.
	Channel string
	Logger  *slog.Logger
	// PollInterval is the safety poll, and how often RecoverFunc runs.
	PollInterval time.Duration
	// HasJobsFunc reports whether this instance has any job registered.
	HasJobsFunc func() bool
	// ModeFunc returns the mode of a scheduled fire of a job registered on this instance;
	// false for a job it does not run.
	ModeFunc func(job string) (bt.Mode, bool)
	// StartFunc claims and starts a due fire (Runner.Start with trigger SCHEDULED). A fire
	// another instance claimed is no error.
	StartFunc func(ctx context.Context, f Fire) error
	// RecoverFunc runs one lease recovery pass, every PollInterval.
	RecoverFunc func(ctx context.Context)
	// AutoResumeFunc, if set, starts the due auto-resumes on every pass and returns how long
	// until the next pending one is due (negative: none is pending).
	AutoResumeFunc func(ctx context.Context) time.Duration
}

// Scheduler fires due jobs once cluster-wide: each fire is claimed by compare-and-set in
// StartFunc, so N instances polling at once fire it once.
type Scheduler struct {
	cfg  Config
	wake chan struct{}
	// slotWanted is set when a due fire found every slot busy: the next slot freed wakes the
	// scheduler, so the fire starts then rather than at the job's next fire.
	slotWanted atomic.Bool

	passMu    sync.Mutex
	passCache scheduleCache // Pass's, kept across passes as the loop keeps its own
}

// New returns a Scheduler; Run runs it.
func New(cfg Config) *Scheduler {
	return &Scheduler{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake makes the loop pass at once (a schedule changed, a job was registered).
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SlotFreed wakes the loop if a due fire is waiting for a free slot.
func (s *Scheduler) SlotFreed() {
	if s.slotWanted.CompareAndSwap(true, false) {
		s.Wake()
	}
}

// WantSlot records that a due start found every slot busy: the next slot freed wakes the
// scheduler.
func (s *Scheduler) WantSlot() { s.slotWanted.Store(true) }

// SlotWanted reports whether a due fire is waiting for a free slot.
func (s *Scheduler) SlotWanted() bool { return s.slotWanted.Load() }

// Run is the scheduler loop, until ctx ends: each pass recovers expired leases (every
// PollInterval), fires the due jobs and then sleeps until the earliest next fire, the poll
// interval, or a wake-up from a schedule change — whichever comes first.
func (s *Scheduler) Run(ctx context.Context) {
	var lastRecover time.Time
	cache := scheduleCache{}
	for {
		if time.Since(lastRecover) >= s.cfg.PollInterval {
			s.cfg.RecoverFunc(ctx)
			lastRecover = time.Now()
		}
		wait := s.pass(ctx, cache)
		if s.cfg.AutoResumeFunc != nil {
			if next := s.cfg.AutoResumeFunc(ctx); next >= 0 {
				// Not sooner than a pause: a due resume that could not start (no free slot
				// here) is looked at again after it, or when a slot frees.
				wait = min(wait, max(next, autoResumeRetry))
			}
		}
		if untilRecover := s.cfg.PollInterval - time.Since(lastRecover); untilRecover < wait {
			wait = untilRecover
		}
		if wait < 0 {
			wait = 0
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Pass runs one pass now, outside the loop, as the loop does, and returns how long the loop
// would sleep after it.
func (s *Scheduler) Pass(ctx context.Context) time.Duration {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	if s.passCache == nil {
		s.passCache = scheduleCache{}
	}
	return s.pass(ctx, s.passCache)
}

// autoResumeRetry is the shortest wait before the scheduler looks at the due auto-resumes again.
const autoResumeRetry = 50 * time.Millisecond

// slotRetry bounds the wait of a scheduler whose due fire found every slot busy.
const slotRetry = 500 * time.Millisecond

// maxMissedFires bounds the missed fires recorded for one claim (an every-second job after a
// long outage); the rest go unrecorded rather than flood the table.
const maxMissedFires = 1000

type scheduleCache map[string]*Schedule

func (c scheduleCache) get(spec, tz string) (*Schedule, error) {
	key := spec + "\x00" + tz
	if s, ok := c[key]; ok {
		return s, nil
	}
	s, err := Parse(spec, tz)
	if err != nil {
		return nil, err
	}
	if len(c) > 10000 {
		clear(c)
	}
	c[key] = s
	return s, nil
}

// pass fires every due job once and returns how long to sleep until the next fire. It reads
// only the jobs that need it (due, or next fire not computed yet) and the earliest future
// fire, so its cost does not grow with the number of registered jobs.
func (s *Scheduler) pass(ctx context.Context, cache scheduleCache) time.Duration {
	wait := s.cfg.PollInterval
	if !s.cfg.HasJobsFunc() {
		return wait
	}
	st, err := s.cfg.Store.ScheduleState(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Error("read schedules", "err", err)
		}
		return min(wait, time.Second)
	}
	if st.Maintenance {
		return wait
	}
	s.slotWanted.Store(false) // set again below by a due fire that finds every slot busy
	consider := func(next time.Time) {
		if d := next.Sub(st.Now); d < wait {
			wait = d
		}
	}
	if st.Earliest != nil {
		consider(*st.Earliest)
	}
	var unset []store.NextFire
	var fires sync.WaitGroup
	for _, j := range st.Jobs {
		mode, ok := s.cfg.ModeFunc(j.Name)
		if !ok {
			continue // another instance's job
		}
		sched, err := cache.get(j.Cron, j.Timezone)
		if err != nil {
			s.cfg.Logger.Error("job has an invalid schedule; not firing it", "job", j.Name, "err", err)
			continue
		}
		next := sched.Next(st.Now)
		consider(next)
		if j.Next == nil {
			unset = append(unset, store.NextFire{Name: j.Name, Cron: j.Cron, Timezone: j.Timezone, At: next})
			continue
		}
		f := Fire{Job: j.Name, Mode: mode, Due: *j.Next, Next: next}
		// Fires that passed while no scheduler could claim them: one runs (due), the rest are
		// recorded as missed by whoever claims it.
		for t := sched.Next(f.Due); !t.IsZero() && !t.After(st.Now) && len(f.Missed) < maxMissedFires; t = sched.Next(t) {
			f.Missed = append(f.Missed, t)
		}
		fires.Add(1)
		go func() { defer fires.Done(); s.fire(ctx, f) }()
	}
	// Every unset next fire in one statement (after registration: every job at once).
	if _, err := s.cfg.Store.SetNextFires(ctx, unset); err != nil && ctx.Err() == nil {
		s.cfg.Logger.Error("set next fires", "jobs", len(unset), "err", err)
	}
	fires.Wait()
	if s.slotWanted.Load() {
		// Should the wake be missed (the slot freed before the flag was set), look again soon.
		wait = min(wait, slotRetry)
	}
	return wait
}

// fire starts one due fire.
func (s *Scheduler) fire(ctx context.Context, f Fire) {
	err := s.cfg.StartFunc(ctx, f)
	if errors.Is(err, bt.ErrCapacityExceeded) {
		// Not claimed: the fire stays due, for another instance with a free slot or for
		// this one as soon as a slot frees (SlotFreed wakes the scheduler).
		s.slotWanted.Store(true)
		s.cfg.Logger.Warn("due fire waits for a free slot", "job", f.Job)
	} else if err != nil && !errors.Is(err, bt.ErrAlreadyRunning) && ctx.Err() == nil {
		s.cfg.Logger.Error("scheduled start", "job", f.Job, "err", err)
	}
}

// Listen wakes the loop when any instance changes a schedule (PostgreSQL NOTIFY), until ctx
// ends, listening again after a lost connection.
func (s *Scheduler) Listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn("schedule listener lost; retrying", "err", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Scheduler) listenOnce(ctx context.Context) error {
	conn, err := s.cfg.DB.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+s.cfg.Channel); err != nil {
		return err
	}
	defer func() {
		if ctx.Err() != nil {
			// The connection may be mid-wait; do not return it to the pool listening.
			_ = conn.Conn().Close(context.Background())
		}
	}()
	s.Wake() // changes made while we were not listening
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return err
		}
		s.Wake()
	}
}
