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

// runStore holds the runs and their errors (job_runs, job_run_errors).
type runStore struct{ *Store }

const runColumns = `id, job_name, status, trigger, mode, requested_by, instance, lease_seconds, lease_until, heartbeat_at,
	cancel_requested, COALESCE(cancel_requested_by, ''), COALESCE(pause_reason, ''), generation, resumed_from, replay_request_id,
	scheduled_for, checkpoint, start_checkpoint, total, processed, succeeded, failed, skipped, ambiguous, job_version,
	COALESCE(stop_reason, ''), message, started_at, activated_at, finished_at, last_progress_at, last_checkpoint_at, generation_started_at,
	attempt, auto_resume_at, COALESCE(auto_resume_outcome, ''), auto_resume_run_id,
	COALESCE(shard_total, 0), parent_run_id, COALESCE(shard_key, ''), COALESCE(shard_index, 0), shard_spec,
	COALESCE(trace_parent, '')`

func scanRun(row pgx.Row) (*bt.RunRecord, error) {
	var r bt.RunRecord
	var status, trigger, mode, pause, stop string
	var parent *int64
	var shard bt.ShardOf
	err := row.Scan(&r.ID, &r.JobName, &status, &trigger, &mode, &r.RequestedBy, &r.Instance, &r.LeaseSeconds, &r.LeaseUntil,
		&r.HeartbeatAt, &r.CancelRequested, &r.CancelBy, &pause, &r.Generation, &r.ResumedFrom, &r.ReplayRequestID,
		&r.ScheduledFor, &r.Checkpoint, &r.StartCheckpoint, &r.Total, &r.Processed, &r.Succeeded, &r.Failed, &r.Skipped,
		&r.Ambiguous, &r.JobVersion, &stop, &r.Message, &r.StartedAt, &r.ActivatedAt, &r.FinishedAt, &r.LastProgressAt, &r.LastCheckpointAt, &r.GenerationStartedAt,
		&r.Attempt, &r.AutoResumeAt, &r.AutoResumeOutcome, &r.AutoResumeRunID,
		&r.ShardTotal, &parent, &shard.Key, &shard.Index, &shard.Spec, &r.TraceParent)
	if err != nil {
		return nil, err
	}
	if parent != nil {
		shard.RunID = *parent
		r.Shard = &shard
	}
	r.Status, r.Trigger, r.Mode = bt.RunStatus(status), bt.Trigger(trigger), bt.Mode(mode)
	r.PauseReason, r.StopReason = bt.StopReason(pause), bt.StopReason(stop)
	return &r, nil
}

// InsertRun inserts a STARTING run holding a fresh lease: the job's lease override when set,
// else n.LeaseSeconds (activation and every renewal extend it by the same length). RESTART
// opens a new generation; RESUME keeps the job's current one and starts from its last
// committed checkpoint. The partial unique index refuses a second active run: that comes back
// as ALREADY_RUNNING. A second run for one fire comes back as ErrFireTaken.
func (s runStore) InsertRun(ctx context.Context, n store.NewRun) (*bt.RunRecord, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck

	var paused, maintenance bool
	var gen int64
	var leaseOverride *int
	// FOR NO KEY UPDATE, not FOR UPDATE: it serialises starts of the job all the same, but does
	// not conflict with the KEY SHARE locks that foreign keys to job_settings take. A finishing
	// run (which holds its job_runs row and then inserts a checkpoint referencing job_settings)
	// and the job's next start (which waits on that row through the one-active-run index) would
	// otherwise lock in opposite orders and deadlock.
	err = tx.QueryRow(ctx, `SELECT js.paused, cs.maintenance, js.current_generation, js.lease_seconds
		FROM job_settings js CROSS JOIN cluster_state cs WHERE js.name = $1 FOR NO KEY UPDATE OF js`, n.JobName).
		Scan(&paused, &maintenance, &gen, &leaseOverride)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "job %q not found", n.JobName)
	}
	if err != nil {
		return nil, fmt.Errorf("read job %s: %w", n.JobName, err)
	}
	switch {
	case maintenance:
		return nil, bt.Errorf(bt.CodeMaintenance, "cluster is in maintenance: no run of %q may start", n.JobName)
	case paused:
		return nil, bt.Errorf(bt.CodeJobPaused, "job %q is paused: resume it first", n.JobName)
	}
	if leaseOverride != nil && *leaseOverride > 0 {
		// The operator's override (updateJobSchedule), read under the row lock with the rest.
		n.LeaseSeconds = *leaseOverride
	}
	attempt := 0
	if n.AutoResumeOf != 0 {
		if attempt, err = claimAutoResume(ctx, tx, n.JobName, n.AutoResumeOf); err != nil {
			return nil, err
		}
	}
	switch {
	case n.Generation != 0:
		gen = n.Generation
	case n.Mode == bt.ModeRestart:
		gen++
		if _, err := tx.Exec(ctx, `UPDATE job_settings SET current_generation = $2 WHERE name = $1`, n.JobName, gen); err != nil {
			return nil, err
		}
	}
	checkpoint, resumedFrom, err := resumePoint(ctx, tx, n, gen)
	if err != nil {
		return nil, err
	}
	run, err := scanRun(tx.QueryRow(ctx, `
		INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until,
			generation, resumed_from, replay_request_id, scheduled_for, checkpoint, start_checkpoint, job_version, generation_started_at, attempt,
			trace_parent)
		VALUES ($1, 'STARTING', $2, $3, $4, $5, $6, $7::integer, statement_timestamp() + make_interval(secs => $7::integer), $8, $9, $10, $11, $12, $12, $13,
			COALESCE((SELECT min(started_at) FROM job_runs WHERE job_name = $1 AND generation = $8), statement_timestamp()), $14, NULLIF($15, ''))
		RETURNING `+runColumns,
		n.JobName, string(n.Trigger), string(n.Mode), n.Actor, n.Instance, n.Token, n.LeaseSeconds,
		gen, resumedFrom, n.ReplayRequestID, n.ScheduledFor, checkpoint, n.JobVersion, attempt, n.TraceParent))
	if isUniqueViolation(err) {
		if violatedConstraint(err) == "job_runs_one_per_fire" {
			return nil, fmt.Errorf("insert run of %s for the fire of %s: %w", n.JobName, n.ScheduledFor.UTC().Format(time.RFC3339), store.ErrFireTaken)
		}
		return nil, bt.Errorf(bt.CodeAlreadyRunning, "job %q already has an active run", n.JobName)
	}
	if err != nil {
		return nil, fmt.Errorf("insert run of %s: %w", n.JobName, err)
	}
	if err := markStarted(ctx, tx, n, run.ID); err != nil {
		return nil, err
	}
	return run, tx.Commit(ctx)
}

