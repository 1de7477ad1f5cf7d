package postgres

import (
	"context"
	"time"
)

// AddCallStats adds a run's call outcomes to its job's minute bucket.
func (s *Store) AddCallStats(ctx context.Context, job string, minute time.Time, calls, downstream, rejects int64) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO job_call_stats (job_name, minute, calls, downstream_errors, rejects)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (job_name, minute) DO UPDATE SET calls = job_call_stats.calls + EXCLUDED.calls,
			downstream_errors = job_call_stats.downstream_errors + EXCLUDED.downstream_errors,
			rejects = job_call_stats.rejects + EXCLUDED.rejects`, job, minute, calls, downstream, rejects)
	return err
}

// CallStats sums a job's external call outcomes over the last window, by the database clock.
func (s *Store) CallStats(ctx context.Context, job string, window time.Duration) (calls, downstream, rejects int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT COALESCE(sum(calls), 0), COALESCE(sum(downstream_errors), 0), COALESCE(sum(rejects), 0)
		FROM job_call_stats WHERE job_name = $1 AND minute > now() - make_interval(secs => $2::float8) - interval '1 minute'`,
		job, window.Seconds()).Scan(&calls, &downstream, &rejects)
	return calls, downstream, rejects, err
}
