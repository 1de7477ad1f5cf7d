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

// The auto-resume of an ended run is decided by trigger job_runs_auto_resume (migration 14) in
// the statement that ends the run; this file reads the due ones, claims one with the run that
// continues it, and edits the policy.

// SetAutoResume applies p to the job's auto-resume policy. Causes are checked by the table's
// constraint as well as by the runner.
func (s jobStore) SetAutoResume(ctx context.Context, job string, p store.AutoResumePatch) (*bt.JobSettings, error) {
	var backoff *int
	if p.Backoff != nil {
		secs := int(*p.Backoff / time.Second)
		backoff = &secs
	}
	var on []string
	if p.On != nil {
		on = make([]string, len(p.On))
		for i, c := range p.On {
			on[i] = string(c)
		}
	}
	j, err := scanJob(s.pool.QueryRow(ctx, `
		UPDATE job_settings SET
			auto_resume = COALESCE($2, auto_resume),
			auto_resume_max_attempts = COALESCE($3, auto_resume_max_attempts),
			auto_resume_backoff_seconds = COALESCE($4, auto_resume_backoff_seconds),
			auto_resume_on = COALESCE($5, auto_resume_on),
			version = version + 1, updated_at = now(), updated_by = $6
		WHERE name = $1
		RETURNING `+jobColumns, job, p.Enabled, p.MaxAttempts, backoff, on, p.Actor))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "job %q not found", job)
	}
	if err != nil {
		return nil, fmt.Errorf("set auto-resume of %s: %w", job, err)
	}
	return j, nil
}

// autoResumeStore reads and claims the ended runs waiting to be resumed.
type autoResumeStore struct{ *Store }

var _ store.AutoResumes = autoResumeStore{}

// DueAutoResumes marks SUPERSEDED the pending auto-resumes of jobs that have a later run, then
// returns the due ones of jobs neither paused nor in maintenance, earliest first, and how long
// until the next one not yet due is. All three walk the partial index job_runs_auto_resume_due.
func (s autoResumeStore) DueAutoResumes(ctx context.Context, limit int) ([]store.DueResume, *time.Duration, error) {
	// A shard waiting to be claimed again has a due time too: it is its run's, not a run to
	// resume (parent_run_id IS NULL keeps shards out of all three).
	if _, err := s.pool.Exec(ctx, `UPDATE job_runs r SET auto_resume_outcome = 'SUPERSEDED'
		WHERE r.auto_resume_at IS NOT NULL AND r.auto_resume_outcome IS NULL AND r.parent_run_id IS NULL
		  AND EXISTS (SELECT 1 FROM job_runs n WHERE n.job_name = r.job_name AND n.id > r.id AND n.parent_run_id IS NULL)`); err != nil {
		return nil, nil, fmt.Errorf("supersede auto-resumes: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT r.id, r.job_name, r.attempt, COALESCE(r.trace_parent, '') FROM job_runs r
		JOIN job_settings js ON js.name = r.job_name CROSS JOIN cluster_state cs
		WHERE r.auto_resume_at IS NOT NULL AND r.auto_resume_outcome IS NULL AND r.auto_resume_at <= statement_timestamp()
		  AND r.parent_run_id IS NULL AND NOT js.paused AND NOT cs.maintenance
		ORDER BY r.auto_resume_at LIMIT $1`, limit)
	due, err := collect(rows, err, "read due auto-resumes", func(row pgx.Row) (store.DueResume, error) {
		var d store.DueResume
		return d, row.Scan(&d.RunID, &d.JobName, &d.Attempt, &d.TraceParent)
	})
	if err != nil {
		return nil, nil, err
	}
	var secs *float64
	err = s.pool.QueryRow(ctx, `SELECT extract(epoch FROM min(auto_resume_at) - statement_timestamp())::float8 FROM job_runs
		WHERE auto_resume_at IS NOT NULL AND auto_resume_outcome IS NULL AND auto_resume_at > statement_timestamp()
			AND parent_run_id IS NULL`).Scan(&secs)
	if err != nil {
		return nil, nil, fmt.Errorf("read next auto-resume: %w", err)
	}
	if secs == nil {
		return due, nil, nil
	}
	next := time.Duration(*secs * float64(time.Second))
	return due, &next, nil
}

// claimAutoResume claims ended run of for the run that continues it, in the insert's
// transaction and under its lock on the job's settings (so no other start of the job runs in
// between): the ended run must still wait, be due, and be the job's latest run. It returns the
// attempt of the new run.
func claimAutoResume(ctx context.Context, tx pgx.Tx, job string, of int64) (int, error) {
	var attempt int
	err := tx.QueryRow(ctx, `SELECT attempt + 1 FROM job_runs r
		WHERE r.id = $1 AND r.job_name = $2 AND r.auto_resume_outcome IS NULL
		  AND r.auto_resume_at <= statement_timestamp()
		  AND r.parent_run_id IS NULL
		  AND NOT EXISTS (SELECT 1 FROM job_runs n WHERE n.job_name = r.job_name AND n.id > r.id AND n.parent_run_id IS NULL)
		FOR UPDATE`, of, job).Scan(&attempt)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("auto-resume of run %d: %w", of, store.ErrResumeTaken)
	}
	return attempt, err
}

// markResumed records that run of was continued by run by.
func markResumed(ctx context.Context, tx pgx.Tx, of, by int64) error {
	_, err := tx.Exec(ctx, `UPDATE job_runs SET auto_resume_outcome = 'RESUMED', auto_resume_run_id = $2 WHERE id = $1`, of, by)
	return err
}