// markStarted records, in the run's insert, what the run was started for: the request whose
// claim it was inserted under (now EXECUTED), the ended run an AUTO_RESUME continues.
func markStarted(ctx context.Context, tx pgx.Tx, n store.NewRun, runID int64) error {
	if n.RequestClaim != "" && n.ReplayRequestID != nil {
		if err := executeClaimed(ctx, tx, *n.ReplayRequestID, runID, n.RequestClaim); err != nil {
			return err
		}
	}
	if n.AutoResumeOf != 0 {
		if err := markResumed(ctx, tx, n.AutoResumeOf, runID); err != nil {
			return fmt.Errorf("mark run %d resumed: %w", n.AutoResumeOf, err)
		}
	}
	return nil
}

// resumePoint is where a RESUME run of generation gen starts: the generation's last committed
// checkpoint and the run it continues (the generation's latest, or the ended run an
// AUTO_RESUME claimed). Other runs start from the beginning.
func resumePoint(ctx context.Context, tx pgx.Tx, n store.NewRun, gen int64) (string, *int64, error) {
	checkpoint := ""
	var resumedFrom *int64
	if n.Mode == bt.ModeResume && n.Generation == 0 && !n.FromStart {
		err := tx.QueryRow(ctx, `SELECT token FROM job_checkpoints WHERE job_name = $1 AND generation = $2 AND shard = ''`,
			n.JobName, gen).Scan(&checkpoint)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return "", nil, err
		}
		err = tx.QueryRow(ctx, `SELECT id FROM job_runs WHERE job_name = $1 AND generation = $2 AND `+topLevel+` ORDER BY id DESC LIMIT 1`,
			n.JobName, gen).Scan(&resumedFrom)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return "", nil, err
		}
	}
	if n.AutoResumeOf != 0 {
		resumedFrom = &n.AutoResumeOf
	}
	return checkpoint, resumedFrom, nil
}

// Run returns one run, or NOT_FOUND.
func (s runStore) Run(ctx context.Context, id int64) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "run %d not found", id)
	}
	return summed(ctx, s.Store, run, err)
}

// summed gives a sharded run still going the sums of its shards (sumShards).
func summed(ctx context.Context, s *Store, run *bt.RunRecord, err error) (*bt.RunRecord, error) {
	if err != nil || run == nil {
		return run, err
	}
	return run, s.sumShards(ctx, run)
}

// summedAll is summed for a list of runs.
func summedAll(ctx context.Context, s *Store, runs []*bt.RunRecord, err error) ([]*bt.RunRecord, error) {
	if err != nil {
		return nil, err
	}
	return runs, s.sumShards(ctx, runs...)
}

// topLevel keeps a run's shards out of the lists of runs: a shard is part of its run.
const topLevel = "parent_run_id IS NULL"

