package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// leaseStore holds the leases of runs: activation, renewal, the end and recovery.
type leaseStore struct{ *Store }

// leaseReturningAt is what a fenced write returns to the worker: the lease left by clock, the
// flags, the counters, and the lease end and heartbeat as the row now has them (for the run's
// live events). A shard's flags are its run's: cancel and pause are asked of the run.
func leaseReturningAt(clock string) string {
	return `EXTRACT(EPOCH FROM (lease_until - ` + clock + `))::float8,
	CASE WHEN parent_run_id IS NULL THEN cancel_requested ELSE baton_run_cancel_requested(parent_run_id) END,
	COALESCE(CASE WHEN parent_run_id IS NULL THEN pause_reason ELSE baton_run_pause_reason(parent_run_id) END, ''),
	processed, succeeded, failed, skipped, ambiguous, checkpoint, total, lease_until, heartbeat_at`
}

// leaseReturning is leaseReturningAt by the statement's clock.
var leaseReturning = leaseReturningAt(stmtClock)

func scanLease(row pgx.Row) (store.LeaseState, string, error) {
	var ls store.LeaseState
	var secs float64
	var pause string
	err := row.Scan(&secs, &ls.CancelRequested, &pause, &ls.Processed, &ls.Succeeded, &ls.Failed, &ls.Skipped,
		&ls.Ambiguous, &ls.Checkpoint, &ls.Total, &ls.LeaseUntil, &ls.HeartbeatAt)
	ls.Remaining = time.Duration(secs * float64(time.Second))
	return ls, pause, err
}

