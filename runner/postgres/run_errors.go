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
	q.where("run_id = %s", runID)
	if afterID > 0 {
		q.where("id > %s", afterID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+runErrorColumns+` FROM job_run_errors`, "id", limit)
	return collect(rows, err, fmt.Sprintf("list errors of run %d", runID), scanRunError)
}

// RunErrorsMatching lists the error rows of a run that match f after afterID, in insertion
// order: the walk of (run_id, id) filtered, never more than the run's own rows.
func (s runStore) RunErrorsMatching(ctx context.Context, runID int64, f store.RunErrorFilter, afterID int64, limit int) ([]bt.RunError, error) {
	q := runErrorsQuery(runID, f)
	if afterID > 0 {
		q.where("id > %s", afterID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+runErrorColumns+` FROM job_run_errors`, "id", limit)
	return collect(rows, err, fmt.Sprintf("list matching errors of run %d", runID), scanRunError)
}

// CountRunErrors counts the error rows of a run that match f.
func (s runStore) CountRunErrors(ctx context.Context, runID int64, f store.RunErrorFilter) (int64, error) {
	q := runErrorsQuery(runID, f)
	sql := `SELECT count(*) FROM job_run_errors WHERE ` + strings.Join(q.conds, " AND ")
	var n int64
	if err := s.pool.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeExec}, q.args...)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count errors of run %d: %w", runID, err)
	}
	return n, nil
}

func runErrorsQuery(runID int64, f store.RunErrorFilter) *listQuery {
	var q listQuery
	q.where("run_id = %s", runID)
	if f.FailureClass != "" {
		q.where("failure_class = %s", f.FailureClass)
	}
	if f.Search != "" {
		pat := likeContaining(f.Search)
		q.where(`(item_key ILIKE %s OR message ILIKE %s)`, pat, pat)
	}
	return &q
}

// RunErrorsOfRuns returns, for each of runIDs, its error rows after afterID in insertion order,
// at most limit each, as RunErrors would: one index walk of (run_id, id) per run, in one
// statement.
func (s runStore) RunErrorsOfRuns(ctx context.Context, runIDs []int64, afterID int64, limit int) (map[int64][]bt.RunError, error) {
	rows, err := s.pool.Query(ctx, `SELECT e.* FROM unnest($1::bigint[]) AS k(run) CROSS JOIN LATERAL (
			SELECT `+runErrorColumns+` FROM job_run_errors
			WHERE run_id = k.run AND id > $2 ORDER BY id LIMIT $3) e
		ORDER BY e.run_id, e.id`, runIDs, afterID, limit)
	errs, err := collect(rows, err, "read errors of runs", scanRunError)
	return grouped(errs, err, func(e bt.RunError) int64 { return e.RunID })
}