// Runs lists runs matching f, newest first. Each combination of filters is its own statement
// (see listQuery), so that each keeps a plan on the index its filters need.
func (s runStore) Runs(ctx context.Context, f store.RunFilter) ([]*bt.RunRecord, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	var q listQuery
	if f.JobName != "" {
		q.where("job_name = %s", f.JobName)
	}
	q.where(topLevel)
	runFilterConds(&q, f)
	rows, err := q.rows(ctx, s.pool, `SELECT `+runColumns+` FROM job_runs`, "id DESC", f.Limit)
	runs, err := collect(rows, err, "list runs", scanRun)
	return summedAll(ctx, s.Store, runs, err)
}

// startLag bounds how long before its insert a run's start time (its insert transaction's
// now()) may be taken: a start's transaction does a few short statements, under the API's
// mutation timeout (30 s) and the server's idle-in-transaction timeout.
const startLag = 10 * time.Minute

// runFilterConds adds the predicates of f other than its job. Each is one an index serves:
// (status, id DESC), (trigger, id DESC), (instance, id DESC), the primary key for the number
// and the keyset, and (started_at) for the id bounds of a time range.
func runFilterConds(q *listQuery, f store.RunFilter) {
	q.oneOf("status", strs(f.Statuses))
	q.oneOf("trigger", strs(f.Triggers))
	if f.Instance != "" {
		q.where("instance = %s", f.Instance)
	}
	// A time range is also turned into bounds on id, so that the walk of an id index (the
	// keyset order) starts and stops near the range instead of filtering the table: ids and
	// start times rise together, except that a run's start time is its insert transaction's,
	// taken up to startLag before its id. A run that started startLag or more before another
	// was inserted before it, so the run that started last before from-startLag has a smaller
	// id than every run of the range, and the first that started from to+startLag on a larger
	// one. Each bound is one probe of (started_at); the exact predicates stay.
	if f.StartedFrom != nil {
		q.where("started_at >= %s", *f.StartedFrom)
		q.where(`id > COALESCE((SELECT id FROM job_runs WHERE started_at < %s ORDER BY started_at DESC LIMIT 1), 0)`,
			f.StartedFrom.Add(-startLag))
	}
	if f.StartedBefore != nil {
		q.where("started_at < %s", *f.StartedBefore)
		q.where(`id < COALESCE((SELECT id FROM job_runs WHERE started_at >= %s ORDER BY started_at LIMIT 1), 9223372036854775807)`,
			f.StartedBefore.Add(startLag))
	}
	if f.Number != 0 {
		q.where("id = %s", f.Number)
	}
	if f.BeforeID != 0 {
		q.where("id < %s", f.BeforeID)
	}
}

// RunsByIDs returns the runs with the given ids, keyed by id. Ids that do not exist are absent.
func (s runStore) RunsByIDs(ctx context.Context, ids []int64) (map[int64]*bt.RunRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id = ANY($1)`, ids)
	runs, err := collect(rows, err, "read runs by id", scanRun)
	runs, err = summedAll(ctx, s.Store, runs, err)
	return keyed(runs, err, func(r *bt.RunRecord) int64 { return r.ID })
}

// RunsOfJobs returns, for each of jobs, its runs newest first as Runs would list them with
// the same filter (JobName aside): one index walk of (job_name, id DESC) per job, in one
// statement.
func (s runStore) RunsOfJobs(ctx context.Context, jobs []string, f store.RunFilter) (map[string][]*bt.RunRecord, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	var q listQuery
	q.param(jobs) // $1: the jobs
	q.where("job_name = j.name")
	q.where(topLevel)
	runFilterConds(&q, f)
	// Planned with its values, as Runs is (see listQuery).
	inner := q.sql(`SELECT `+runColumns+` FROM job_runs`, "id DESC", f.Limit)
	rows, err := s.pool.Query(ctx, `SELECT r.* FROM unnest($1::text[]) AS j(name) CROSS JOIN LATERAL (`+inner+`) r
		ORDER BY r.job_name, r.id DESC`, append([]any{pgx.QueryExecModeExec}, q.args...)...)
	runs, err := collect(rows, err, "read runs of jobs", scanRun)
	runs, err = summedAll(ctx, s.Store, runs, err)
	return grouped(runs, err, runJob)
}

// ActiveRun returns the job's active run, or nil.
func (s runStore) ActiveRun(ctx context.Context, job string) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs
		WHERE job_name = $1 AND status IN ('STARTING', 'RUNNING') AND `+topLevel, job))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return summed(ctx, s.Store, run, err)
}

