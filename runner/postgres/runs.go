package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	bt "github.com/baton-run/baton/runner/batontype"
)

const runColumns = `id, job_name, status, trigger, mode, requested_by, instance, lease_seconds, lease_until, heartbeat_at,
	cancel_requested, COALESCE(cancel_requested_by, ''), COALESCE(pause_reason, ''), generation, resumed_from, replay_request_id,
	scheduled_for, checkpoint, start_checkpoint, total, processed, succeeded, failed, skipped, ambiguous, job_version,
	COALESCE(stop_reason, ''), message, started_at, activated_at, finished_at, last_progress_at, last_checkpoint_at, generation_started_at`

func scanRun(row pgx.Row) (*bt.RunRecord, error) {
	var r bt.RunRecord
	var status, trigger, mode, pause, stop string
	err := row.Scan(&r.ID, &r.JobName, &status, &trigger, &mode, &r.RequestedBy, &r.Instance, &r.LeaseSeconds, &r.LeaseUntil,
		&r.HeartbeatAt, &r.CancelRequested, &r.CancelBy, &pause, &r.Generation, &r.ResumedFrom, &r.ReplayRequestID,
		&r.ScheduledFor, &r.Checkpoint, &r.StartCheckpoint, &r.Total, &r.Processed, &r.Succeeded, &r.Failed, &r.Skipped,
		&r.Ambiguous, &r.JobVersion, &stop, &r.Message, &r.StartedAt, &r.ActivatedAt, &r.FinishedAt, &r.LastProgressAt, &r.LastCheckpointAt, &r.GenerationStartedAt)
	if err != nil {
		return nil, err
	}
	r.Status, r.Trigger, r.Mode = bt.RunStatus(status), bt.Trigger(trigger), bt.Mode(mode)
	r.PauseReason, r.StopReason = bt.StopReason(pause), bt.StopReason(stop)
	return &r, nil
}

// NewRun describes a run to insert.
type NewRun struct {
	JobName      string
	Trigger      bt.Trigger
	Mode         bt.Mode
	Actor        string
	Instance     string
	Token        string
	LeaseSeconds int
	JobVersion   string
	ScheduledFor *time.Time
	// Generation, when non-zero, pins the ledger generation (replays of an older run).
	Generation      int64
	ReplayRequestID *int64
	// FromStart makes a RESUME-mode run begin with no checkpoint (replays walk every target;
	// the ledger decides per target).
	FromStart bool
}

// ErrFireTaken is InsertRun's refusal of a SCHEDULED run for an instant that already started
// one (the job_runs_one_per_fire index): the fire was claimed twice, and this claim is void.
var ErrFireTaken = errors.New("the fire already started a run")

