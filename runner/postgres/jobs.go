package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// jobStore holds the job settings (job_settings).
type jobStore struct{ *Store }

const jobColumns = `name, description, cron, timezone, enabled, paused, next_scheduled_at, risk_level,
	lease_seconds, retention_days, job_version, current_generation, version, updated_at, updated_by,
	auto_resume, auto_resume_max_attempts, auto_resume_backoff_seconds, auto_resume_on, max_concurrent_shards`

func scanJob(row pgx.Row) (*bt.JobSettings, error) {
	var j bt.JobSettings
	var risk string
	var backoff int
	var on []string
	err := row.Scan(&j.Name, &j.Description, &j.Cron, &j.Timezone, &j.Enabled, &j.Paused, &j.NextScheduledAt,
		&risk, &j.LeaseSeconds, &j.RetentionDays, &j.JobVersion, &j.CurrentGeneration, &j.Version, &j.UpdatedAt, &j.UpdatedBy,
		&j.AutoResume.Enabled, &j.AutoResume.MaxAttempts, &backoff, &on, &j.MaxConcurrentShards)
	if err != nil {
		return nil, err
	}
	j.RiskLevel = bt.RiskLevel(risk)
	j.AutoResume.Backoff = time.Duration(backoff) * time.Second
	j.AutoResume.On = make([]bt.ResumeCause, len(on))
	for i, c := range on {
		j.AutoResume.On[i] = bt.ResumeCause(c)
	}
	return &j, nil
}

// EnsureJob inserts a job's settings row on first sight. An existing row keeps its
// runtime-edited schedule; only the description, risk level and version follow the code.
func (s jobStore) EnsureJob(ctx context.Context, d store.JobDefaults) error {
	return s.EnsureJobs(ctx, []store.JobDefaults{d})
}

// ensureJobsChunk bounds the rows of one EnsureJobs statement, so that one statement's row
// locks are not held across thousands of rows while other instances register the same jobs.
const ensureJobsChunk = 1000

// EnsureJobs is EnsureJob for many jobs: one statement per thousand jobs instead of one round
// trip and commit per job. Names must be unique within jobs. Rows are written in name order,
// so instances registering the same jobs at once wait for each other instead of deadlocking.
func (s jobStore) EnsureJobs(ctx context.Context, jobs []store.JobDefaults) error {
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b store.JobDefaults) int { return strings.Compare(a.Name, b.Name) })
	for chunk := range slices.Chunk(sorted, ensureJobsChunk) {
		n := len(chunk)
		c := defaultColumns(chunk)
		_, err := s.pool.Exec(ctx, `
			INSERT INTO job_settings (name, description, cron, timezone, risk_level, retention_days, job_version,
				auto_resume, auto_resume_max_attempts, auto_resume_backoff_seconds, auto_resume_on, max_concurrent_shards)
			SELECT name, descr, cron, tz, risk, retention, version, ar, ar_max, ar_backoff, string_to_array(ar_on, ','), max_shards
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[], $7::text[],
				$8::boolean[], $9::integer[], $10::integer[], $11::text[], $12::integer[])
				AS d(name, descr, cron, tz, risk, retention, version, ar, ar_max, ar_backoff, ar_on, max_shards)
			ORDER BY 1
			ON CONFLICT (name) DO UPDATE SET
				description = EXCLUDED.description,
				risk_level = EXCLUDED.risk_level,
				job_version = EXCLUDED.job_version
			WHERE job_settings.description IS DISTINCT FROM EXCLUDED.description
			   OR job_settings.risk_level IS DISTINCT FROM EXCLUDED.risk_level
			   OR job_settings.job_version IS DISTINCT FROM EXCLUDED.job_version`,
			c.names, c.descs, c.crons, c.tzs, c.risks, c.retention, c.versions, c.autoResume, c.maxAttempts, c.backoff, c.on, c.maxShards)
		if err != nil {
			if n == 1 {
				return fmt.Errorf("ensure job %s: %w", c.names[0], err)
			}
			return fmt.Errorf("ensure jobs %s to %s: %w", c.names[0], c.names[n-1], err)
		}
	}
	return nil
}

// jobDefaultColumns are JobDefaults as the columns of one EnsureJobs statement.
type jobDefaultColumns struct {
	names, descs, crons, tzs, risks, versions, on []string
	retention, maxAttempts, backoff, maxShards    []int32
	autoResume                                    []bool
}

