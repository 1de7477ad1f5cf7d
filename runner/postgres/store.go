// Package postgres is the only home of Baton's SQL: job settings, runs, fenced item writes,
// checkpoints, the ledger and the scheduler's compare-and-set claims, on PostgreSQL via pgx.
//
// Every write a worker makes for a run is fenced: it is conditioned, in the same statement, on
// the run id, the run's lease token, status RUNNING and lease_until > statement_timestamp() by
// the database clock (clock_timestamp() where the fence ends a transaction opened earlier). A
// worker that lost its lease can change nothing.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	bt "github.com/baton-run/baton/runner/batontype"
)

// ScheduleChannel is the NOTIFY channel that wakes schedulers when a schedule changes.
const ScheduleChannel = "baton_schedule"

// Store runs Baton's queries on a pgx pool.
type Store struct {
	pool *pgxpool.Pool
	// redone counts item writes refused for stale knowledge and made again as upserts.
	redone atomic.Int64
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool returns the underlying pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// RedoneWrites returns how many item writes relied on a ledger state that was not so (a row
// taken for new that existed, a row not in the state known) and were made again as upserts.
// Outside tests that inject it, anything but 0 points at a bug in what the runner tracks.
func (s *Store) RedoneWrites() int64 { return s.redone.Load() }

// Fence identifies the lease a write must still hold.
type Fence struct {
	RunID int64
	Token string
}

// LeaseState is what every fenced write returns: how long the lease has left by the database
// clock, and the operator's requests, so the worker learns of them without another round trip.
type LeaseState struct {
	Remaining       time.Duration
	CancelRequested bool
	PauseRequested  bool
	Processed       int64
	Succeeded       int64
	Failed          int64
	Skipped         int64
	Ambiguous       int64
	Checkpoint      string
	Total           *int64
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// Now returns the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.pool.QueryRow(ctx, "SELECT now()").Scan(&t)
	return t, err
}

// JobDefaults is what a job declares about itself when registered.
type JobDefaults struct {
	Name          string
	Description   string
	Cron          string
	Timezone      string
	RiskLevel     bt.RiskLevel
	RetentionDays int
	JobVersion    string
}

// EnsureJob inserts a job's settings row on first sight. An existing row keeps its
// runtime-edited schedule; only the description, risk level and version follow the code.
func (s *Store) EnsureJob(ctx context.Context, d JobDefaults) error {
	return s.EnsureJobs(ctx, []JobDefaults{d})
}

// ensureJobsChunk bounds the rows of one EnsureJobs statement, so that one statement's row
// locks are not held across thousands of rows while other instances register the same jobs.
const ensureJobsChunk = 1000

// EnsureJobs is EnsureJob for many jobs: one statement per thousand jobs instead of one round
// trip and commit per job. Names must be unique within jobs. Rows are written in name order,
// so instances registering the same jobs at once wait for each other instead of deadlocking.
func (s *Store) EnsureJobs(ctx context.Context, jobs []JobDefaults) error {
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b JobDefaults) int { return strings.Compare(a.Name, b.Name) })
	for chunk := range slices.Chunk(sorted, ensureJobsChunk) {
		n := len(chunk)
		names, descs, crons, tzs, risks, versions := make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		retention := make([]int32, n)
		for i, d := range chunk {
			names[i], descs[i], crons[i], tzs[i], risks[i], versions[i] = d.Name, d.Description, d.Cron, d.Timezone, string(d.RiskLevel), d.JobVersion
			retention[i] = int32(d.RetentionDays)
		}
		_, err := s.pool.Exec(ctx, `
			INSERT INTO job_settings (name, description, cron, timezone, risk_level, retention_days, job_version)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[], $7::text[])
			ORDER BY 1
			ON CONFLICT (name) DO UPDATE SET
				description = EXCLUDED.description,
				risk_level = EXCLUDED.risk_level,
				job_version = EXCLUDED.job_version
			WHERE job_settings.description IS DISTINCT FROM EXCLUDED.description
			   OR job_settings.risk_level IS DISTINCT FROM EXCLUDED.risk_level
			   OR job_settings.job_version IS DISTINCT FROM EXCLUDED.job_version`,
			names, descs, crons, tzs, risks, retention, versions)
		if err != nil {
			if n == 1 {
				return fmt.Errorf("ensure job %s: %w", names[0], err)
			}
			return fmt.Errorf("ensure jobs %s to %s: %w", names[0], names[n-1], err)
		}
	}
	return nil
}

const jobColumns = `name, description, cron, timezone, enabled, paused, next_scheduled_at, risk_level,
	lease_seconds, retention_days, job_version, current_generation, version, updated_at, updated_by`

func scanJob(row pgx.Row) (*bt.JobSettings, error) {
	var j bt.JobSettings
	var risk string
	err := row.Scan(&j.Name, &j.Description, &j.Cron, &j.Timezone, &j.Enabled, &j.Paused, &j.NextScheduledAt,
		&risk, &j.LeaseSeconds, &j.RetentionDays, &j.JobVersion, &j.CurrentGeneration, &j.Version, &j.UpdatedAt, &j.UpdatedBy)
	if err != nil {
		return nil, err
	}
	j.RiskLevel = bt.RiskLevel(risk)
	return &j, nil
}

// Job returns one job's settings, or ErrNotFound.
func (s *Store) Job(ctx context.Context, name string) (*bt.JobSettings, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM job_settings WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "job %q not found", name)
	}
	return j, err
}

