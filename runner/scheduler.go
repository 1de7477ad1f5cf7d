package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// schedule is the scheduler loop: each pass recovers expired leases (every PollInterval),
// fires the due jobs and then sleeps until the earliest next fire, the poll interval, or a
// wake-up from a schedule change — whichever comes first.
func (r *Runner) schedule(ctx context.Context) {
	var lastRecover time.Time
	cache := scheduleCache{}
	for {
		if time.Since(lastRecover) >= r.cfg.PollInterval {
			r.recover(ctx)
			lastRecover = time.Now()
		}
		wait := r.schedulePass(ctx, cache)
		if untilRecover := r.cfg.PollInterval - time.Since(lastRecover); untilRecover < wait {
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
		case <-r.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

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
	s, err := ParseSchedule(spec, tz)
	if err != nil {
		return nil, err
	}
	if len(c) > 10000 {
		clear(c)
	}
	c[key] = s
	return s, nil
}

// schedulePass fires every due job once and returns how long to sleep until the next fire.
// It reads only the jobs that need it (due, or next fire not computed yet) and the earliest
// future fire, so its cost does not grow with the number of registered jobs.
func (r *Runner) schedulePass(ctx context.Context, cache scheduleCache) time.Duration {
	wait := r.cfg.PollInterval
	if !r.hasJobs() {
		return wait
	}
	st, err := r.store.ScheduleState(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("read schedules", "err", err)
		}
		return min(wait, time.Second)
	}
	if st.Maintenance {
		return wait
	}
	r.slotWanted.Store(false) // set again below by a due fire that finds every slot busy
	consider := func(next time.Time) {
		if d := next.Sub(st.Now); d < wait {
			wait = d
		}
	}
	if st.Earliest != nil {
		consider(*st.Earliest)
	}
	var unset []postgres.NextFire
	var fires sync.WaitGroup
	for _, j := range st.Jobs {
		if _, ok := r.Job(j.Name); !ok {
			continue // another instance's job
		}
		sched, err := cache.get(j.Cron, j.Timezone)
		if err != nil {
			r.log.Error("job has an invalid schedule; not firing it", "job", j.Name, "err", err)
			continue
		}
		next := sched.Next(st.Now)
		consider(next)
		if j.Next == nil {
			unset = append(unset, postgres.NextFire{Name: j.Name, Cron: j.Cron, Timezone: j.Timezone, At: next})
			continue
		}
		due := *j.Next
		// Fires that passed while no scheduler could claim them: one runs (due), the rest are
		// recorded as missed by whoever claims it.
		var missed []time.Time
		for t := sched.Next(due); !t.IsZero() && !t.After(st.Now) && len(missed) < maxMissedFires; t = sched.Next(t) {
			missed = append(missed, t)
		}
		fires.Add(1)
		go func() {
			defer fires.Done()
			_, err := r.Start(ctx, StartParams{Job: j.Name, Trigger: bt.TriggerScheduled, Mode: r.scheduledMode(j.Name),
				Actor: "scheduler", Due: due, Next: next, Missed: missed})
			if errors.Is(err, bt.ErrCapacityExceeded) {
				// Not claimed: the fire stays due, for another instance with a free slot or for
				// this one as soon as a slot frees (freeSlot wakes the scheduler).
				r.slotWanted.Store(true)
				r.log.Warn("due fire waits for a free slot", "job", j.Name)
			} else if err != nil && !errors.Is(err, bt.ErrAlreadyRunning) && ctx.Err() == nil {
				r.log.Error("scheduled start", "job", j.Name, "err", err)
			}
		}()
	}
	// Every unset next fire in one statement (after registration: every job at once).
	if _, err := r.store.SetNextFires(ctx, unset); err != nil && ctx.Err() == nil {
		r.log.Error("set next fires", "jobs", len(unset), "err", err)
	}
	fires.Wait()
	if r.slotWanted.Load() {
		// Should the wake be missed (the slot freed before the flag was set), look again soon.
		wait = min(wait, slotRetry)
	}
	return wait
}

func (r *Runner) scheduledMode(name string) Mode {
	if j, ok := r.Job(name); ok && j.Info().ScheduledMode != "" {
		return j.Info().ScheduledMode
	}
	return bt.ModeRestart
}

// recover fails runs whose lease expired (their worker died or stalled), turns their
// in-flight targets ambiguous and releases their Redis locks.
func (r *Runner) recover(ctx context.Context) {
	expired, err := r.store.RecoverExpired(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("recover expired leases", "err", err)
		}
		return
	}
	for _, e := range expired {
		r.metrics.Recovered.Inc()
		r.log.Warn("run failed: lease expired", "job", e.JobName, "run", e.ID, "ambiguous", e.Ambiguous)
		if _, err := r.locks.Release(ctx, e.JobName, e.Token); err != nil {
			r.log.Warn("release expired lock", "job", e.JobName, "err", err)
		}
		if r.cfg.Events != nil {
			if rec, err := r.store.Run(ctx, e.ID); err == nil {
				r.cfg.Events.RunChanged(RunEvent{Run: *rec, Final: true})
			}
		}
	}
}

// RecoverExpired runs one recovery pass now (the scheduler does it every PollInterval).
func (r *Runner) RecoverExpired(ctx context.Context) { r.recover(ctx) }

// listen wakes the scheduler when any instance changes a schedule (PostgreSQL NOTIFY).
func (r *Runner) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := r.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("schedule listener lost; retrying", "err", err, "in", backoff)
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

func (r *Runner) listenOnce(ctx context.Context) error {
	conn, err := r.cfg.DB.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+postgres.ScheduleChannel); err != nil {
		return err
	}
	defer func() {
		if ctx.Err() != nil {
			// The connection may be mid-wait; do not return it to the pool listening.
			_ = conn.Conn().Close(context.Background())
		}
	}()
	r.signalWake() // changes made while we were not listening
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return err
		}
		r.signalWake()
	}
}
