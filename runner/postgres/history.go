package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// historyStore aggregates a job's past runs, their errors and its call statistics into time
// buckets (job_runs, job_run_errors, job_call_stats).
type historyStore struct{ *Store }

// The history statements take the job ($1), the window's start ($2), the bucket width in
// seconds ($3) and the window's end ($4). A row's bucket is the whole number of widths between
// the start and its time. Runs are found by job_runs_job_finished (job, finished_at), their
// error rows by job_run_errors_run (run_id), call statistics by job_call_stats' primary key
// (job, minute): each reads the job's rows of the window, never the table.
const (
	bucketOf = `floor(extract(epoch FROM (%s - $2::timestamptz)) / $3::float8)::int`

	historyRunsSQL = `SELECT %[1]s AS b, status, count(*)
	FROM job_runs
	WHERE job_name = $1 AND finished_at >= $2 AND finished_at < $4
	GROUP BY 1, 2`

	historyDurationsSQL = `SELECT %[1]s AS b,
		percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY extract(epoch FROM (finished_at - started_at))::float8),
		COALESCE(sum(processed) FILTER (WHERE activated_at IS NOT NULL), 0)::bigint,
		COALESCE(sum(extract(epoch FROM (finished_at - activated_at))) FILTER (WHERE activated_at IS NOT NULL), 0)::float8
	FROM job_runs
	WHERE job_name = $1 AND finished_at >= $2 AND finished_at < $4
	GROUP BY 1`

	historyFailuresSQL = `SELECT %[1]s AS b, e.failure_class, count(*)
	FROM job_runs r JOIN job_run_errors e ON e.run_id = r.id
	WHERE r.job_name = $1 AND r.finished_at >= $2 AND r.finished_at < $4
	GROUP BY 1, 2`

	historyCallsSQL = `SELECT %[1]s AS b, sum(calls)::bigint, sum(downstream_errors)::bigint, sum(rejects)::bigint
	FROM job_call_stats
	WHERE job_name = $1 AND minute >= $2 AND minute < $4
	GROUP BY 1`
)

var (
	historyRuns      = fmt.Sprintf(historyRunsSQL, fmt.Sprintf(bucketOf, "finished_at"))
	historyDurations = fmt.Sprintf(historyDurationsSQL, fmt.Sprintf(bucketOf, "finished_at"))
	historyFailures  = fmt.Sprintf(historyFailuresSQL, fmt.Sprintf(bucketOf, "r.finished_at"))
	historyCalls     = fmt.Sprintf(historyCallsSQL, fmt.Sprintf(bucketOf, "minute"))
)

// HistoryStatements are the history's statements, in the order JobHistory sends them, for the
// plan tests and the benchmark's EXPLAIN.
func HistoryStatements() []string {
	return []string{historyRuns, historyDurations, historyFailures, historyCalls}
}

// JobHistory aggregates the job's runs that ended in the window, their error rows and the
// job's call statistics, bucket by bucket, in one round trip (four statements in a batch).
func (s historyStore) JobHistory(ctx context.Context, q store.HistoryQuery) ([]store.HistoryBucket, error) {
	if q.Buckets <= 0 || q.Width <= 0 {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("history of %s: %d buckets of %s is not a window", q.Job, q.Buckets, q.Width)}
	}
	out := make([]store.HistoryBucket, q.Buckets)
	for i := range out {
		out[i] = store.HistoryBucket{
			Start:    q.Start.Add(time.Duration(i) * q.Width),
			Runs:     map[bt.RunStatus]int64{},
			Failures: map[string]int64{},
		}
	}
	end := q.Start.Add(time.Duration(q.Buckets) * q.Width)
	args := []any{q.Job, q.Start, q.Width.Seconds(), end}
	// at returns the bucket of index b; a row can only fall outside through rounding at an edge.
	at := func(b int) *store.HistoryBucket { return &out[min(max(b, 0), q.Buckets-1)] }

	batch := &pgx.Batch{}
	batch.Queue(historyRuns, args...).Query(func(rows pgx.Rows) error {
		var b int
		var status bt.RunStatus
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&b, &status, &n}, func() error {
			at(b).Runs[status] += n
			return nil
		})
		return err
	})
	batch.Queue(historyDurations, args...).Query(func(rows pgx.Rows) error {
		var b int
		var pct []float64
		var processed int64
		var active float64
		_, err := pgx.ForEachRow(rows, []any{&b, &pct, &processed, &active}, func() error {
			h := at(b)
			if len(pct) == 2 {
				p50, p95 := seconds(pct[0]), seconds(pct[1])
				h.DurationP50, h.DurationP95 = &p50, &p95
			}
			h.Processed += processed
			h.Active += seconds(active)
			return nil
		})
		return err
	})
	batch.Queue(historyFailures, args...).Query(func(rows pgx.Rows) error {
		var b int
		var class string
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&b, &class, &n}, func() error {
			at(b).Failures[class] += n
			return nil
		})
		return err
	})
	batch.Queue(historyCalls, args...).Query(func(rows pgx.Rows) error {
		var b int
		var calls, downstream, rejects int64
		_, err := pgx.ForEachRow(rows, []any{&b, &calls, &downstream, &rejects}, func() error {
			h := at(b)
			h.Calls += calls
			h.Downstream += downstream
			h.Rejects += rejects
			return nil
		})
		return err
	})
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, fmt.Errorf("history of job %s: %w", q.Job, err)
	}
	return out, nil
}

// seconds turns a number of seconds from the database into a duration, to the microsecond
// (the resolution of timestamptz).
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1e6)) * time.Microsecond
}