func violatedConstraint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// InsertRun inserts a STARTING run holding a fresh lease: the job's lease override when set,
// else n.LeaseSeconds (activation and every renewal extend it by the same length). RESTART
// opens a new generation; RESUME keeps the job's current one and starts from its last
// committed checkpoint. The partial unique index refuses a second active run: that comes back
// as ALREADY_RUNNING. A second run for one fire comes back as ErrFireTaken.
func (s *Store) InsertRun(ctx context.Context, n NewRun) (*bt.RunRecord, error) {
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
	checkpoint := ""
	var resumedFrom *int64
	switch {
	case n.Generation != 0:
		gen = n.Generation
	case n.Mode == bt.ModeRestart:
		gen++
		if _, err := tx.Exec(ctx, `UPDATE job_settings SET current_generation = $2 WHERE name = $1`, n.JobName, gen); err != nil {
			return nil, err
		}
	}
	if n.Mode == bt.ModeResume && n.Generation == 0 && !n.FromStart {
		err := tx.QueryRow(ctx, `SELECT token FROM job_checkpoints WHERE job_name = $1 AND generation = $2 AND shard = ''`,
			n.JobName, gen).Scan(&checkpoint)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		err = tx.QueryRow(ctx, `SELECT id FROM job_runs WHERE job_name = $1 AND generation = $2 ORDER BY id DESC LIMIT 1`,
			n.JobName, gen).Scan(&resumedFrom)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
	}
	run, err := scanRun(tx.QueryRow(ctx, `
		INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until,
			generation, resumed_from, replay_request_id, scheduled_for, checkpoint, start_checkpoint, job_version, generation_started_at)
		VALUES ($1, 'STARTING', $2, $3, $4, $5, $6, $7::integer, statement_timestamp() + make_interval(secs => $7::integer), $8, $9, $10, $11, $12, $12, $13,
			COALESCE((SELECT min(started_at) FROM job_runs WHERE job_name = $1 AND generation = $8), statement_timestamp()))
		RETURNING `+runColumns,
		n.JobName, string(n.Trigger), string(n.Mode), n.Actor, n.Instance, n.Token, n.LeaseSeconds,
		gen, resumedFrom, n.ReplayRequestID, n.ScheduledFor, checkpoint, n.JobVersion))
	if isUniqueViolation(err) {
		if violatedConstraint(err) == "job_runs_one_per_fire" {
			return nil, fmt.Errorf("insert run of %s for the fire of %s: %w", n.JobName, n.ScheduledFor.UTC().Format(time.RFC3339), ErrFireTaken)
		}
		return nil, bt.Errorf(bt.CodeAlreadyRunning, "job %q already has an active run", n.JobName)
	}
	if err != nil {
		return nil, fmt.Errorf("insert run of %s: %w", n.JobName, err)
	}
	return run, tx.Commit(ctx)
}

// leaseReturningAt is what a fenced write returns to the worker: the lease left by clock, the
// flags and the counters.
func leaseReturningAt(clock string) string {
	return `EXTRACT(EPOCH FROM (lease_until - ` + clock + `))::float8, cancel_requested, COALESCE(pause_reason, ''),
	processed, succeeded, failed, skipped, ambiguous, checkpoint, total`
}

// leaseReturning is leaseReturningAt by the statement's clock.
var leaseReturning = leaseReturningAt(stmtClock)

func scanLease(row pgx.Row) (LeaseState, string, error) {
	var ls LeaseState
	var secs float64
	var pause string
	err := row.Scan(&secs, &ls.CancelRequested, &pause, &ls.Processed, &ls.Succeeded, &ls.Failed, &ls.Skipped,
		&ls.Ambiguous, &ls.Checkpoint, &ls.Total)
	ls.Remaining = time.Duration(secs * float64(time.Second))
	return ls, pause, err
}

func leaseResult(row pgx.Row, what string, f Fence) (LeaseState, bt.StopReason, error) {
	ls, pause, err := scanLease(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return ls, "", &bt.Error{Code: bt.CodeLeaseLost, Message: fmt.Sprintf("%s of run %d refused: lease lost", what, f.RunID)}
	}
	if err != nil {
		return ls, "", fmt.Errorf("%s of run %d: %w", what, f.RunID, err)
	}
	return ls, bt.StopReason(pause), nil
}

// fenceCond is the lease check every worker write carries (invariant 2).
const fenceCond = `id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > statement_timestamp()`

// Activate moves a STARTING run to RUNNING and starts its lease afresh.
func (s *Store) Activate(ctx context.Context, f Fence) (LeaseState, bt.StopReason, error) {
	return leaseResult(s.pool.QueryRow(ctx, `UPDATE job_runs SET status = 'RUNNING', activated_at = statement_timestamp(), heartbeat_at = statement_timestamp(),
			lease_until = statement_timestamp() + make_interval(secs => lease_seconds)
		WHERE id = $1 AND lease_token = $2 AND status = 'STARTING' AND lease_until > statement_timestamp()
		RETURNING `+leaseReturning, f.RunID, f.Token), "activate", f)
}