func leaseResult(row pgx.Row, what string, f store.Fence) (store.LeaseState, bt.StopReason, error) {
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
func (s leaseStore) Activate(ctx context.Context, f store.Fence) (store.LeaseState, bt.StopReason, error) {
	return leaseResult(s.pool.QueryRow(ctx, `UPDATE job_runs SET status = 'RUNNING', activated_at = statement_timestamp(), heartbeat_at = statement_timestamp(),
			lease_until = statement_timestamp() + make_interval(secs => lease_seconds)
		WHERE id = $1 AND lease_token = $2 AND status = 'STARTING' AND lease_until > statement_timestamp()
		RETURNING `+leaseReturning, f.RunID, f.Token), "activate", f)
}

// Renew extends the lease to a full lease from now (database clock), and records the renewal
// on the run's timeline in the same statement: a refused renewal records nothing.
func (s leaseStore) Renew(ctx context.Context, f store.Fence) (store.LeaseState, bt.StopReason, error) {
	return leaseResult(s.pool.QueryRow(ctx, `WITH r AS (
			UPDATE job_runs SET lease_until = statement_timestamp() + make_interval(secs => lease_seconds),
				heartbeat_at = statement_timestamp()
			WHERE `+fenceCond+` RETURNING *
		), e AS (
			INSERT INTO job_run_events (run_id, kind, detail)
			SELECT id, 'LEASE_RENEWED', 'lease until ' || to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM r
		)
		SELECT `+leaseReturning+` FROM r`, f.RunID, f.Token), "renew lease", f)
}

// Poll reads the lease state without writing: how the worker learns of a cancel between items.
func (s leaseStore) Poll(ctx context.Context, f store.Fence) (store.LeaseState, bt.StopReason, error) {
	return leaseResult(s.pool.QueryRow(ctx, `SELECT `+leaseReturning+` FROM job_runs WHERE `+fenceCond, f.RunID, f.Token), "poll", f)
}

// SetTotal records how many items the run expects.
func (s leaseStore) SetTotal(ctx context.Context, f store.Fence, total int64) (store.LeaseState, bt.StopReason, error) {
	return leaseResult(s.pool.QueryRow(ctx, `UPDATE job_runs SET total = $3, heartbeat_at = statement_timestamp()
		WHERE `+fenceCond+` RETURNING `+leaseReturning, f.RunID, f.Token, total), "set total", f)
}

// Finish ends an active run with status, fenced on its lease token, and turns the run's
// intents still IN_FLIGHT into AMBIGUOUS_EFFECT (their calls may have landed; their results
// did not). A run whose lease was lost (recovered by another instance) is not touched and
// ErrLeaseLost comes back: the recoverer quarantines its intents once the lease has run out.
func (s leaseStore) Finish(ctx context.Context, f store.Fence, status bt.RunStatus, reason bt.StopReason, message string) (*bt.RunRecord, error) {
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

func (s leaseStore) finish(ctx context.Context, f store.Fence, status bt.RunStatus, stop *string, message string) (*bt.RunRecord, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	run, err := scanRun(tx.QueryRow(ctx, `WITH fin AS (
			UPDATE job_runs SET status = $3, stop_reason = $4, message = $5,
				finished_at = statement_timestamp(), lease_until = LEAST(lease_until, statement_timestamp()), pause_reason = NULL
			WHERE id = $1 AND lease_token = $2 AND status IN ('STARTING', 'RUNNING') AND lease_until > statement_timestamp()
				AND shard_total IS NULL
			RETURNING *
		), cp AS (`+checkpointSync("fin")+`)
		SELECT `+runColumns+` FROM fin`, f.RunID, f.Token, string(status), stop, message))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.handOver(ctx, tx, f)
	}
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
	if run.Status != bt.StatusPending {
		run.Ambiguous += amb[run.ID] // a shard made PENDING counts it when its next holder meets it
	}
	if run.Shard != nil {
		// The shard's run ends with its last shard. Settled here, after everything this end
		// writes, so that the one shard whose end settles the run knows it (the trigger at
		// commit would settle it all the same).
		if err := tx.QueryRow(ctx, `SELECT baton_settle_run($1)`, run.Shard.RunID).Scan(&run.Shard.RunEnded); err != nil {
			return nil, fmt.Errorf("settle run %d: %w", run.Shard.RunID, err)
		}
	}
	if run.StopReason == bt.StopCondition {
		// The run stops at the boundary right after the trip: the trip is recorded with its end,
		// with the condition and its value (the message).
		if _, err := tx.Exec(ctx, `INSERT INTO job_run_events (run_id, kind, detail, at) VALUES ($1, 'STOP_CONDITION_TRIPPED', $2, $3)`,
			run.ID, run.Message, run.FinishedAt); err != nil {
			return nil, fmt.Errorf("record the stop condition of run %d: %w", run.ID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return run, nil
}

// handOver is the end of a run whose shards are planned, its worker ending it after all (the
// reply of PlanShards was lost, and the worker took the plan for failed): the run is its
// shards' now, and ends with the last of them, so the worker's end only gives up the run's
// lease. The run is settled at once when none of its shards is left to work. ErrNoRows when
// the run is not the worker's to end.
func (s leaseStore) handOver(ctx context.Context, tx pgx.Tx, f store.Fence) (*bt.RunRecord, error) {
	var id int64
	if err := tx.QueryRow(ctx, `UPDATE job_runs SET lease_until = LEAST(lease_until, statement_timestamp()), heartbeat_at = statement_timestamp()
		WHERE id = $1 AND lease_token = $2 AND status IN ('STARTING', 'RUNNING') AND lease_until > statement_timestamp()
			AND shard_total IS NOT NULL
		RETURNING id`, f.RunID, f.Token).Scan(&id); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT baton_settle_run($1)`, id); err != nil {
		return nil, fmt.Errorf("settle run %d: %w", id, err)
	}
	run, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id = $1`, id))
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return run, nil
}

// checkpointSync copies the checkpoint of the ended runs from (a CTE or a subquery over
// job_runs) to job_checkpoints, where the next RESUME of the generation starts from: a run's
// under the shard ”, a shard's under its key, the row naming the run. A shard that
// SUCCEEDED is marked done in the generation. Replays walk the generation from its start and
// move nothing.
func checkpointSync(from string) string {
	return `INSERT INTO job_checkpoints (job_name, generation, shard, token, processed, run_id, done)
	SELECT job_name, generation, COALESCE(shard_key, ''),
		CASE WHEN checkpoint IS DISTINCT FROM start_checkpoint THEN checkpoint ELSE '' END, processed,
		COALESCE(parent_run_id, id), parent_run_id IS NOT NULL AND status = 'SUCCEEDED'
	FROM ` + from + `
	WHERE trigger <> 'REPLAY' AND ((checkpoint <> '' AND checkpoint IS DISTINCT FROM start_checkpoint)
		OR (parent_run_id IS NOT NULL AND status = 'SUCCEEDED'))
	ON CONFLICT (job_name, generation, shard) DO UPDATE SET
		token = CASE WHEN EXCLUDED.token <> '' THEN EXCLUDED.token ELSE job_checkpoints.token END,
		processed = EXCLUDED.processed, run_id = EXCLUDED.run_id, done = job_checkpoints.done OR EXCLUDED.done,
		updated_at = statement_timestamp()`
}

// syncCheckpoints copies the checkpoints of ended runs to job_checkpoints (checkpointSync).
func syncCheckpoints(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, runIDs []int64) error {
	_, err := q.Exec(ctx, checkpointSync(`(SELECT * FROM job_runs WHERE id = ANY($1)) r`), runIDs)
	if err != nil {
		return fmt.Errorf("sync checkpoints: %w", err)
	}
	return nil
}

// RecoverExpired fails every active run whose lease has expired by the database clock and
// turns its IN_FLIGHT ledger rows into AMBIGUOUS_EFFECT, all in one transaction.
func (s leaseStore) RecoverExpired(ctx context.Context, notCalled store.NotCalledFunc) ([]store.ExpiredRun, error) {
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
		WHERE id IN (SELECT id FROM job_runs WHERE status IN ('STARTING', 'RUNNING') AND lease_until < statement_timestamp()
			AND shard_total IS NULL FOR UPDATE SKIP LOCKED)
		RETURNING id, job_name, lease_token, generation, status, parent_run_id, COALESCE(trace_parent, '')`)
	expired, err := collect(rows, err, "recover expired leases", scanExpiredRun)
	if err != nil {
		return nil, err
	}
	if len(expired) > 0 {
		ids := make([]int64, len(expired))
		for i, e := range expired {
			ids[i] = e.ID
		}
		if err := syncCheckpoints(ctx, tx, ids); err != nil {
			return nil, err
		}
		if err := settleNotCalled(ctx, tx, ids, notCalled); err != nil {
			return nil, err
		}
		amb, err := markAmbiguous(ctx, tx, ids, "the worker lost its lease while the call was in flight")
		if err != nil {
			return nil, err
		}
		for i := range expired {
			expired[i].Ambiguous = amb[expired[i].ID]
		}
	}
	// Shards left PENDING by a run that ended without them (before its end handed it to its
	// shards: a run whose PlanShards reply was lost) are never claimed: they end as their run
	// did, and the run stays as it ended, for a RESUME to continue each from its checkpoint.
	if _, err := tx.Exec(ctx, `UPDATE job_runs c SET
			status = CASE p.status WHEN 'CANCELLED' THEN 'CANCELLED' WHEN 'PAUSED' THEN 'PAUSED' ELSE 'FAILED' END,
			stop_reason = COALESCE(p.stop_reason, 'ERROR'), finished_at = statement_timestamp(), auto_resume_at = NULL,
			message = 'its run ended (' || p.status || ') before an instance claimed it; RESUME the job to continue from its checkpoint'
		FROM job_runs p
		WHERE c.status = 'PENDING' AND p.id = c.parent_run_id AND p.status NOT IN ('STARTING', 'RUNNING')
			AND c.id IN (SELECT id FROM job_runs WHERE status = 'PENDING' FOR UPDATE SKIP LOCKED)`); err != nil {
		return nil, fmt.Errorf("end the shards of ended runs: %w", err)
	}
	// Then the sharded runs: one whose shards have all ended (an expired shard's job policy
	// may have ended it FAILED), or that is stopping, is settled. Each shard's end settles its
	// run already; this also catches a shard made PENDING again just as its run was asked to
	// stop, which nothing else would end.
	rows, err = tx.Query(ctx, `SELECT id, job_name, '', generation, 'RUNNING', NULL::bigint, tp FROM (
			SELECT id, job_name, generation, COALESCE(trace_parent, '') AS tp FROM job_runs r
			WHERE shard_total IS NOT NULL AND status IN ('STARTING', 'RUNNING')
				AND (cancel_requested OR pause_reason IS NOT NULL OR NOT EXISTS (
					SELECT 1 FROM job_runs c WHERE c.parent_run_id = r.id AND c.status IN ('PENDING', 'STARTING', 'RUNNING')))
			ORDER BY id
			OFFSET 0
		) r WHERE baton_settle_run(id)`)
	settled, err := collect(rows, err, "settle sharded runs", scanExpiredRun)
	if err != nil {
		return nil, err
	}
	for i := range settled {
		settled[i].Settled = true
	}
	return append(expired, settled...), tx.Commit(ctx)
}

// runCount is a count per run.
type runCount struct{ runID, n int64 }

func scanRunCount(row pgx.Row) (runCount, error) {
	var c runCount
	err := row.Scan(&c.runID, &c.n)
	return c, err
}

func scanExpiredRun(row pgx.Row) (store.ExpiredRun, error) {
	var e store.ExpiredRun
	var status string
	var parent *int64
	err := row.Scan(&e.ID, &e.JobName, &e.Token, &e.Generation, &status, &parent, &e.TraceParent)
	e.Requeued = status == string(bt.StatusPending)
	if parent != nil {
		e.ShardOf = *parent
	}
	return e, err
}

// settleNotCalled settles the IN_FLIGHT ledger rows of the given runs that notCalled says were
// never called (their holder died waiting for a downstream turn) as it says, keeping the
// counters in step; markAmbiguous then quarantines the rest. A notCalled that fails settles
// none: they stay in doubt.
func settleNotCalled(ctx context.Context, tx pgx.Tx, runIDs []int64, notCalled store.NotCalledFunc) error {
	if notCalled == nil {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT id, run_id, idempotency_key, attempt FROM job_ledger
		WHERE run_id = ANY($1) AND state = 'IN_FLIGHT' AND external`, runIDs)
	open, err := collect(rows, err, "read in-flight targets", func(row pgx.Row) (store.OpenIntent, error) {
		var in store.OpenIntent
		err := row.Scan(&in.ID, &in.RunID, &in.IdempotencyKey, &in.Attempt)
		return in, err
	})
	if err != nil || len(open) == 0 {
		return err
	}
	settle, err := notCalled(ctx, open)
	if err != nil || len(settle) == 0 {
		return nil // in doubt, as without a limiter to ask
	}
	ids, states := make([]int64, 0, len(settle)), make([]string, 0, len(settle))
	for id, st := range settle {
		ids, states = append(ids, id), append(states, string(st))
	}
	_, err = tx.Exec(ctx, `
		WITH nc AS (
			UPDATE job_ledger l SET state = c.state,
				last_error = 'not called: the worker lost its lease while the call waited for its downstream turn',
				updated_at = COALESCE(r.finished_at, statement_timestamp())
			FROM unnest($1::bigint[], $2::text[]) AS c(id, state), job_runs r
			WHERE l.id = c.id AND l.state = 'IN_FLIGHT' AND r.id = l.run_id
			RETURNING l.job_name, l.generation, l.run_id, l.state
		), per AS (
			SELECT job_name, generation, run_id, state, count(*) AS n FROM nc GROUP BY 1, 2, 3, 4
		)
		INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n)
		SELECT job_name, generation, 0, state, sum(n) FROM per GROUP BY 1, 2, 4
		UNION ALL SELECT job_name, generation, 0, 'IN_FLIGHT', -sum(n) FROM per GROUP BY 1, 2
		UNION ALL SELECT job_name, generation, run_id, state, n FROM per
		ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n`, ids, states)
	if err != nil {
		return fmt.Errorf("settle targets not called: %w", err)
	}
	return nil
}

// markAmbiguous turns the IN_FLIGHT ledger rows of the given runs into AMBIGUOUS_EFFECT and
// keeps the counters in step. It returns how many rows each run had. A shard made PENDING
// again (requeued) is not counted here: its counters went back to its checkpoint, and its
// next holder counts each such target when it meets it.
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
			ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n
		)
		SELECT run_id, n FROM per_run`, runIDs, why)
	perRun, err := collect(rows, err, "mark in-flight targets ambiguous", scanRunCount)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(perRun))
	for _, c := range perRun {
		out[c.runID] = c.n
	}
	for id, n := range out {
		if _, err := tx.Exec(ctx, `UPDATE job_runs SET ambiguous = ambiguous + $2 WHERE id = $1 AND status <> 'PENDING'`, id, n); err != nil {
			return nil, err
		}
	}
	return out, nil
}
