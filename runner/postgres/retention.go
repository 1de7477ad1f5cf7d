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

// retentionStore holds retention's fenced deletes.
type retentionStore struct{ *Store }

// Retention deletes only what nothing still owes. Every delete is fenced on the maintenance
// run's lease in its own transaction (invariant 2), judged at the end of the transaction, by
// the statement's own clock: the renewer keeps the lease alive while the deletes run, and a
// run that lost it meanwhile commits nothing. Deletes judge ages by the database clock.

// retentionFence is the maintenance run's fence, the last statement of each prune transaction.
// The update holds the run row until commit, so the recoverer cannot end the run between the
// check and the commit.
const retentionFence = `UPDATE job_runs SET heartbeat_at = statement_timestamp()
	WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > statement_timestamp()
	RETURNING id`

// fenceRetention checks the maintenance run's lease in tx and commits, or rolls back with
// LEASE_LOST.
func fenceRetention(ctx context.Context, tx pgx.Tx, f store.Fence, what string) error {
	var id int64
	err := tx.QueryRow(ctx, retentionFence, f.RunID, f.Token).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return &bt.Error{Code: bt.CodeLeaseLost, Message: fmt.Sprintf("%s by run %d refused: lease lost", what, f.RunID)}
	}
	if err != nil {
		return fmt.Errorf("%s by run %d: fence: %w", what, f.RunID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%s by run %d: commit: %w", what, f.RunID, err)
	}
	return nil
}

// prunableGenerations selects the generations of job $1 (only generation $2 when it is not
// null) whose ledger may go: not the current one, none a PENDING_APPROVAL or APPROVED replay
// request refers to, none an active run (a replay) is walking, none holding a target in doubt
// (AMBIGUOUS_EFFECT) or an intent without outcome (IN_FLIGHT), and whose newest row is older
// than the job's retention.
const prunableGenerations = `
	SELECT l.generation FROM job_ledger l JOIN job_settings js ON js.name = l.job_name
	WHERE l.job_name = $1 AND l.generation < js.current_generation AND ($2::bigint IS NULL OR l.generation = $2)
		AND NOT EXISTS (SELECT 1 FROM replay_requests rr WHERE rr.job_name = $1 AND rr.generation = l.generation
			AND rr.status IN ('PENDING_APPROVAL', 'APPROVED'))
		AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_name = $1 AND r.generation = l.generation
			AND r.status IN ('STARTING', 'RUNNING'))
	GROUP BY l.generation, js.retention_days
	HAVING max(l.updated_at) < statement_timestamp() - make_interval(days => js.retention_days)
		AND NOT bool_or(l.state IN ('AMBIGUOUS_EFFECT', 'IN_FLIGHT'))
	ORDER BY l.generation`