// Renew extends the lease to a full lease from now (database clock).
func (s *Store) Renew(ctx context.Context, f Fence) (LeaseState, bt.StopReason, error) {
	return leaseResult(s.pool.QueryRow(ctx, `UPDATE job_runs SET lease_until = statement_timestamp() + make_interval(secs => lease_seconds),
			heartbeat_at = statement_timestamp()
		WHERE `+fenceCond+` RETURNING `+leaseReturning, f.RunID, f.Token), "renew lease", f)
}

// Poll reads the lease state without writing: how the worker learns of a cancel between items.
func (s *Store) Poll(ctx context.Context, f Fence) (LeaseState, bt.StopReason, error) {
	return leaseResult(s.pool.QueryRow(ctx, `SELECT `+leaseReturning+` FROM job_runs WHERE `+fenceCond, f.RunID, f.Token), "poll", f)
}

// SetTotal records how many items the run expects.
func (s *Store) SetTotal(ctx context.Context, f Fence, total int64) (LeaseState, bt.StopReason, error) {
	return leaseResult(s.pool.QueryRow(ctx, `UPDATE job_runs SET total = $3, heartbeat_at = statement_timestamp()
		WHERE `+fenceCond+` RETURNING `+leaseReturning, f.RunID, f.Token, total), "set total", f)
}

// Finish ends an active run with status, fenced on its lease token, and turns the run's
// intents still IN_FLIGHT into AMBIGUOUS_EFFECT (their calls may have landed; their results
// did not). A run whose lease was lost (recovered by another instance) is not touched and
// ErrLeaseLost comes back: the recoverer quarantines its intents once the lease has run out.
func (s *Store) Finish(ctx context.Context, f Fence, status bt.RunStatus, reason bt.StopReason, message string) (*bt.RunRecord, error) {
	var stop *string
	if reason != "" {
		r := string(reason)
		stop = &r
	}
	// One transaction: the run ends, its checkpoint becomes the generation's resume point and its
	// intents still IN_FLIGHT become AMBIGUOUS_EFFECT together, or none of it happens. A
	// deadlock victim has written nothing, and the end is fenced, so it is simply tried again.
	var run *bt.RunRecord
	var err error
	for attempt := 1; ; attempt++ {
		run, err = s.finish(ctx, f, status, stop, message)
		if attempt < 3 && isDeadlock(err) {
			continue
		}
		break
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &bt.Error{Code: bt.CodeLeaseLost, Message: fmt.Sprintf("finish run %d refused: lease lost", f.RunID)}
	}
	if err != nil {
		return nil, fmt.Errorf("finish run %d: %w", f.RunID, err)
	}
	return run, nil
}

// isDeadlock reports whether PostgreSQL aborted the statement to break a deadlock or a
// serialization conflict.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

func (s *Store) finish(ctx context.Context, f Fence, status bt.RunStatus, stop *string, message string) (*bt.RunRecord, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	run, err := scanRun(tx.QueryRow(ctx, `WITH fin AS (
			UPDATE job_runs SET status = $3, stop_reason = $4, message = $5,
				finished_at = statement_timestamp(), lease_until = LEAST(lease_until, statement_timestamp()), pause_reason = NULL
			WHERE id = $1 AND lease_token = $2 AND status IN ('STARTING', 'RUNNING') AND lease_until > statement_timestamp()
			RETURNING *
		), cp AS (
			INSERT INTO job_checkpoints (job_name, generation, shard, token, processed, run_id)
			SELECT job_name, generation, '', checkpoint, processed, id FROM fin `+syncableCheckpoint+`
			ON CONFLICT (job_name, generation, shard) DO UPDATE SET
				token = EXCLUDED.token, processed = EXCLUDED.processed, run_id = EXCLUDED.run_id, updated_at = statement_timestamp()
		)
		SELECT `+runColumns+` FROM fin`, f.RunID, f.Token, string(status), stop, message))
	if err != nil {
		return nil, err
	}
	// Whatever the end — success, a failed result write, cancel, pause, shutdown — an intent of
	// this run still IN_FLIGHT had its call made, or possibly made, and its result never landed:
	// it is quarantined with the end, under the same fence, and the ambiguous alarm sees it.
	amb, err := markAmbiguous(ctx, tx, []int64{run.ID}, fmt.Sprintf(
		"the run ended %s before the call's result was recorded: the effect may have happened", status))
	if err != nil {
		return nil, err
	}
	run.Ambiguous += amb[run.ID]
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return run, nil
}

