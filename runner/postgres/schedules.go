package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// scheduleStore holds the scheduler's reads and claims on job_settings, and the fires recorded (job_schedule_events).
type scheduleStore struct{ *Store }

// ScheduleChannel is the NOTIFY channel that wakes schedulers when a schedule changes.
const ScheduleChannel = "baton_schedule"

// UpdateSchedule applies p, recomputes the next fire (by clearing it; the scheduler fills it in
// from the database clock) and wakes every scheduler in the cluster.
func (s scheduleStore) UpdateSchedule(ctx context.Context, name string, p store.SchedulePatch) (*bt.JobSettings, error) {
	var lease *int
	clearLease := false
	if p.LeaseSeconds != nil {
		if *p.LeaseSeconds == 0 {
			clearLease = true
		} else {
			lease = p.LeaseSeconds
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	j, err := scanJob(tx.QueryRow(ctx, `
		UPDATE job_settings SET
			cron = COALESCE($2, cron),
			timezone = COALESCE($3, timezone),
			enabled = COALESCE($4, enabled),
			lease_seconds = CASE WHEN $6 THEN NULL ELSE COALESCE($5, lease_seconds) END,
			next_scheduled_at = CASE WHEN $2 IS NOT NULL OR $3 IS NOT NULL OR $4 IS NOT NULL THEN NULL ELSE next_scheduled_at END,
			version = version + 1,
			updated_at = now(),
			updated_by = $7
		WHERE name = $1 AND ($8 = 0 OR version = $8)
		RETURNING `+jobColumns, name, p.Cron, p.Timezone, p.Enabled, lease, clearLease, p.Actor, p.ExpectVersion))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.Job(ctx, name); err != nil {
			return nil, err
		}
		return nil, bt.Errorf(bt.CodeConflict, "job %q changed since version %d", name, p.ExpectVersion)
	}
	if err != nil {
		return nil, fmt.Errorf("update schedule of %s: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ScheduleChannel, name); err != nil {
		return nil, err
	}
	return j, tx.Commit(ctx)
}

// SetNextFires sets the next fire of each job whose next fire is still NULL (first computation
// after registration or a change) and whose cron and timezone are still the ones the time was
// computed from, all in one statement. It returns how many it set.
func (s scheduleStore) SetNextFires(ctx context.Context, fires []store.NextFire) (int64, error) {
	if len(fires) == 0 {
		return 0, nil
	}
	names, crons, tzs, at := make([]string, len(fires)), make([]string, len(fires)), make([]string, len(fires)), make([]time.Time, len(fires))
	for i, f := range fires {
		names[i], crons[i], tzs[i], at[i] = f.Name, f.Cron, f.Timezone, f.At
	}
	tag, err := s.pool.Exec(ctx, `UPDATE job_settings js SET next_scheduled_at = f.at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS f(name, cron, timezone, at)
		WHERE js.name = f.name AND js.next_scheduled_at IS NULL AND js.cron = f.cron AND js.timezone = f.timezone`,
		names, crons, tzs, at)
	if err != nil {
		return 0, fmt.Errorf("set next fires: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ClaimFire moves a job's next fire from due to next by compare-and-set: of N schedulers
// polling at once, exactly one sees true.
func (s scheduleStore) ClaimFire(ctx context.Context, name string, due, next time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE job_settings SET next_scheduled_at = $3
		WHERE name = $1 AND next_scheduled_at = $2 AND enabled AND NOT paused`, name, due, next)
	if err != nil {
		return false, fmt.Errorf("claim fire of %s: %w", name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ScheduleState reads what a scheduler pass needs, in one round trip and without reading the
// jobs that are not due: the due jobs by the job_settings_next_fire index, the jobs whose next
// fire is unset by job_settings_unscheduled, and the earliest future fire from the first entry
// of job_settings_next_fire after now. A pass costs the same with ten jobs as with ten thousand.
func (s scheduleStore) ScheduleState(ctx context.Context) (*store.ScheduleState, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT now(), cs.maintenance,
			(SELECT min(next_scheduled_at) FROM job_settings
			 WHERE enabled AND NOT paused AND cron <> '' AND next_scheduled_at > now()),
			j.name, j.cron, j.timezone, j.next_scheduled_at
		FROM cluster_state cs
		LEFT JOIN LATERAL (
			SELECT name, cron, timezone, next_scheduled_at FROM job_settings
			WHERE enabled AND NOT paused AND cron <> '' AND next_scheduled_at <= now()
			UNION ALL
			SELECT name, cron, timezone, next_scheduled_at FROM job_settings
			WHERE enabled AND NOT paused AND cron <> '' AND next_scheduled_at IS NULL
		) j ON true`)
	lines, err := collect(rows, err, "read schedule state", scanScheduleLine)
	if err != nil {
		return nil, err
	}
	// Every line repeats the pass's view; a line without a job is the one of a pass with none.
	st := &store.ScheduleState{}
	for _, l := range lines {
		st.Now, st.Maintenance, st.Earliest = l.now, l.maintenance, l.earliest
		if l.job != nil {
			st.Jobs = append(st.Jobs, *l.job)
		}
	}
	return st, nil
}

// scheduleLine is one line of ScheduleState's statement.
type scheduleLine struct {
	now         time.Time
	maintenance bool
	earliest    *time.Time
	job         *store.ScheduledJob
}

func scanScheduleLine(row pgx.Row) (scheduleLine, error) {
	var l scheduleLine
	var name, cron, tz *string
	var next *time.Time
	if err := row.Scan(&l.now, &l.maintenance, &l.earliest, &name, &cron, &tz, &next); err != nil {
		return l, err
	}
	if name != nil {
		l.job = &store.ScheduledJob{Name: *name, Cron: *cron, Timezone: *tz, Next: next}
	}
	return l, nil
}

// RecordScheduleEvent records a fire that did not start a run.
func (s scheduleStore) RecordScheduleEvent(ctx context.Context, job string, at time.Time, outcome, instance, detail string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO job_schedule_events (job_name, scheduled_for, outcome, instance, detail)
		VALUES ($1, $2, $3, $4, $5)`, job, at, outcome, instance, detail)
	return err
}

// RecordMissedFires records fires that came and went while no scheduler could claim them (all
// instances down or frozen): one row each, so every fire either ran or is accounted for.
func (s scheduleStore) RecordMissedFires(ctx context.Context, job string, at []time.Time, instance, detail string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO job_schedule_events (job_name, scheduled_for, outcome, instance, detail)
		SELECT $1, t, 'SKIPPED_MISSED', $3, $4 FROM unnest($2::timestamptz[]) AS t`, job, at, instance, detail)
	return err
}

// ScheduleEvents lists a job's recorded skipped fires, newest first.
func (s scheduleStore) ScheduleEvents(ctx context.Context, job string, limit int) ([]bt.ScheduleEvent, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, job_name, scheduled_for, outcome, instance, detail, created_at
		FROM job_schedule_events WHERE job_name = $1 ORDER BY id DESC LIMIT $2`, job, limit)
	return collect(rows, err, "list schedule events of "+job, scanScheduleEvent)
}

func scanScheduleEvent(row pgx.Row) (bt.ScheduleEvent, error) {
	var e bt.ScheduleEvent
	err := row.Scan(&e.ID, &e.JobName, &e.ScheduledFor, &e.Outcome, &e.Instance, &e.Detail, &e.CreatedAt)
	return e, err
}