// PruneLedger deletes the ledger rows, counters and checkpoints of the job's generations past
// its retention that nothing still owes (see prunableGenerations), one generation per fenced
// transaction. Whole generations go, so counters never disagree with rows. It returns the
// ledger rows deleted.
func (s retentionStore) PruneLedger(ctx context.Context, f store.Fence, job string) (int64, error) {
	rows, err := s.pool.Query(ctx, prunableGenerations, job, nil)
	gens, err := collect(rows, err, "find prunable generations of "+job, scanOne[int64])
	if err != nil {
		return 0, err
	}
	var total int64
	for _, gen := range gens {
		n, err := s.pruneGeneration(ctx, f, job, gen)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s retentionStore) pruneGeneration(ctx context.Context, f store.Fence, job string, gen int64) (int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	// FOR UPDATE conflicts with the KEY SHARE lock a new replay request or run of the job takes
	// on this row (their foreign keys), and with a start's own lock: none of them lands between
	// the check below and the commit, and the check sees any that committed before.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM job_settings WHERE name = $1 FOR UPDATE`, job); err != nil {
		return 0, fmt.Errorf("lock job %s: %w", job, err)
	}
	var still int64
	err = tx.QueryRow(ctx, prunableGenerations, job, gen).Scan(&still)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil // owed again since it was found: keep it
	}
	if err != nil {
		return 0, fmt.Errorf("recheck generation %d of %s: %w", gen, job, err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM job_ledger WHERE job_name = $1 AND generation = $2`, job, gen)
	if err != nil {
		return 0, fmt.Errorf("prune generation %d of %s: %w", gen, job, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM job_ledger_counts WHERE job_name = $1 AND generation = $2`, job, gen); err != nil {
		return 0, fmt.Errorf("prune counters of generation %d of %s: %w", gen, job, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM job_checkpoints WHERE job_name = $1 AND generation = $2`, job, gen); err != nil {
		return 0, fmt.Errorf("prune checkpoints of generation %d of %s: %w", gen, job, err)
	}
	if err := fenceRetention(ctx, tx, f, fmt.Sprintf("prune generation %d of %s", gen, job)); err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// pruneSQL is each table's delete: $1 the job, $2 the age in seconds, $3 the batch size.
var pruneSQL = map[store.PruneTable]string{
	store.PruneRuns: `WITH RECURSIVE cand AS (
		SELECT r.id FROM job_runs r
		WHERE r.job_name = $1 AND r.status NOT IN ('STARTING', 'RUNNING') AND r.parent_run_id IS NULL -- shards go with their run
			AND r.finished_at < statement_timestamp() - make_interval(secs => $2)
			AND r.id < (SELECT max(id) FROM job_runs WHERE job_name = $1 AND parent_run_id IS NULL)
			AND NOT EXISTS (SELECT 1 FROM replay_requests rr WHERE rr.source_run_id = r.id OR rr.replay_run_id = r.id)
			AND NOT EXISTS (SELECT 1 FROM job_checkpoints c WHERE c.run_id = r.id)
			AND NOT EXISTS (SELECT 1 FROM job_schedule_events e WHERE e.run_id = r.id)
			AND NOT (r.id = (SELECT max(g.id) FROM job_runs g WHERE g.job_name = $1 AND g.generation = r.generation AND g.parent_run_id IS NULL)
				AND (EXISTS (SELECT 1 FROM job_ledger l WHERE l.job_name = $1 AND l.generation = r.generation)
					OR r.generation = (SELECT current_generation FROM job_settings WHERE name = $1)))
		ORDER BY r.id LIMIT $3
	), keep AS (
		SELECT r.resumed_from AS id FROM job_runs r
		WHERE r.job_name = $1 AND r.resumed_from IS NOT NULL AND r.id NOT IN (SELECT id FROM cand)
		UNION
		SELECT r.resumed_from FROM job_runs r JOIN keep k ON r.id = k.id WHERE r.resumed_from IS NOT NULL
	)
	DELETE FROM job_runs WHERE id IN (SELECT id FROM cand EXCEPT SELECT id FROM keep)`,
	store.PruneRunErrors: `DELETE FROM job_run_errors WHERE id IN (
		SELECT e.id FROM job_run_errors e JOIN job_runs r ON r.id = e.run_id
		WHERE r.job_name = $1 AND r.status NOT IN ('PENDING', 'STARTING', 'RUNNING')
			AND e.created_at < statement_timestamp() - make_interval(secs => $2)
			AND NOT EXISTS (SELECT 1 FROM replay_requests rr WHERE rr.source_run_id = COALESCE(r.parent_run_id, r.id)
				AND rr.status IN ('PENDING_APPROVAL', 'APPROVED'))
		ORDER BY e.id LIMIT $3)`,
	store.PruneScheduleEvents: `DELETE FROM job_schedule_events WHERE id IN (
		SELECT id FROM job_schedule_events
		WHERE job_name = $1 AND created_at < statement_timestamp() - make_interval(secs => $2)
		ORDER BY id LIMIT $3)`,
	store.PruneCallStats: `DELETE FROM job_call_stats WHERE (job_name, minute) IN (
		SELECT job_name, minute FROM job_call_stats
		WHERE job_name = $1 AND minute < statement_timestamp() - make_interval(secs => $2)
		ORDER BY minute LIMIT $3)`,
	// The audit log has no job: $1 is only typed, so that every delete takes the same parameters.
	store.PruneAuditLog: `DELETE FROM audit_log WHERE id IN (
		SELECT id FROM audit_log WHERE $1::text IS NOT NULL AND created_at < statement_timestamp() - make_interval(secs => $2)
		ORDER BY id LIMIT $3)`,
	store.PruneAlertHistory: `DELETE FROM alert_history WHERE id IN (
		SELECT id FROM alert_history WHERE $1::text IS NOT NULL AND resolved_at < statement_timestamp() - make_interval(secs => $2)
		ORDER BY id LIMIT $3)`,
	store.PruneTestNotifications: `DELETE FROM notification_outbox WHERE id IN (
		SELECT id FROM notification_outbox WHERE $1::text IS NOT NULL AND kind = 'TEST' AND status <> 'PENDING'
			AND created_at < statement_timestamp() - make_interval(secs => $2)
		ORDER BY id LIMIT $3)`,
}

// Prune deletes up to limit rows of table older than olderThan (of job, where the table has
// jobs) in one transaction fenced on f, and returns how many it deleted: fewer than limit
// means nothing more is due. Ages are judged by the database clock.
func (s retentionStore) Prune(ctx context.Context, f store.Fence, table store.PruneTable, job string, olderThan time.Duration, limit int) (int64, error) {
	sql, ok := pruneSQL[table]
	if !ok {
		return 0, bt.Errorf(bt.CodeInvalidInput, "retention does not prune table %q", table)
	}
	if olderThan <= 0 || limit <= 0 {
		return 0, bt.Errorf(bt.CodeInvalidInput, "prune %s: age %s and batch %d must be positive", table, olderThan, limit)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	tag, err := tx.Exec(ctx, sql, job, olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("prune %s of %s: %w", table, job, err)
	}
	if err := fenceRetention(ctx, tx, f, fmt.Sprintf("prune %s of %s", table, job)); err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
