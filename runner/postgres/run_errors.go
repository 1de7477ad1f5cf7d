package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
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
