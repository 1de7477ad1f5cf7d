package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// RunRow is a job_runs row as the harness reads it straight from PostgreSQL.
type RunRow struct {
	ID              int64
	JobName         string
	Status          string
	StopReason      string
	Trigger         string
	Mode            string
	Instance        string
	Generation      int64
	ResumedFrom     *int64
	Checkpoint      string
	StartCheckpoint string
	Processed       int64
	Succeeded       int64
	Failed          int64
	Skipped         int64
	Ambiguous       int64
	LeaseUntil      time.Time
	StartedAt       time.Time
	FinishedAt      *time.Time
	ScheduledFor    *time.Time
	Message         string
	// The auto-resume chain (ADR 12): how many automatic resumes came before this run, what
	// became of this run once it ended ("" while nothing was decided, or still waiting), and
	// the run that continued it.
	Attempt           int
	AutoResumeOutcome string
	AutoResumeRunID   *int64
}

// Active reports whether the run is STARTING or RUNNING.
func (r *RunRow) Active() bool { return r.Status == "STARTING" || r.Status == "RUNNING" }

const runRowColumns = `id, job_name, status, COALESCE(stop_reason, ''), trigger, mode, instance, generation, resumed_from,
	checkpoint, start_checkpoint, processed, succeeded, failed, skipped, ambiguous, lease_until, started_at, finished_at,
	scheduled_for, message, attempt, COALESCE(auto_resume_outcome, ''), auto_resume_run_id`

func scanRunRow(row pgx.Row) (*RunRow, error) {
	var r RunRow
	err := row.Scan(&r.ID, &r.JobName, &r.Status, &r.StopReason, &r.Trigger, &r.Mode, &r.Instance, &r.Generation,
		&r.ResumedFrom, &r.Checkpoint, &r.StartCheckpoint, &r.Processed, &r.Succeeded, &r.Failed, &r.Skipped, &r.Ambiguous,
		&r.LeaseUntil, &r.StartedAt, &r.FinishedAt, &r.ScheduledFor, &r.Message, &r.Attempt, &r.AutoResumeOutcome, &r.AutoResumeRunID)
	return &r, err
}

func dbCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 15*time.Second)
}

// RunRow reads one run, failing the test if it cannot.
func (c *Cluster) RunRow(id int64) *RunRow {
	c.T.Helper()
	r, err := c.runRow(id)
	if err != nil {
		c.T.Fatalf("cluster: read run %d: %v", id, err)
	}
	return r
}

func (c *Cluster) runRow(id int64) (*RunRow, error) {
	ctx, cancel := dbCtx()
	defer cancel()
	return scanRunRow(c.DB.QueryRow(ctx, `SELECT `+runRowColumns+` FROM job_runs WHERE id = $1`, id))
}

// Runs lists the runs of job (all jobs when job is ""), oldest first.
func (c *Cluster) Runs(job string) []*RunRow {
	c.T.Helper()
	ctx, cancel := dbCtx()
	defer cancel()
	rows, err := c.DB.Query(ctx, `SELECT `+runRowColumns+` FROM job_runs WHERE $1 = '' OR job_name = $1 ORDER BY id`, job)
	if err != nil {
		c.T.Fatalf("cluster: list runs: %v", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*RunRow, error) { return scanRunRow(r) })
	if err != nil {
		c.T.Fatalf("cluster: list runs: %v", err)
	}
	return out
}

// ActiveRuns lists the runs that are STARTING or RUNNING.
func (c *Cluster) ActiveRuns() ([]*RunRow, error) {
	ctx, cancel := dbCtx()
	defer cancel()
	rows, err := c.DB.Query(ctx, `SELECT `+runRowColumns+` FROM job_runs WHERE status IN ('STARTING', 'RUNNING') ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*RunRow, error) { return scanRunRow(r) })
}

// WaitRun polls run id every 50ms until ok(row) holds, and returns that row. Database errors
// (PostgreSQL may be restarting) are retried until the timeout.
func (c *Cluster) WaitRun(id int64, timeout time.Duration, what string, ok func(*RunRow) bool) *RunRow {
	c.T.Helper()
	deadline := time.Now().Add(timeout)
	var last *RunRow
	var lastErr error
	for {
		r, err := c.runRow(id)
		if err == nil {
			last = r
			if ok(r) {
				return r
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			c.T.Fatalf("cluster: run %d: %s: not within %s (last %s, last error %v)", id, what, timeout, describe(last), lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(r *RunRow) string {
	if r == nil {
		return "<none>"
	}
	return fmt.Sprintf("run %d %s %s/%s on %s processed %d checkpoint %q", r.ID, r.JobName, r.Status, r.StopReason,
		r.Instance, r.Processed, r.Checkpoint)
}

// Settle waits until no run is STARTING or RUNNING, no shard PENDING, and none waits for its auto-resume (an
// ended run with a due time and no outcome yet: a run the cluster is about to start), and
// returns how long that took. It fails the test, listing those runs, if some are still there
// after timeout.
func (c *Cluster) Settle(timeout time.Duration) time.Duration {
	c.T.Helper()
	start := time.Now()
	var unsettled []*RunRow
	for {
		var err error
		unsettled, err = c.unsettledRuns()
		if err == nil && len(unsettled) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, r := range unsettled {
		if r.Active() || r.Status == "PENDING" {
			c.T.Errorf("cluster: still active after %s: %s", timeout, describe(r))
		} else {
			c.T.Errorf("cluster: still waiting for its auto-resume after %s: %s", timeout, describe(r))
		}
	}
	c.T.FailNow()
	return 0
}

// unsettledRuns lists the active runs and the ended ones waiting for their auto-resume.
func (c *Cluster) unsettledRuns() ([]*RunRow, error) {
	ctx, cancel := dbCtx()
	defer cancel()
	rows, err := c.DB.Query(ctx, `SELECT `+runRowColumns+` FROM job_runs WHERE status IN ('PENDING', 'STARTING', 'RUNNING')
		OR (auto_resume_at IS NOT NULL AND auto_resume_outcome IS NULL) ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*RunRow, error) { return scanRunRow(r) })
}

