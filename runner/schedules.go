package runner

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/schedule"
)

// Schedule is a parsed cron expression in a timezone; see ParseSchedule. Its fires follow the
// local wall clock across daylight saving time the way Vixie cron and Quartz do
// (docs/architecture.md, "Schedules and daylight saving time").
type Schedule = schedule.Schedule

// ParseSchedule validates spec (five fields, six with seconds first, or a descriptor such as
// @daily and @every 1h) and tz (a zone name; "" is UTC, "Local" is refused). Errors are coded
// INVALID_CRON or INVALID_TIMEZONE.
func ParseSchedule(spec, tz string) (*Schedule, error) { return schedule.Parse(spec, tz) }

// startFire starts a due fire the scheduler found: a SCHEDULED start that claims it.
func (r *Runner) startFire(ctx context.Context, f schedule.Fire) error {
	_, err := r.Start(ctx, StartParams{Job: f.Job, Trigger: bt.TriggerScheduled, Mode: f.Mode,
		Actor: "scheduler", Due: f.Due, Next: f.Next, Missed: f.Missed})
	return err
}

// RecoverExpired runs one recovery pass now (the scheduler does it every PollInterval).
func (r *Runner) RecoverExpired(ctx context.Context) { r.recoverer.Recover(ctx) }
