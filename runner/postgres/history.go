package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"
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

	// One pass over the window's runs: counts by status (historyStatuses, in order), duration
	// percentiles, items and active time.
	historyRunsSQL = `SELECT %[1]s AS b, ARRAY[%[2]s],
		percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY extract(epoch FROM (finished_at - started_at))::float8),
		COALESCE(sum(processed) FILTER (WHERE activated_at IS NOT NULL), 0)::bigint,
		COALESCE(sum(extract(epoch FROM (finished_at - activated_at))) FILTER (WHERE activated_at IS NOT NULL), 0)::float8
	FROM job_runs
	WHERE job_name = $1 AND finished_at >= $2 AND finished_at < $4 AND parent_run_id IS NULL
	GROUP BY 1`

	// The error rows are counted run by run (a lateral aggregate, which the planner cannot turn
	// into a join): one probe of job_run_errors_run per run of the window, where a hash join
	// would read every job's error rows.
	historyFailuresSQL = `SELECT %[1]s AS b, e.failure_class, sum(e.n)::bigint
	FROM job_runs r CROSS JOIN LATERAL (
		SELECT failure_class, count(*) AS n FROM job_run_errors WHERE run_id = r.id GROUP BY failure_class) e
	WHERE r.job_name = $1 AND r.finished_at >= $2 AND r.finished_at < $4
	GROUP BY 1, 2`

	historyCallsSQL = `SELECT %[1]s AS b, sum(calls)::bigint, sum(downstream_errors)::bigint, sum(rejects)::bigint
	FROM job_call_stats
	WHERE job_name = $1 AND minute >= $2 AND minute < $4
	GROUP BY 1`
)

// historyStatuses are the statuses a run of the history is counted by: every status of
// job_runs (an ended run holds one of the first four).
var historyStatuses = []bt.RunStatus{bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled, bt.StatusPaused, bt.StatusRunning, bt.StatusStarting}

var (
	historyRuns = fmt.Sprintf(historyRunsSQL, fmt.Sprintf(bucketOf, "finished_at"), func() string {
		cols := make([]string, len(historyStatuses))
		for k, st := range historyStatuses {
			cols[k] = fmt.Sprintf("count(*) FILTER (WHERE status = '%s')", st)
		}
		return strings.Join(cols, ", ")
	}())
	historyFailures = fmt.Sprintf(historyFailuresSQL, fmt.Sprintf(bucketOf, "r.finished_at"))
	historyCalls    = fmt.Sprintf(historyCallsSQL, fmt.Sprintf(bucketOf, "minute"))
)

// JobHistory aggregates the job's runs that ended in the window, their error rows and the
// job's call statistics, bucket by bucket. The statements run unprepared (QueryExecModeExec),
// as the list queries do, so each is planned for its window: a prepared statement could go to
// a generic plan that guesses how much of the job a window holds. They share one snapshot.
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
	args := []any{pgx.QueryExecModeExec, q.Job, q.Start, q.Width.Seconds(), end}
	// at returns the bucket of index b; a row can only fall outside through rounding at an edge.
	at := func(b int) *store.HistoryBucket { return &out[min(max(b, 0), q.Buckets-1)] }

	var (
		b                          int
		byStatus                   []int64
		class                      string
		n, processed               int64
		pct                        []float64
		active                     float64
		calls, downstream, rejects int64
	)
	steps := []struct {
		sql  string
		dest []any
		add  func(h *store.HistoryBucket)
	}{
		{historyRuns, []any{&b, &byStatus, &pct, &processed, &active}, func(h *store.HistoryBucket) {
			for k, n := range byStatus {
				if n > 0 {
					h.Runs[historyStatuses[k]] += n
				}
			}
			if len(pct) == 2 {
				p50, p95 := seconds(pct[0]), seconds(pct[1])
				h.DurationP50, h.DurationP95 = &p50, &p95
			}
			h.Processed += processed
			h.Active += seconds(active)
		}},
		{historyFailures, []any{&b, &class, &n}, func(h *store.HistoryBucket) { h.Failures[class] += n }},
		{historyCalls, []any{&b, &calls, &downstream, &rejects}, func(h *store.HistoryBucket) {
			h.Calls += calls
			h.Downstream += downstream
			h.Rejects += rejects
		}},
	}
	// One snapshot for the three statements, so a run that ends meanwhile counts in all or none.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		for _, st := range steps {
			rows, err := tx.Query(ctx, st.sql, args...)
			if err == nil {
				_, err = pgx.ForEachRow(rows, st.dest, func() error { st.add(at(b)); return nil })
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history of job %s: %w", q.Job, err)
	}
	return out, nil
}

// seconds turns a number of seconds from the database into a duration, to the microsecond
// (the resolution of timestamptz).
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1e6)) * time.Microsecond
}
