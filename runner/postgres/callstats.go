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
// clock at the moment of the write less the count's age; a shard's counts also go to its run's
// seconds (job_run_call_seconds), which come back as they were before the write, within the
// lookback ($8 seconds). The write is fenced like every write of a run (invariant 2), judged at
// the statement's own time: FOR SHARE holds the run row, so the recoverer cannot end the run
// between the check and the insert. Each row returned carries the fence's count (0: lease lost).
const addCallStatsSQL = `WITH fence AS (
	SELECT job_name, parent_run_id FROM job_runs
	WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > statement_timestamp()
	FOR SHARE
), c AS (
	SELECT * FROM unnest($3::float8[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[]) AS c(age, calls, downstream, rejects, total)
), ins AS (
	INSERT INTO job_call_stats (job_name, minute, calls, downstream_errors, rejects)
	SELECT fence.job_name, date_trunc('minute', statement_timestamp() - make_interval(secs => c.age)),
		sum(c.calls), sum(c.downstream), sum(c.rejects)
	FROM fence, c WHERE c.calls > 0 OR c.rejects > 0
	GROUP BY 1, 2
	ON CONFLICT (job_name, minute) DO UPDATE SET calls = job_call_stats.calls + EXCLUDED.calls,
		downstream_errors = job_call_stats.downstream_errors + EXCLUDED.downstream_errors,
		rejects = job_call_stats.rejects + EXCLUDED.rejects
), sec AS (
	INSERT INTO job_run_call_seconds (run_id, second, calls, external, downstream, rejects)
	SELECT fence.parent_run_id, date_trunc('second', statement_timestamp() - make_interval(secs => c.age)),
		sum(c.total), sum(c.calls), sum(c.downstream), sum(c.rejects)
	FROM fence, c WHERE fence.parent_run_id IS NOT NULL
	GROUP BY 1, 2
	ON CONFLICT (run_id, second) DO UPDATE SET calls = job_run_call_seconds.calls + EXCLUDED.calls,
		external = job_run_call_seconds.external + EXCLUDED.external,
		downstream = job_run_call_seconds.downstream + EXCLUDED.downstream,
		rejects = job_run_call_seconds.rejects + EXCLUDED.rejects
)
SELECT f.n, w.age, w.calls, w.external, w.downstream, w.rejects
FROM (SELECT count(*) AS n, min(parent_run_id) AS run FROM fence) f
LEFT JOIN LATERAL (
	SELECT extract(epoch FROM statement_timestamp() - s.second)::float8 AS age, s.calls, s.external, s.downstream, s.rejects
	FROM job_run_call_seconds s
	WHERE s.run_id = f.run AND s.second > statement_timestamp() - make_interval(secs => $8::float8)
) w ON true`

// AddCallStats adds a run's call outcomes to its job's minute buckets (and a shard's to its
// run's seconds), fenced on the run's lease. A run that lost its lease writes nothing and gets
// LEASE_LOST.
func (s callStatStore) AddCallStats(ctx context.Context, f store.Fence, counts []store.CallCounts, lookback time.Duration) ([]store.CallCounts, error) {
	if len(counts) == 0 {
		return nil, nil
	}
	ages := make([]float64, len(counts))
	calls := make([]int64, len(counts))
	downstream := make([]int64, len(counts))
	rejects := make([]int64, len(counts))
	all := make([]int64, len(counts))
	for i, c := range counts {
		ages[i] = max(c.Age, 0).Seconds()
		calls[i], downstream[i], rejects[i], all[i] = c.Calls, c.Downstream, c.Rejects, c.All
	}
	rows, err := s.pool.Query(ctx, addCallStatsSQL, f.RunID, f.Token, ages, calls, downstream, rejects, all, lookback.Seconds())
	if err != nil {
		return nil, fmt.Errorf("add call stats of run %d: %w", f.RunID, err)
	}
	defer rows.Close()
	fenced := 0
	var run []store.CallCounts
	for rows.Next() {
		var age *float64
		var c struct{ all, calls, downstream, rejects *int64 }
		if err := rows.Scan(&fenced, &age, &c.all, &c.calls, &c.downstream, &c.rejects); err != nil {
			return nil, fmt.Errorf("add call stats of run %d: %w", f.RunID, err)
		}
		if age != nil {
			run = append(run, store.CallCounts{Age: time.Duration(*age * float64(time.Second)),
				All: *c.all, Calls: *c.calls, Downstream: *c.downstream, Rejects: *c.rejects})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("add call stats of run %d: %w", f.RunID, err)
	}
	if fenced == 0 {
		return nil, &bt.Error{Code: bt.CodeLeaseLost, Message: fmt.Sprintf("add call stats of run %d refused: lease lost", f.RunID)}
	}
	return run, nil
}

// CallStats sums a job's external call outcomes over the last window, by the database clock.
func (s callStatStore) CallStats(ctx context.Context, job string, window time.Duration) (calls, downstream, rejects int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT COALESCE(sum(calls), 0), COALESCE(sum(downstream_errors), 0), COALESCE(sum(rejects), 0)
		FROM job_call_stats
		WHERE job_name = $1 AND minute > statement_timestamp() - make_interval(secs => $2::float8) - interval '1 minute'`,
		job, window.Seconds()).Scan(&calls, &downstream, &rejects)
	return calls, downstream, rejects, err
}