// syncableCheckpoint selects ended runs whose checkpoint the next RESUME should start from.
// Replays walk the generation from its start and do not move it.
const syncableCheckpoint = `WHERE checkpoint <> '' AND trigger <> 'REPLAY' AND checkpoint IS DISTINCT FROM start_checkpoint`

// syncCheckpoints copies the main-shard checkpoint of ended runs to job_checkpoints, where the
// next RESUME of the generation starts from.
func syncCheckpoints(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, runIDs []int64) error {
	_, err := q.Exec(ctx, `INSERT INTO job_checkpoints (job_name, generation, shard, token, processed, run_id)
		SELECT job_name, generation, '', checkpoint, processed, id FROM job_runs `+syncableCheckpoint+` AND id = ANY($1)
		ON CONFLICT (job_name, generation, shard) DO UPDATE SET
			token = EXCLUDED.token, processed = EXCLUDED.processed, run_id = EXCLUDED.run_id, updated_at = statement_timestamp()`, runIDs)
	if err != nil {
		return fmt.Errorf("sync checkpoints: %w", err)
	}
	return nil
}

// ExpiredRun is a run the recoverer failed because its lease ran out.
type ExpiredRun struct {
	ID         int64
	JobName    string
	Token      string
	Generation int64
	Ambiguous  int64 // IN_FLIGHT targets turned AMBIGUOUS_EFFECT
}

// RecoverExpired fails every active run whose lease has expired by the database clock and
// turns its IN_FLIGHT ledger rows into AMBIGUOUS_EFFECT, all in one transaction.
func (s *Store) RecoverExpired(ctx context.Context) ([]ExpiredRun, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	// SKIP LOCKED: a run whose row is locked by a stalled worker's open item transaction is
	// left for a later pass (the worker's session is cut off after the lease by
	// idle_in_transaction_session_timeout, which releases it) instead of blocking this pass
	// and every scheduled fire behind it.
	rows, err := tx.Query(ctx, `UPDATE job_runs SET status = 'FAILED', stop_reason = 'LEASE_EXPIRED', finished_at = statement_timestamp(),
			message = 'lease expired at ' || to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
				|| ' on instance ' || instance || ': the worker stopped renewing it; start with RESUME to continue from checkpoint '
				|| quote_literal(checkpoint)
		WHERE id IN (SELECT id FROM job_runs WHERE status IN ('STARTING', 'RUNNING') AND lease_until < statement_timestamp() FOR UPDATE SKIP LOCKED)
		RETURNING id, job_name, lease_token, generation`)
	if err != nil {
		return nil, fmt.Errorf("recover expired leases: %w", err)
	}
	expired, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ExpiredRun, error) {
		var e ExpiredRun
		err := r.Scan(&e.ID, &e.JobName, &e.Token, &e.Generation)
		return e, err
	})
	if err != nil || len(expired) == 0 {
		return nil, err
	}
	ids := make([]int64, len(expired))
	for i, e := range expired {
		ids[i] = e.ID
	}
	if err := syncCheckpoints(ctx, tx, ids); err != nil {
		return nil, err
	}
	amb, err := markAmbiguous(ctx, tx, ids, "the worker lost its lease while the call was in flight")
	if err != nil {
		return nil, err
	}
	for i := range expired {
		expired[i].Ambiguous = amb[expired[i].ID]
	}
	return expired, tx.Commit(ctx)
}