// ActiveRunsByJobs returns the active run of each named job that has one, keyed by job name.
func (s runStore) ActiveRunsByJobs(ctx context.Context, jobs []string) (map[string]*bt.RunRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM job_runs
		WHERE job_name = ANY($1) AND status IN ('STARTING', 'RUNNING') AND `+topLevel, jobs)
	runs, err := collect(rows, err, "read active runs", scanRun)
	runs, err = summedAll(ctx, s.Store, runs, err)
	return keyed(runs, err, runJob)
}

// LastRun returns the job's most recent run, or nil.
func (s runStore) LastRun(ctx context.Context, job string) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs WHERE job_name = $1 AND `+topLevel+`
		ORDER BY id DESC LIMIT 1`, job))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return summed(ctx, s.Store, run, err)
}

// LastRunsByJobs returns the most recent run of each named job that has one, keyed by job
// name. Each job costs one index probe on (job_name, id DESC), however many runs it has.
func (s runStore) LastRunsByJobs(ctx context.Context, jobs []string) (map[string]*bt.RunRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.* FROM unnest($1::text[]) AS j(name)
		CROSS JOIN LATERAL (SELECT `+runColumns+` FROM job_runs WHERE job_name = j.name AND `+topLevel+` ORDER BY id DESC LIMIT 1) r`, jobs)
	runs, err := collect(rows, err, "read last runs", scanRun)
	runs, err = summedAll(ctx, s.Store, runs, err)
	return keyed(runs, err, runJob)
}

// GenerationRun returns the newest run of a job's generation, or nil when it has none: the
// run a RESTART request names as its source.
func (s runStore) GenerationRun(ctx context.Context, job string, gen int64) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs
		WHERE job_name = $1 AND generation = $2 AND `+topLevel+` ORDER BY id DESC LIMIT 1`, job, gen))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the newest run of %s generation %d: %w", job, gen, err)
	}
	return summed(ctx, s.Store, run, nil)
}

// LastRunsPausedBy returns the jobs whose latest run ended PAUSED for reason and that are not
// paused themselves: the runs to resume when that pause is lifted. Each job costs one probe of
// (job_name, id DESC), however many runs it has.
func (s runStore) LastRunsPausedBy(ctx context.Context, reason bt.StopReason) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT js.name FROM job_settings js
		CROSS JOIN LATERAL (SELECT status, stop_reason FROM job_runs WHERE job_name = js.name AND `+topLevel+` ORDER BY id DESC LIMIT 1) r
		WHERE NOT js.paused AND r.status = 'PAUSED' AND COALESCE(r.stop_reason, '') = $1
		ORDER BY js.name`, string(reason))
	return collect(rows, err, "read runs paused by "+string(reason), scanOne[string])
}

// RequestCancel sets the cancel flag of an active run and records the request on its
// timeline, in one statement. The worker sees the flag on its next fenced write and stops at
// the item boundary; a sharded run's shards see their run's flag on theirs, and its shards no
// instance holds end at once (settleStopping). A shard is cancelled through its run.
func (s runStore) RequestCancel(ctx context.Context, runID int64, actor string) (*bt.RunRecord, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("cancel run %d: %w", runID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	run, err := scanRun(tx.QueryRow(ctx, `WITH c AS (
			UPDATE job_runs SET cancel_requested = true,
				cancel_requested_by = $2, cancel_requested_at = statement_timestamp()
			WHERE id = $1 AND status IN ('STARTING', 'RUNNING') AND `+topLevel+` RETURNING *
		), e AS (
			INSERT INTO job_run_events (run_id, kind, actor) SELECT id, 'CANCEL_REQUESTED', $2 FROM c
		)
		SELECT `+runColumns+` FROM c`, runID, actor))
	if errors.Is(err, pgx.ErrNoRows) {
		_ = tx.Rollback(ctx) // its connection back before the next read
		run, err := s.Run(ctx, runID)
		if err != nil {
			return nil, err
		}
		if sh := run.Shard; sh != nil {
			return nil, bt.Errorf(bt.CodeInvalidInput, "run %d is shard %q of run %d: cancel run %d", runID, sh.Key, sh.RunID, sh.RunID)
		}
		return nil, bt.Errorf(bt.CodeNotActive, "run %d is not active", runID)
	}
	if err != nil {
		return nil, fmt.Errorf("cancel run %d: %w", runID, err)
	}
	if err := settleStopping(ctx, tx, []int64{run.ID}); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit the cancel of run %d: %w", runID, err)
	}
	return s.Run(ctx, run.ID)
}

// settleStopping settles the sharded runs among runIDs (baton_settle_run) after a cancel or a
// pause: their PENDING shards end at once, and a run whose other shards have ended ends too.
func settleStopping(ctx context.Context, tx pgx.Tx, runIDs []int64) error {
	if _, err := tx.Exec(ctx, `SELECT baton_settle_run(id) FROM job_runs WHERE id = ANY($1) AND shard_total IS NOT NULL`, runIDs); err != nil {
		return fmt.Errorf("settle stopping sharded runs: %w", err)
	}
	return nil
}

// runJob keys a run by its job.
func runJob(r *bt.RunRecord) string { return r.JobName }