func defaultColumns(jobs []store.JobDefaults) jobDefaultColumns {
	n := len(jobs)
	c := jobDefaultColumns{names: make([]string, n), descs: make([]string, n), crons: make([]string, n), tzs: make([]string, n),
		risks: make([]string, n), versions: make([]string, n), on: make([]string, n), retention: make([]int32, n),
		maxAttempts: make([]int32, n), backoff: make([]int32, n), autoResume: make([]bool, n), maxShards: make([]int32, n)}
	for i, d := range jobs {
		c.names[i], c.descs[i], c.crons[i], c.tzs[i], c.risks[i], c.versions[i] = d.Name, d.Description, d.Cron, d.Timezone, string(d.RiskLevel), d.JobVersion
		c.retention[i], c.maxShards[i] = int32(d.RetentionDays), int32(d.MaxConcurrentShards)
		p := d.AutoResume
		if p.MaxAttempts == 0 { // not given: the schema's default policy
			p = bt.AutoResumePolicy{Enabled: true, MaxAttempts: 3, Backoff: 5 * time.Second, On: bt.ResumeCauses}
		}
		c.autoResume[i], c.maxAttempts[i], c.backoff[i] = p.Enabled, int32(p.MaxAttempts), int32(p.Backoff/time.Second)
		causes := make([]string, len(p.On))
		for k, cause := range p.On {
			causes[k] = string(cause)
		}
		c.on[i] = strings.Join(causes, ",")
	}
	return c
}

// Job returns one job's settings, or ErrNotFound.
func (s jobStore) Job(ctx context.Context, name string) (*bt.JobSettings, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM job_settings WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "job %q not found", name)
	}
	return j, err
}

// Jobs returns the settings of the named jobs (all jobs when names is nil), ordered by name.
func (s jobStore) Jobs(ctx context.Context, names []string) ([]*bt.JobSettings, error) {
	// Two statements, not "$1 IS NULL OR name = ANY($1)": see listQuery.
	const sel = `SELECT ` + jobColumns + ` FROM job_settings`
	var rows pgx.Rows
	var err error
	if names == nil {
		rows, err = s.pool.Query(ctx, sel+` ORDER BY name`)
	} else {
		rows, err = s.pool.Query(ctx, sel+` WHERE name = ANY($1) ORDER BY name`, names)
	}
	return collect(rows, err, "read jobs", scanJob)
}

// JobsPage returns up to limit jobs ordered by name, after the job named after ("" from the
// first): a keyset page on the primary key.
func (s jobStore) JobsPage(ctx context.Context, after string, limit int) ([]*bt.JobSettings, error) {
	const sel = `SELECT ` + jobColumns + ` FROM job_settings`
	var rows pgx.Rows
	var err error
	if after == "" {
		rows, err = s.pool.Query(ctx, sel+` ORDER BY name LIMIT $1`, limit)
	} else {
		rows, err = s.pool.Query(ctx, sel+` WHERE name > $1 ORDER BY name LIMIT $2`, after, limit)
	}
	return collect(rows, err, "read a page of jobs", scanJob)
}

// SetPaused pauses or resumes a job. Pausing disables its schedule and asks its active run to
// stop at the next boundary with status PAUSED; resuming clears both. The next fire is
// recomputed from the database clock by the scheduler.
func (s jobStore) SetPaused(ctx context.Context, job string, paused bool, actor string) (*bt.JobSettings, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	j, err := scanJob(tx.QueryRow(ctx, `UPDATE job_settings SET paused = $2, next_scheduled_at = NULL,
			version = version + 1, updated_at = statement_timestamp(), updated_by = $3
		WHERE name = $1 RETURNING `+jobColumns, job, paused, actor))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "job %q not found", job)
	}
	if err != nil {
		return nil, err
	}
	if paused {
		// A sharded run's shards see their run's pause on their next write; its shards no
		// instance holds end at once (settleStopping).
		var ids []int64
		rows, qerr := tx.Query(ctx, `WITH p AS (
				UPDATE job_runs SET pause_reason = 'PAUSED' WHERE job_name = $1 AND status IN ('STARTING', 'RUNNING') AND `+topLevel+` RETURNING id
			), e AS (`+recordRunEvents(store.EventPauseRequested, "p", "$2", "job paused")+`)
			SELECT id FROM p`, job, actor)
		if ids, err = collect(rows, qerr, "pause the runs of "+job, scanOne[int64]); err == nil {
			err = settleStopping(ctx, tx, ids)
		}
	} else {
		_, err = tx.Exec(ctx, `WITH p AS (
				UPDATE job_runs SET pause_reason = NULL WHERE job_name = $1 AND status IN ('STARTING', 'RUNNING') AND `+topLevel+`
					AND pause_reason = 'PAUSED' RETURNING id
			) `+recordRunEvents(store.EventPauseLifted, "p", "$2", "job resumed"), job, actor)
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ScheduleChannel, job); err != nil {
		return nil, err
	}
	return j, tx.Commit(ctx)
}