// Jobs returns the settings of the named jobs (all jobs when names is nil), ordered by name.
func (s *Store) Jobs(ctx context.Context, names []string) ([]*bt.JobSettings, error) {
	// Two statements, not "$1 IS NULL OR name = ANY($1)": see listQuery.
	const sel = `SELECT ` + jobColumns + ` FROM job_settings`
	var rows pgx.Rows
	var err error
	if names == nil {
		rows, err = s.pool.Query(ctx, sel+` ORDER BY name`)
	} else {
		rows, err = s.pool.Query(ctx, sel+` WHERE name = ANY($1) ORDER BY name`, names)
	}
	return collectJobs(rows, err, "read jobs")
}

// collectJobs reads the job_settings rows of a query that selected jobColumns.
func collectJobs(rows pgx.Rows, err error, what string) ([]*bt.JobSettings, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*bt.JobSettings, error) { return scanJob(row) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// SchedulePatch changes a job's schedule; nil fields stay as they are.
type SchedulePatch struct {
	Cron         *string
	Timezone     *string
	Enabled      *bool
	LeaseSeconds *int // 0 clears the override
	Actor        string
	// ExpectVersion, when non-zero, makes the update fail with CONFLICT if the row changed.
	ExpectVersion int64
}

// UpdateSchedule applies p, recomputes the next fire (by clearing it; the scheduler fills it in
// from the database clock) and wakes every scheduler in the cluster.
func (s *Store) UpdateSchedule(ctx context.Context, name string, p SchedulePatch) (*bt.JobSettings, error) {
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

// NextFire is a job's next fire time, computed from its cron and timezone as they were read.
type NextFire struct {
	Name, Cron, Timezone string
	At                   time.Time
}

// SetNextFires sets the next fire of each job whose next fire is still NULL (first computation
// after registration or a change) and whose cron and timezone are still the ones the time was
// computed from, all in one statement. It returns how many it set.
func (s *Store) SetNextFires(ctx context.Context, fires []NextFire) (int64, error) {
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
func (s *Store) ClaimFire(ctx context.Context, name string, due, next time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE job_settings SET next_scheduled_at = $3
		WHERE name = $1 AND next_scheduled_at = $2 AND enabled AND NOT paused`, name, due, next)
	if err != nil {
		return false, fmt.Errorf("claim fire of %s: %w", name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ScheduleState is one scheduler pass's view: the database clock, the maintenance switch, the
// jobs that need the scheduler now and the earliest fire after now.
type ScheduleState struct {
	Now         time.Time
	Maintenance bool
	// Jobs are the enabled, unpaused jobs with a cron whose next fire is due (Next <= Now) or
	// not computed yet (Next nil), of every instance: the caller skips those it does not run.
	Jobs []ScheduledJob
	// Earliest is the earliest next fire after Now of any enabled, unpaused job; nil if none.
	Earliest *time.Time
}

// ScheduledJob is an enabled, unpaused job with a cron.
type ScheduledJob struct {
	Name     string
	Cron     string
	Timezone string
	Next     *time.Time
}

// ScheduleState reads what a scheduler pass needs, in one round trip and without reading the
// jobs that are not due: the due jobs by the job_settings_next_fire index, the jobs whose next
// fire is unset by job_settings_unscheduled, and the earliest future fire from the first entry
// of job_settings_next_fire after now. A pass costs the same with ten jobs as with ten thousand.
func (s *Store) ScheduleState(ctx context.Context) (*ScheduleState, error) {
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
	if err != nil {
		return nil, fmt.Errorf("read schedule state: %w", err)
	}
	defer rows.Close()
	st := &ScheduleState{}
	for rows.Next() {
		var name, cron, tz *string
		var next *time.Time
		if err := rows.Scan(&st.Now, &st.Maintenance, &st.Earliest, &name, &cron, &tz, &next); err != nil {
			return nil, err
		}
		if name != nil {
			st.Jobs = append(st.Jobs, ScheduledJob{Name: *name, Cron: *cron, Timezone: *tz, Next: next})
		}
	}
	return st, rows.Err()
}

// RecordScheduleEvent records a fire that did not start a run.
func (s *Store) RecordScheduleEvent(ctx context.Context, job string, at time.Time, outcome, instance, detail string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO job_schedule_events (job_name, scheduled_for, outcome, instance, detail)
		VALUES ($1, $2, $3, $4, $5)`, job, at, outcome, instance, detail)
	return err
}

// RecordMissedFires records fires that came and went while no scheduler could claim them (all
// instances down or frozen): one row each, so every fire either ran or is accounted for.
func (s *Store) RecordMissedFires(ctx context.Context, job string, at []time.Time, instance, detail string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO job_schedule_events (job_name, scheduled_for, outcome, instance, detail)
		SELECT $1, t, 'SKIPPED_MISSED', $3, $4 FROM unnest($2::timestamptz[]) AS t`, job, at, instance, detail)
	return err
}

// ScheduleEvents lists a job's recorded skipped fires, newest first.
func (s *Store) ScheduleEvents(ctx context.Context, job string, limit int) ([]bt.ScheduleEvent, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, job_name, scheduled_for, outcome, instance, detail, created_at
		FROM job_schedule_events WHERE job_name = $1 ORDER BY id DESC LIMIT $2`, job, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (bt.ScheduleEvent, error) {
		var e bt.ScheduleEvent
		err := r.Scan(&e.ID, &e.JobName, &e.ScheduledFor, &e.Outcome, &e.Instance, &e.Detail, &e.CreatedAt)
		return e, err
	})
}
