package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// clusterStore holds what the cluster shares (cluster_state) and the alarms' facts.
type clusterStore struct{ *Store }

// Now returns the database clock.
func (s clusterStore) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.pool.QueryRow(ctx, "SELECT now()").Scan(&t)
	return t, err
}

// Maintenance reports whether the cluster is in maintenance.
func (s clusterStore) Maintenance(ctx context.Context) (bool, error) {
	var on bool
	err := s.pool.QueryRow(ctx, `SELECT maintenance FROM cluster_state`).Scan(&on)
	return on, err
}

// SetMaintenance turns the cluster-wide maintenance pause on or off. Turning it on asks every
// active run to stop at its next boundary with status PAUSED; turning it off clears every
// job's next fire so schedules restart from now rather than replaying the missed fires.
func (s clusterStore) SetMaintenance(ctx context.Context, on bool, actor string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `UPDATE cluster_state SET maintenance = $1, updated_at = statement_timestamp(), updated_by = $2`, on, actor); err != nil {
		return err
	}
	if on {
		rows, qerr := tx.Query(ctx, `WITH p AS (
				UPDATE job_runs SET pause_reason = 'MAINTENANCE' WHERE status IN ('STARTING', 'RUNNING') AND `+topLevel+`
					AND pause_reason IS NULL RETURNING id
			), e AS (`+recordRunEvents(store.EventPauseRequested, "p", "$1", "maintenance on")+`)
			SELECT id FROM p`, actor)
		var ids []int64
		if ids, err = collect(rows, qerr, "pause every run", scanOne[int64]); err == nil {
			err = settleStopping(ctx, tx, ids)
		}
	} else {
		_, err = tx.Exec(ctx, `UPDATE job_settings SET next_scheduled_at = NULL`)
		if err == nil {
			_, err = tx.Exec(ctx, `WITH p AS (
				UPDATE job_runs SET pause_reason = NULL WHERE status IN ('STARTING', 'RUNNING') AND `+topLevel+`
					AND pause_reason = 'MAINTENANCE' RETURNING id
			) `+recordRunEvents(store.EventPauseLifted, "p", "$1", "maintenance off"), actor)
		}
	}
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '*')`, ScheduleChannel); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// AlertFacts reads what the alarms need.
func (s clusterStore) AlertFacts(ctx context.Context) (*store.AlertRows, error) {
	out := &store.AlertRows{Retried: map[string]int64{}, Ambiguous: map[string]int64{}, Downstream: map[string][3]int64{}}
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&out.Now); err != nil {
		return nil, err
	}
	active, err := s.Runs(ctx, store.RunFilter{Statuses: []bt.RunStatus{bt.StatusStarting, bt.StatusRunning}, Limit: 1000})
	if err != nil {
		return nil, err
	}
	out.Active = active
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM job_runs
		WHERE parent_run_id IS NOT NULL AND status IN ('STARTING', 'RUNNING') ORDER BY id LIMIT 10000`)
	if out.Shards, err = collect(rows, err, "read held shards", scanRun); err != nil {
		return nil, err
	}
	rows, err = s.pool.Query(ctx, `SELECT job_name, count(*), 0, 0 FROM job_ledger
		WHERE attempt >= 3 AND state NOT IN ('CONFIRMED', 'NOT_APPLIED', 'SKIPPED') GROUP BY job_name`)
	retried, err := collect(rows, err, "count retried targets", scanJobCounts)
	if err != nil {
		return nil, err
	}
	rows, err = s.pool.Query(ctx, `SELECT job_name, sum(n)::bigint, 0, 0 FROM job_ledger_counts
		WHERE run_id = 0 AND state = 'AMBIGUOUS_EFFECT' GROUP BY job_name HAVING sum(n) > 0`)
	ambiguous, err := collect(rows, err, "count ambiguous targets", scanJobCounts)
	if err != nil {
		return nil, err
	}
	rows, err = s.pool.Query(ctx, `SELECT job_name, sum(calls)::bigint, sum(downstream_errors)::bigint, sum(rejects)::bigint
		FROM job_call_stats WHERE minute > now() - interval '6 minutes' GROUP BY job_name`)
	downstream, err := collect(rows, err, "sum call stats", scanJobCounts)
	if err != nil {
		return nil, err
	}
	rows, err = s.pool.Query(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id IN (SELECT l.id FROM job_settings js
		CROSS JOIN LATERAL (SELECT id, auto_resume_outcome FROM job_runs WHERE job_name = js.name AND `+topLevel+` ORDER BY id DESC LIMIT 1) l
		WHERE l.auto_resume_outcome = 'EXHAUSTED')`)
	exhausted, err := collect(rows, err, "read exhausted auto-resumes", scanRun)
	if err != nil {
		return nil, err
	}
	rows, err = s.pool.Query(ctx, `SELECT js.name, e.scheduled_for, e.created_at, e.detail FROM job_settings js
		CROSS JOIN LATERAL (SELECT scheduled_for, created_at, detail, outcome FROM job_schedule_events
			WHERE job_name = js.name ORDER BY id DESC LIMIT 1) e
		WHERE e.outcome = 'BLOCKED_IN_DOUBT'
		AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_name = js.name AND r.started_at >= e.created_at)`)
	blocked, err := collect(rows, err, "read blocked fires", func(row pgx.Row) (blockedRow, error) {
		var b blockedRow
		err := row.Scan(&b.job, &b.ScheduledFor, &b.At, &b.Detail)
		return b, err
	})
	if err != nil {
		return nil, err
	}
	out.Blocked = make(map[string]store.BlockedFire, len(blocked))
	for _, b := range blocked {
		out.Blocked[b.job] = b.BlockedFire
	}
	out.Exhausted = make(map[string]*bt.RunRecord, len(exhausted))
	for _, run := range exhausted {
		out.Exhausted[run.JobName] = run
	}
	for _, c := range retried {
		out.Retried[c.job] = c.n[0]
	}
	for _, c := range ambiguous {
		out.Ambiguous[c.job] = c.n[0]
	}
	for _, c := range downstream {
		out.Downstream[c.job] = c.n
	}
	return out, nil
}

// blockedRow is a job and its blocked fire.
type blockedRow struct {
	job string
	store.BlockedFire
}

// jobCounts is a job and up to three counts of it.
type jobCounts struct {
	job string
	n   [3]int64
}

func scanJobCounts(row pgx.Row) (jobCounts, error) {
	var c jobCounts
	err := row.Scan(&c.job, &c.n[0], &c.n[1], &c.n[2])
	return c, err
}
