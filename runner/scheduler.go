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

// RecoverExpired runs one recovery pass now (the scheduler does it every PollInterval).
func (r *Runner) RecoverExpired(ctx context.Context) { r.recoverer.Recover(ctx) }
