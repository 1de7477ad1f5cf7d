package postgres

// Batch reads of the API's per-object fields: a page of jobs asks for the ledger counts, the
// runs and the run errors of every job or run on it in one statement per field, however long
// the page is.

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
)

// JobsPage returns up to limit jobs ordered by name, after the job named after ("" from the
// first): a keyset page on the primary key.
func (s *Store) JobsPage(ctx context.Context, after string, limit int) ([]*bt.JobSettings, error) {
	const sel = `SELECT ` + jobColumns + ` FROM job_settings`
	var rows pgx.Rows
	var err error
	if after == "" {
		rows, err = s.pool.Query(ctx, sel+` ORDER BY name LIMIT $1`, limit)
	} else {
		rows, err = s.pool.Query(ctx, sel+` WHERE name > $1 ORDER BY name LIMIT $2`, after, limit)
	}
	return collectJobs(rows, err, "read a page of jobs")
}

// CountsKey names one set of ledger counts: a generation's (RunID 0) or one run's.
type CountsKey struct {
	Job        string
	Generation int64
	RunID      int64
}

// LedgerCountsOf returns the per-state counts of each key (LedgerCounts for many keys at once).
// Keys without rows get an empty map.
func (s *Store) LedgerCountsOf(ctx context.Context, keys []CountsKey) (map[CountsKey]map[bt.LedgerState]int64, error) {
	jobs, gens, runs := make([]string, len(keys)), make([]int64, len(keys)), make([]int64, len(keys))
	out := make(map[CountsKey]map[bt.LedgerState]int64, len(keys))
	for i, k := range keys {
		jobs[i], gens[i], runs[i] = k.Job, k.Generation, k.RunID
		out[k] = map[bt.LedgerState]int64{}
	}
	rows, err := s.pool.Query(ctx, `SELECT c.job_name, c.generation, c.run_id, c.state, c.n
		FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS k(job, gen, run)
		JOIN job_ledger_counts c ON c.job_name = k.job AND c.generation = k.gen AND c.run_id = k.run
		WHERE c.n <> 0`, jobs, gens, runs)
	if err != nil {
		return nil, fmt.Errorf("read ledger counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k CountsKey
		var state string
		var n int64
		if err := rows.Scan(&k.Job, &k.Generation, &k.RunID, &state, &n); err != nil {
			return nil, err
		}
		if m := out[k]; m != nil {
			m[bt.LedgerState(state)] = n
		}
	}
	return out, rows.Err()
}

// RunsOfJobs returns, for each of jobs, its runs newest first as Runs would list them with
// the same filter (JobName aside): one index walk of (job_name, id DESC) per job, in one
// statement.
func (s *Store) RunsOfJobs(ctx context.Context, jobs []string, f RunFilter) (map[string][]*bt.RunRecord, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	var q listQuery
	q.param(jobs) // $1: the jobs
	q.where("job_name = j.name")
	q.oneOf("status", strs(f.Statuses))
	if f.BeforeID != 0 {
		q.where("id < %s", f.BeforeID)
	}
	// Planned with its values, as Runs is (see listQuery).
	inner := q.sql(`SELECT `+runColumns+` FROM job_runs`, "id DESC", f.Limit)
	rows, err := s.pool.Query(ctx, `SELECT r.* FROM unnest($1::text[]) AS j(name) CROSS JOIN LATERAL (`+inner+`) r
		ORDER BY r.job_name, r.id DESC`, append([]any{pgx.QueryExecModeExec}, q.args...)...)
	if err != nil {
		return nil, fmt.Errorf("read runs of jobs: %w", err)
	}
	out := make(map[string][]*bt.RunRecord, len(jobs))
	err = collectRuns(rows, func(r *bt.RunRecord) { out[r.JobName] = append(out[r.JobName], r) })
	return out, err
}

// RunErrorsOfRuns returns, for each of runIDs, its error rows after afterID in insertion order,
// at most limit each, as RunErrors would: one index walk of (run_id, id) per run, in one
// statement.
func (s *Store) RunErrorsOfRuns(ctx context.Context, runIDs []int64, afterID int64, limit int) (map[int64][]bt.RunError, error) {
	rows, err := s.pool.Query(ctx, `SELECT e.* FROM unnest($1::bigint[]) AS k(run) CROSS JOIN LATERAL (
			SELECT id, run_id, item_key, failure_class, message, attempt, created_at FROM job_run_errors
			WHERE run_id = k.run AND id > $2 ORDER BY id LIMIT $3) e
		ORDER BY e.run_id, e.id`, runIDs, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("read errors of runs: %w", err)
	}
	defer rows.Close()
	out := make(map[int64][]bt.RunError, len(runIDs))
	for rows.Next() {
		var e bt.RunError
		if err := rows.Scan(&e.ID, &e.RunID, &e.ItemKey, &e.FailureClass, &e.Message, &e.Attempt, &e.CreatedAt); err != nil {
			return nil, err
		}
		out[e.RunID] = append(out[e.RunID], e)
	}
	return out, rows.Err()
}
