package runner

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/schedule"
)

// startFire starts a due fire the scheduler found: a SCHEDULED start that claims it.
func (r *Runner) startFire(ctx context.Context, f schedule.Fire) error {
	_, err := r.Start(ctx, StartParams{Job: f.Job, Trigger: bt.TriggerScheduled, Mode: f.Mode,
		Actor: "scheduler", Due: f.Due, Next: f.Next, Missed: f.Missed})
	return err
}

// scheduledMode returns the mode of a scheduled fire of a job registered here.
func (r *Runner) scheduledMode(name string) (Mode, bool) {
	j, ok := r.Job(name)
	if !ok {
		return "", false
	}
	if m := j.Info().ScheduledMode; m != "" {
		return m, true
	}
	return bt.ModeRestart, true
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