// Exec runs a statement against the database (setup: a job's auto-resume policy, ...),
// failing the test if it cannot.
func (c *Cluster) Exec(sql string, args ...any) {
	c.T.Helper()
	ctx, cancel := dbCtx()
	defer cancel()
	if _, err := c.DB.Exec(ctx, sql, args...); err != nil {
		c.T.Fatalf("cluster: %s: %v", sql, err)
	}
}

// DisableSchedules turns every job's cron off (straight in job_settings, which each
// scheduler pass reads), so the cluster can settle.
func (c *Cluster) DisableSchedules() {
	c.T.Helper()
	ctx, cancel := dbCtx()
	defer cancel()
	if _, err := c.DB.Exec(ctx, `UPDATE job_settings SET enabled = false`); err != nil {
		c.T.Fatalf("cluster: disable schedules: %v", err)
	}
	c.Logf("schedules disabled")
}

// QueryInt runs a query returning one integer.
func (c *Cluster) QueryInt(sql string, args ...any) int64 {
	c.T.Helper()
	ctx, cancel := dbCtx()
	defer cancel()
	var n int64
	if err := c.DB.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		c.T.Fatalf("cluster: %s: %v", sql, err)
	}
	return n
}

// ShardRow is a shard of a sharded run (a job_runs row with a parent_run_id) as the harness
// reads it straight from PostgreSQL.
type ShardRow struct {
	ID              int64
	RunID           int64 // the sharded run
	Key             string
	Index           int
	Spec            string
	Status          string
	StopReason      string
	Instance        string // the holder, or the last one ("" for a shard never claimed)
	Token           string
	Checkpoint      string
	StartCheckpoint string // the checkpoint its last claim started from
	Processed       int64
	Attempt         int
	LeaseUntil      time.Time
	FinishedAt      *time.Time
	Message         string
}

// Held reports whether an instance holds the shard now (STARTING or RUNNING).
func (s *ShardRow) Held() bool { return s.Status == "STARTING" || s.Status == "RUNNING" }

// Shards reads the shards of run runID in plan order (none before they are planned). It and
// WaitShards are functions, not methods: Cluster has as many methods as a type may.
func Shards(c *Cluster, runID int64) []*ShardRow {
	c.T.Helper()
	shards, err := readShards(c, runID)
	if err != nil {
		c.T.Fatalf("cluster: read the shards of run %d: %v", runID, err)
	}
	return shards
}

func readShards(c *Cluster, runID int64) ([]*ShardRow, error) {
	ctx, cancel := dbCtx()
	defer cancel()
	rows, err := c.DB.Query(ctx, `SELECT id, parent_run_id, shard_key, shard_index, shard_spec, status, COALESCE(stop_reason, ''),
			instance, lease_token, checkpoint, start_checkpoint, processed, attempt, lease_until, finished_at, message
		FROM job_runs WHERE parent_run_id = $1 ORDER BY shard_index`, runID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*ShardRow, error) {
		var s ShardRow
		err := r.Scan(&s.ID, &s.RunID, &s.Key, &s.Index, &s.Spec, &s.Status, &s.StopReason, &s.Instance, &s.Token, &s.Checkpoint,
			&s.StartCheckpoint, &s.Processed, &s.Attempt, &s.LeaseUntil, &s.FinishedAt, &s.Message)
		return &s, err
	})
}

// WaitShards polls the shards of run runID every 50ms until ok holds for them, and returns
// them; database errors are retried until the timeout.
func WaitShards(c *Cluster, runID int64, timeout time.Duration, what string, ok func([]*ShardRow) bool) []*ShardRow {
	c.T.Helper()
	deadline := time.Now().Add(timeout)
	var last []*ShardRow
	var lastErr error
	for {
		s, err := readShards(c, runID)
		if err == nil {
			last = s
			if ok(s) {
				return s
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			c.T.Fatalf("cluster: shards of run %d: %s: not within %s (last %s, last error %v)", runID, what, timeout, describeShards(last), lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// describeShards sums up shards: each one's key, status, holder and checkpoint.
func describeShards(shards []*ShardRow) string {
	if len(shards) == 0 {
		return "<no shards>"
	}
	var b strings.Builder
	for _, s := range shards {
		fmt.Fprintf(&b, "[%s %s on %q at %q] ", s.Key, s.Status, s.Instance, s.Checkpoint)
	}
	return b.String()
}
