package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

const runErrorColumns = `id, run_id, item_key, failure_class, message, attempt, created_at`

func scanRunError(row pgx.Row) (bt.RunError, error) {
	var e bt.RunError
	err := row.Scan(&e.ID, &e.RunID, &e.ItemKey, &e.FailureClass, &e.Message, &e.Attempt, &e.CreatedAt)
	return e, err
}

// RunErrors lists a run's error rows in insertion order after afterID.
func (s runStore) RunErrors(ctx context.Context, runID, afterID int64, limit int) ([]bt.RunError, error) {
	var q listQuery
	if err := s.whereRun(ctx, &q, runID); err != nil {
		return nil, err
	}
	if afterID > 0 {
		q.where("id > %s", afterID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+runErrorColumns+` FROM job_run_errors`, "id", limit)
	return collect(rows, err, fmt.Sprintf("list errors of run %d", runID), scanRunError)
}

// RunErrorsMatching lists the error rows of a run that match f after afterID, in insertion
// order: the walk of (run_id, id) filtered, never more than the run's own rows.
func (s runStore) RunErrorsMatching(ctx context.Context, runID int64, f store.RunErrorFilter, afterID int64, limit int) ([]bt.RunError, error) {
	q, err := s.runErrorsQuery(ctx, runID, f)
	if err != nil {
		return nil, err
	}
	if afterID > 0 {
		q.where("id > %s", afterID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+runErrorColumns+` FROM job_run_errors`, "id", limit)
	return collect(rows, err, fmt.Sprintf("list matching errors of run %d", runID), scanRunError)
}

// CountRunErrors counts the error rows of a run that match f.
func (s runStore) CountRunErrors(ctx context.Context, runID int64, f store.RunErrorFilter) (int64, error) {
	q, err := s.runErrorsQuery(ctx, runID, f)
	if err != nil {
		return 0, err
	}
	sql := `SELECT count(*) FROM job_run_errors WHERE ` + strings.Join(q.conds, " AND ")
	var n int64
	if err := s.pool.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeExec}, q.args...)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count errors of run %d: %w", runID, err)
	}
	return n, nil
}

func (s runStore) runErrorsQuery(ctx context.Context, runID int64, f store.RunErrorFilter) (*listQuery, error) {
	var q listQuery
	if err := s.whereRun(ctx, &q, runID); err != nil {
		return nil, err
	}
	if f.FailureClass != "" {
		q.where("failure_class = %s", f.FailureClass)
	}
	if f.Search != "" {
		pat := likeContaining(f.Search)
		q.where(`(item_key ILIKE %s OR message ILIKE %s)`, pat, pat)
	}
	return &q, nil
}

// whereRun narrows q to the rows of a run: its own, and its shards' for a sharded run (whose
// items its shards write). A run that is not sharded keeps the plain equality, and with it
// the ordered walk of (run_id, id).
func (s *Store) whereRun(ctx context.Context, q *listQuery, runID int64) error {
	shards, err := s.shardIDs(ctx, []int64{runID})
	if err != nil {
		return err
	}
	if ids := shards[runID]; len(ids) > 0 {
		q.where("run_id = ANY(%s::bigint[])", append(ids, runID))
		return nil
	}
	q.where("run_id = %s", runID)
	return nil
}

// shardIDs returns the shard ids of each of the sharded runs among runIDs.
func (s *Store) shardIDs(ctx context.Context, runIDs []int64) (map[int64][]int64, error) {
	// Unprepared, as the list queries it serves are (listQuery): planned with its values.
	rows, err := s.pool.Query(ctx, `SELECT parent_run_id, id FROM job_runs WHERE parent_run_id = ANY($1) ORDER BY parent_run_id, shard_index`,
		pgx.QueryExecModeExec, runIDs)
	if err != nil {
		return nil, fmt.Errorf("read the shards of runs: %w", err)
	}
	out := map[int64][]int64{}
	var parent, id int64
	_, err = pgx.ForEachRow(rows, []any{&parent, &id}, func() error {
		out[parent] = append(out[parent], id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the shards of runs: %w", err)
	}
	return out, nil
}

// RunErrorsOfRuns returns, for each of runIDs, its error rows after afterID in insertion order,
// at most limit each, as RunErrors would: one index walk of (run_id, id) per run — and per
// shard of a sharded run, whose errors are its shards' — in one statement.
func (s runStore) RunErrorsOfRuns(ctx context.Context, runIDs []int64, afterID int64, limit int) (map[int64][]bt.RunError, error) {
	rows, err := s.pool.Query(ctx, `SELECT parent, `+runErrorColumns+` FROM (
			SELECT k.run AS parent, e.*, row_number() OVER (PARTITION BY k.run ORDER BY e.id) AS n
			FROM unnest($1::bigint[]) AS k(run)
			CROSS JOIN LATERAL (SELECT k.run AS id UNION ALL SELECT id FROM job_runs WHERE parent_run_id = k.run) r
			CROSS JOIN LATERAL (
				SELECT `+runErrorColumns+` FROM job_run_errors WHERE run_id = r.id AND id > $2 ORDER BY id LIMIT $3) e
		) x WHERE n <= $3
		ORDER BY parent, id`, runIDs, afterID, limit)
	errs, err := collect(rows, err, "read errors of runs", func(row pgx.Row) (runErrorOf, error) {
		var e runErrorOf
		err := row.Scan(&e.run, &e.ID, &e.RunID, &e.ItemKey, &e.FailureClass, &e.Message, &e.Attempt, &e.CreatedAt)
		return e, err
	})
	out, err := grouped(errs, err, func(e runErrorOf) int64 { return e.run })
	if err != nil {
		return nil, err
	}
	m := make(map[int64][]bt.RunError, len(out))
	for run, list := range out {
		for _, e := range list {
			m[run] = append(m[run], e.RunError)
		}
	}
	return m, nil
}

// runErrorOf is an error row and the run it was read for (its shard's run, for a shard's).
type runErrorOf struct {
	run int64
	bt.RunError
}
