package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// PruneLedger deletes the ledger rows and counters of generations other than the job's
// current one whose newest row is older than the job's retention. Whole generations go, so
// counters never disagree with rows. It returns the rows deleted.
func (s *Store) PruneLedger(ctx context.Context, job string) (int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	rows, err := tx.Query(ctx, `
		SELECT l.generation FROM job_ledger l JOIN job_settings js ON js.name = l.job_name
		WHERE l.job_name = $1 AND l.generation < js.current_generation
		GROUP BY l.generation, js.retention_days
		HAVING max(l.updated_at) < now() - make_interval(days => js.retention_days)`, job)
	if err != nil {
		return 0, err
	}
	gens, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(gens) == 0 {
		return 0, err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM job_ledger WHERE job_name = $1 AND generation = ANY($2)`, job, gens)
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM job_ledger_counts WHERE job_name = $1 AND generation = ANY($2)`, job, gens); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM job_call_stats WHERE job_name = $1 AND minute < now() - interval '7 days'`, job); err != nil {
		return 0, err
	}
	return tag.RowsAffected(), tx.Commit(ctx)
}