// markAmbiguous turns the IN_FLIGHT ledger rows of the given runs into AMBIGUOUS_EFFECT and
// keeps the counters in step. It returns how many rows each run had.
func markAmbiguous(ctx context.Context, tx pgx.Tx, runIDs []int64, why string) (map[int64]int64, error) {
	rows, err := tx.Query(ctx, `
		WITH amb AS (
			UPDATE job_ledger l SET state = 'AMBIGUOUS_EFFECT', last_error = $2,
				-- Settled as part of the run's end: at the moment the run ended, never after it.
				updated_at = COALESCE(r.finished_at, statement_timestamp())
			FROM job_runs r
			WHERE r.id = l.run_id AND l.run_id = ANY($1) AND l.state = 'IN_FLIGHT'
			RETURNING l.job_name, l.generation, l.run_id
		), per_run AS (
			SELECT job_name, generation, run_id, count(*) AS n FROM amb GROUP BY 1, 2, 3
		), cnt AS (
			INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n)
			SELECT job_name, generation, 0, 'AMBIGUOUS_EFFECT', sum(n) FROM per_run GROUP BY 1, 2
			UNION ALL SELECT job_name, generation, 0, 'IN_FLIGHT', -sum(n) FROM per_run GROUP BY 1, 2
			UNION ALL SELECT job_name, generation, run_id, 'AMBIGUOUS_EFFECT', n FROM per_run
			ON CONFLICT (job_name, generation, run_id, state) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n
		)
		SELECT run_id, n FROM per_run`, runIDs, why)
	if err != nil {
		return nil, fmt.Errorf("mark in-flight targets ambiguous: %w", err)
	}
	out := map[int64]int64{}
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for id, n := range out {
		if _, err := tx.Exec(ctx, `UPDATE job_runs SET ambiguous = ambiguous + $2 WHERE id = $1`, id, n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RequestCancel sets the cancel flag of an active run. The worker sees it on its next fenced
// write and stops at the item boundary.
func (s *Store) RequestCancel(ctx context.Context, runID int64, actor string) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `UPDATE job_runs SET cancel_requested = true,
			cancel_requested_by = $2, cancel_requested_at = statement_timestamp()
		WHERE id = $1 AND status IN ('STARTING', 'RUNNING') RETURNING `+runColumns, runID, actor))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.Run(ctx, runID); err != nil {
			return nil, err
		}
		return nil, bt.Errorf(bt.CodeNotActive, "run %d is not active", runID)
	}
	return run, err
}

// Run returns one run, or NOT_FOUND.
func (s *Store) Run(ctx context.Context, id int64) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "run %d not found", id)
	}
	return run, err
}

// RunFilter selects runs, newest first, by keyset on id.
type RunFilter struct {
	JobName  string
	Statuses []bt.RunStatus
	BeforeID int64 // 0: from the newest
	Limit    int
}

