package postgres

// Batch reads for the API's dataloaders: one query for many keys, so that a page of jobs or
// runs costs a fixed number of round trips however long it is.

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
)

// RunsByIDs returns the runs with the given ids, keyed by id. Ids that do not exist are absent.
func (s *Store) RunsByIDs(ctx context.Context, ids []int64) (map[int64]*bt.RunRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read runs by id: %w", err)
	}
	out := make(map[int64]*bt.RunRecord, len(ids))
	err = collectRuns(rows, func(r *bt.RunRecord) { out[r.ID] = r })
	return out, err
}

// ActiveRunsByJobs returns the active run of each named job that has one, keyed by job name.
func (s *Store) ActiveRunsByJobs(ctx context.Context, jobs []string) (map[string]*bt.RunRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM job_runs
		WHERE job_name = ANY($1) AND status IN ('STARTING', 'RUNNING')`, jobs)
	if err != nil {
		return nil, fmt.Errorf("read active runs: %w", err)
	}
	out := make(map[string]*bt.RunRecord, len(jobs))
	err = collectRuns(rows, func(r *bt.RunRecord) { out[r.JobName] = r })
	return out, err
}

// LastRunsByJobs returns the most recent run of each named job that has one, keyed by job
// name. Each job costs one index probe on (job_name, id DESC), however many runs it has.
func (s *Store) LastRunsByJobs(ctx context.Context, jobs []string) (map[string]*bt.RunRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.* FROM unnest($1::text[]) AS j(name)
		CROSS JOIN LATERAL (SELECT `+runColumns+` FROM job_runs WHERE job_name = j.name ORDER BY id DESC LIMIT 1) r`, jobs)
	if err != nil {
		return nil, fmt.Errorf("read last runs: %w", err)
	}
	out := make(map[string]*bt.RunRecord, len(jobs))
	err = collectRuns(rows, func(r *bt.RunRecord) { out[r.JobName] = r })
	return out, err
}

func collectRuns(rows pgx.Rows, each func(*bt.RunRecord)) error {
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return err
		}
		each(r)
	}
	return rows.Err()
}
