package postgres

import (
	"context"
	"fmt"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// callStatStore holds the per-minute call statistics (job_call_stats).
type callStatStore struct{ *Store }

// addCallStatsSQL adds each count to its job's minute bucket, the minute taken by the database
// clock at the moment of the write less the count's age. The write is fenced like every write
// of a run (invariant 2), judged at the statement's own time: FOR SHARE holds the run row, so
// the recoverer cannot end the run between the check and the insert.
const addCallStatsSQL = `WITH fence AS (
	SELECT job_name FROM job_runs
	WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > statement_timestamp()
	FOR SHARE
), ins AS (
	INSERT INTO job_call_stats (job_name, minute, calls, downstream_errors, rejects)
	SELECT fence.job_name, date_trunc('minute', statement_timestamp() - make_interval(secs => c.age)),
		sum(c.calls), sum(c.downstream), sum(c.rejects)
	FROM fence, unnest($3::float8[], $4::bigint[], $5::bigint[], $6::bigint[]) AS c(age, calls, downstream, rejects)
	GROUP BY 1, 2
	ON CONFLICT (job_name, minute) DO UPDATE SET calls = job_call_stats.calls + EXCLUDED.calls,
		downstream_errors = job_call_stats.downstream_errors + EXCLUDED.downstream_errors,
		rejects = job_call_stats.rejects + EXCLUDED.rejects
)
SELECT count(*) FROM fence`

// AddCallStats adds a run's call outcomes to its job's minute buckets, fenced on the run's
// lease. A run that lost its lease writes nothing and gets LEASE_LOST.
func (s callStatStore) AddCallStats(ctx context.Context, f store.Fence, counts []store.CallCounts) error {
	if len(counts) == 0 {
		return nil
	}
	ages := make([]float64, len(counts))
	calls := make([]int64, len(counts))
	downstream := make([]int64, len(counts))
	rejects := make([]int64, len(counts))
	for i, c := range counts {
		ages[i] = max(c.Age, 0).Seconds()
		calls[i], downstream[i], rejects[i] = c.Calls, c.Downstream, c.Rejects
	}
	var fenced int
	if err := s.pool.QueryRow(ctx, addCallStatsSQL, f.RunID, f.Token, ages, calls, downstream, rejects).Scan(&fenced); err != nil {
		return fmt.Errorf("add call stats of run %d: %w", f.RunID, err)
	}
	if fenced == 0 {
		return &bt.Error{Code: bt.CodeLeaseLost, Message: fmt.Sprintf("add call stats of run %d refused: lease lost", f.RunID)}
	}
	return nil
}

// CallStats sums a job's external call outcomes over the last window, by the database clock.
func (s callStatStore) CallStats(ctx context.Context, job string, window time.Duration) (calls, downstream, rejects int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT COALESCE(sum(calls), 0), COALESCE(sum(downstream_errors), 0), COALESCE(sum(rejects), 0)
		FROM job_call_stats
		WHERE job_name = $1 AND minute > statement_timestamp() - make_interval(secs => $2::float8) - interval '1 minute'`,
		job, window.Seconds()).Scan(&calls, &downstream, &rejects)
	return calls, downstream, rejects, err
}