// Runs lists runs matching f, newest first. Each combination of filters is its own statement
// (see listQuery), so that each keeps a plan on the index its filters need.
func (s *Store) Runs(ctx context.Context, f RunFilter) ([]*bt.RunRecord, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	var q listQuery
	if f.JobName != "" {
		q.where("job_name = %s", f.JobName)
	}
	q.oneOf("status", strs(f.Statuses))
	if f.BeforeID != 0 {
		q.where("id < %s", f.BeforeID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+runColumns+` FROM job_runs`, "id DESC", f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var out []*bt.RunRecord
	err = collectRuns(rows, func(r *bt.RunRecord) { out = append(out, r) })
	return out, err
}

// ActiveRun returns the job's active run, or nil.
func (s *Store) ActiveRun(ctx context.Context, job string) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs
		WHERE job_name = $1 AND status IN ('STARTING', 'RUNNING')`, job))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return run, err
}

// RunErrors lists a run's error rows in insertion order after afterID.
func (s *Store) RunErrors(ctx context.Context, runID, afterID int64, limit int) ([]bt.RunError, error) {
	var q listQuery
	q.where("run_id = %s", runID)
	if afterID > 0 {
		q.where("id > %s", afterID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT id, run_id, item_key, failure_class, message, attempt, created_at FROM job_run_errors`, "id", limit)
	if err != nil {
		return nil, fmt.Errorf("list errors of run %d: %w", runID, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (bt.RunError, error) {
		var e bt.RunError
		err := r.Scan(&e.ID, &e.RunID, &e.ItemKey, &e.FailureClass, &e.Message, &e.Attempt, &e.CreatedAt)
		return e, err
	})
}

// SetPaused pauses or resumes a job. Pausing disables its schedule and asks its active run to
// stop at the next boundary with status PAUSED; resuming clears both. The next fire is
// recomputed from the database clock by the scheduler.
func (s *Store) SetPaused(ctx context.Context, job string, paused bool, actor string) (*bt.JobSettings, error) {
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
		_, err = tx.Exec(ctx, `UPDATE job_runs SET pause_reason = 'PAUSED' WHERE job_name = $1 AND status IN ('STARTING', 'RUNNING')`, job)
	} else {
		_, err = tx.Exec(ctx, `UPDATE job_runs SET pause_reason = NULL WHERE job_name = $1 AND status IN ('STARTING', 'RUNNING') AND pause_reason = 'PAUSED'`, job)
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ScheduleChannel, job); err != nil {
		return nil, err
	}
	return j, tx.Commit(ctx)
}

// SetMaintenance turns the cluster-wide maintenance pause on or off. Turning it on asks every
// active run to stop at its next boundary with status PAUSED; turning it off clears every
// job's next fire so schedules restart from now rather than replaying the missed fires.
func (s *Store) SetMaintenance(ctx context.Context, on bool, actor string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `UPDATE cluster_state SET maintenance = $1, updated_at = statement_timestamp(), updated_by = $2`, on, actor); err != nil {
		return err
	}
	if on {
		_, err = tx.Exec(ctx, `UPDATE job_runs SET pause_reason = 'MAINTENANCE' WHERE status IN ('STARTING', 'RUNNING') AND pause_reason IS NULL`)
	} else {
		_, err = tx.Exec(ctx, `UPDATE job_settings SET next_scheduled_at = NULL`)
		if err == nil {
			_, err = tx.Exec(ctx, `UPDATE job_runs SET pause_reason = NULL WHERE status IN ('STARTING', 'RUNNING') AND pause_reason = 'MAINTENANCE'`)
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

// Maintenance reports whether the cluster is in maintenance.
func (s *Store) Maintenance(ctx context.Context) (bool, error) {
	var on bool
	err := s.pool.QueryRow(ctx, `SELECT maintenance FROM cluster_state`).Scan(&on)
	return on, err
}

// LastRunsPausedBy returns the jobs whose latest run ended PAUSED for reason and that are not
// paused themselves: the runs to resume when that pause is lifted. Each job costs one probe of
// (job_name, id DESC), however many runs it has.
func (s *Store) LastRunsPausedBy(ctx context.Context, reason bt.StopReason) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT js.name FROM job_settings js
		CROSS JOIN LATERAL (SELECT status, stop_reason FROM job_runs WHERE job_name = js.name ORDER BY id DESC LIMIT 1) r
		WHERE NOT js.paused AND r.status = 'PAUSED' AND COALESCE(r.stop_reason, '') = $1
		ORDER BY js.name`, string(reason))
	if err != nil {
		return nil, fmt.Errorf("read runs paused by %s: %w", reason, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// LastRun returns the job's most recent run, or nil.
func (s *Store) LastRun(ctx context.Context, job string) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs WHERE job_name = $1 ORDER BY id DESC LIMIT 1`, job))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return run, err
}
