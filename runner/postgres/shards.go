package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// shardStore holds the shards of sharded runs: job_runs rows with a parent_run_id, and the
// generations' shard plans in job_checkpoints (migration 21, docs/adr/0019-sharded-runs.md).
//
// Locks are always taken shard first, run second: a shard's end settles its run at commit
// (baton_settle_run, which locks the run and then ends the run's PENDING shards when it is
// stopping), a claim locks the shard and then the run without waiting (SKIP LOCKED), and a
// cancel or pause locks the run alone and settles it. So no two of them wait on each other in
// opposite orders.
type shardStore struct{ *Store }

var _ store.Shards = shardStore{}

// ShardPlan returns the generation's shard plan, in order.
func (s shardStore) ShardPlan(ctx context.Context, job string, gen int64) ([]store.PlannedShard, error) {
	rows, err := s.pool.Query(ctx, `SELECT shard, shard_index, shard_spec, token, done FROM job_checkpoints
		WHERE job_name = $1 AND generation = $2 AND shard_index IS NOT NULL ORDER BY shard_index`, job, gen)
	return collect(rows, err, fmt.Sprintf("read the shard plan of %s generation %d", job, gen), func(row pgx.Row) (store.PlannedShard, error) {
		var p store.PlannedShard
		return p, row.Scan(&p.Key, &p.Index, &p.Spec, &p.Checkpoint, &p.Done)
	})
}

// PlanShards records the plan (when the generation has none) and makes the run's shards, in
// one transaction that holds the run's row from its fenced read to the commit. Made again for
// a run that has its shards (a commit whose reply was lost), it changes nothing and succeeds.
func (s shardStore) PlanShards(ctx context.Context, f store.Fence, plan []store.PlannedShard) (store.LeaseState, bt.StopReason, error) {
	var ls store.LeaseState
	if len(plan) == 0 {
		return ls, "", bt.Errorf(bt.CodeInvalidInput, "a sharded run needs at least one shard")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return ls, "", fmt.Errorf("plan the shards of run %d: %w", f.RunID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	ls, pause, err := leaseResult(tx.QueryRow(ctx, `SELECT `+leaseReturning+` FROM job_runs WHERE `+fenceCond+` FOR UPDATE`, f.RunID, f.Token),
		"plan shards", f)
	if err != nil || ls.CancelRequested || pause != "" {
		return ls, pause, err // asked to stop: the run ends as its worker sees fit, with no shard
	}
	// Made again after a commit whose reply was lost: the run has its shards already.
	var planned bool
	if err := tx.QueryRow(ctx, `SELECT shard_total IS NOT NULL FROM job_runs WHERE id = $1`, f.RunID).Scan(&planned); err != nil {
		return ls, "", fmt.Errorf("plan the shards of run %d: %w", f.RunID, err)
	}
	if planned {
		return ls, "", nil
	}
	keys, indexes, specs := make([]string, len(plan)), make([]int32, len(plan)), make([]string, len(plan))
	for i, p := range plan {
		keys[i], indexes[i], specs[i] = p.Key, int32(p.Index), p.Spec
	}
	// The plan is the generation's first run's: a later run of the generation passes it back
	// as it read it, and an existing plan row is left as it is.
	if _, err := tx.Exec(ctx, `INSERT INTO job_checkpoints (job_name, generation, shard, token, processed, run_id, shard_index, shard_spec)
		SELECT r.job_name, r.generation, u.k, '', 0, r.id, u.i, u.spec
		FROM job_runs r, unnest($2::text[], $3::int[], $4::text[]) AS u(k, i, spec) WHERE r.id = $1
		ON CONFLICT (job_name, generation, shard) DO UPDATE SET shard_index = EXCLUDED.shard_index, shard_spec = EXCLUDED.shard_spec
		WHERE job_checkpoints.shard_index IS NULL`, f.RunID, keys, indexes, specs); err != nil {
		return ls, "", fmt.Errorf("record the shard plan of run %d: %w", f.RunID, err)
	}
	// A shard starts from its checkpoint in the generation; a replay walks every shard from its
	// beginning and moves no checkpoint. A shard the generation finished is not worked again.
	tag, err := tx.Exec(ctx, `INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds,
			lease_until, generation, generation_started_at, replay_request_id, checkpoint, start_checkpoint, job_version,
			parent_run_id, shard_key, shard_index, shard_spec, trace_parent, message, finished_at)
		SELECT r.job_name, CASE WHEN x.done THEN 'SUCCEEDED' ELSE 'PENDING' END, r.trigger, r.mode, r.requested_by, '', '', r.lease_seconds,
			statement_timestamp(), r.generation, r.generation_started_at, r.replay_request_id, x.cp, x.cp, r.job_version,
			r.id, c.shard, c.shard_index, c.shard_spec, r.trace_parent,
			CASE WHEN x.done THEN 'finished earlier in generation ' || r.generation ELSE '' END,
			CASE WHEN x.done THEN statement_timestamp() END
		FROM job_runs r
		JOIN job_checkpoints c ON c.job_name = r.job_name AND c.generation = r.generation AND c.shard_index IS NOT NULL
		CROSS JOIN LATERAL (SELECT r.trigger <> 'REPLAY' AND c.done AS done,
			CASE WHEN r.trigger = 'REPLAY' THEN '' ELSE c.token END AS cp) x
		WHERE r.id = $1
		ORDER BY c.shard_index`, f.RunID)
	if err != nil {
		return ls, "", fmt.Errorf("make the shards of run %d: %w", f.RunID, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE job_runs SET shard_total = $2, heartbeat_at = statement_timestamp() WHERE id = $1`,
		f.RunID, tag.RowsAffected()); err != nil {
		return ls, "", fmt.Errorf("hand run %d to its shards: %w", f.RunID, err)
	}
	// Every shard done already (a RESUME after the last one finished): the run ends here.
	if _, err := tx.Exec(ctx, `SELECT baton_settle_run($1)`, f.RunID); err != nil {
		return ls, "", fmt.Errorf("settle run %d: %w", f.RunID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return ls, "", fmt.Errorf("commit the shards of run %d: %w", f.RunID, err)
	}
	return ls, "", nil
}

// claimableShard is a pending shard that is due, of a run that may take one more: read
// unlocked to choose, and checked again under the run's lock (claimableRun).
const claimableShard = `SELECT c.id, c.parent_run_id FROM job_runs c
	JOIN job_runs p ON p.id = c.parent_run_id
	JOIN job_settings js ON js.name = c.job_name
	WHERE c.status = 'PENDING' AND c.job_name = ANY($1) AND (c.auto_resume_at IS NULL OR c.auto_resume_at <= statement_timestamp())
		AND p.status = 'RUNNING' AND NOT p.cancel_requested AND p.pause_reason IS NULL AND NOT js.paused
		AND NOT (SELECT maintenance FROM cluster_state)
		AND (js.max_concurrent_shards = 0 OR (SELECT count(*) FROM job_runs s
			WHERE s.parent_run_id = c.parent_run_id AND s.status IN ('STARTING', 'RUNNING')) < js.max_concurrent_shards)
	ORDER BY c.id
	LIMIT 1
	FOR UPDATE OF c SKIP LOCKED`

// claimableRun checks the chosen shard's run again, its row locked: running, not stopping, its
// job not paused, the cluster not in maintenance, and below the cap. Every claim of a run's
// shards holds the run's row, so the count sees each claim before this one.
const claimableRun = `SELECT p.status = 'RUNNING' AND NOT p.cancel_requested AND p.pause_reason IS NULL AND NOT js.paused
		AND NOT cs.maintenance
		AND (js.max_concurrent_shards = 0 OR (SELECT count(*) FROM job_runs s
			WHERE s.parent_run_id = p.id AND s.status IN ('STARTING', 'RUNNING')) < js.max_concurrent_shards)
	FROM job_runs p JOIN job_settings js ON js.name = p.job_name CROSS JOIN cluster_state cs WHERE p.id = $1`

// ClaimShard claims a pending shard: the shard's row is locked (others skip it), then its run's
// row without waiting (a claim never waits, so it cannot deadlock with a shard's end or a cancel,
// which lock the run first), then the run is checked again and the shard made STARTING.
func (s shardStore) ClaimShard(ctx context.Context, c store.ShardClaim) (*bt.RunRecord, *time.Duration, error) {
	if len(c.Jobs) == 0 {
		return nil, nil, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("claim a shard: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	var shard, run int64
	err = tx.QueryRow(ctx, claimableShard, c.Jobs).Scan(&shard, &run)
	if errors.Is(err, pgx.ErrNoRows) {
		next, err := nextShardDue(ctx, tx, c.Jobs) // on the claim's connection: it holds one already
		return nil, next, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("find a pending shard: %w", err)
	}
	var count int
	if err := tx.QueryRow(ctx, `SELECT shard_total FROM job_runs WHERE id = $1 FOR UPDATE SKIP LOCKED`, run).Scan(&count); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			// Another claim, a shard's end or a stop holds the run: try again soon.
			soon := 20 * time.Millisecond
			return nil, &soon, nil
		}
		return nil, nil, fmt.Errorf("lock run %d for a shard claim: %w", run, err)
	}
	var ok bool
	if err := tx.QueryRow(ctx, claimableRun, run).Scan(&ok); err != nil {
		return nil, nil, fmt.Errorf("check run %d for a shard claim: %w", run, err)
	}
	if !ok {
		soon := 20 * time.Millisecond
		return nil, &soon, nil
	}
	rec, err := scanRun(tx.QueryRow(ctx, `WITH c AS (
			UPDATE job_runs SET status = 'STARTING', instance = $2, lease_token = $3,
				lease_until = statement_timestamp() + make_interval(secs => lease_seconds), heartbeat_at = statement_timestamp(),
				start_checkpoint = checkpoint, auto_resume_at = NULL,
				-- The holder counts every target after the checkpoint, once (migration 28).
				processed = checkpoint_processed, succeeded = checkpoint_succeeded, failed = checkpoint_failed,
				skipped = checkpoint_skipped, ambiguous = checkpoint_ambiguous, finished_at = NULL, stop_reason = NULL, message = '',
				auto_resume_outcome = NULL, last_progress_at = statement_timestamp(), last_checkpoint_at = statement_timestamp()
			WHERE id = $1 RETURNING *
		), e AS (
			INSERT INTO job_run_events (run_id, kind, shard, detail)
			SELECT id, 'SHARD_CLAIMED', shard_key, format('claimed by %s (attempt %s) %s', instance, attempt + 1,
				CASE WHEN checkpoint = '' THEN 'from the beginning' ELSE format('from checkpoint %L', checkpoint) END) FROM c
		)
		SELECT `+runColumns+` FROM c`, shard, c.Instance, c.Token))
	if err != nil {
		return nil, nil, fmt.Errorf("claim shard %d: %w", shard, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, nil, fmt.Errorf("commit the claim of shard %d: %w", shard, err)
	}
	rec.Shard.Count = count
	return rec, nil, nil
}

// ReleaseShard hands back a shard claimed under f that its holder has not activated.
func (s shardStore) ReleaseShard(ctx context.Context, f store.Fence) error {
	if _, err := s.pool.Exec(ctx, `UPDATE job_runs SET status = 'PENDING', instance = '', lease_token = '', lease_until = statement_timestamp()
		WHERE id = $1 AND lease_token = $2 AND status = 'STARTING' AND parent_run_id IS NOT NULL`, f.RunID, f.Token); err != nil {
		return fmt.Errorf("hand back shard run %d: %w", f.RunID, err)
	}
	return nil
}

// nextShardDue returns how long until the earliest pending shard of jobs that waits out its
// backoff is due, or nil when none waits.
func nextShardDue(ctx context.Context, tx pgx.Tx, jobs []string) (*time.Duration, error) {
	var secs *float64
	if err := tx.QueryRow(ctx, `SELECT extract(epoch FROM min(auto_resume_at) - statement_timestamp())::float8 FROM job_runs
		WHERE status = 'PENDING' AND job_name = ANY($1) AND auto_resume_at > statement_timestamp()`, jobs).Scan(&secs); err != nil {
		return nil, fmt.Errorf("read the next pending shard: %w", err)
	}
	if secs == nil {
		return nil, nil
	}
	d := time.Duration(*secs * float64(time.Second))
	return &d, nil
}

// ShardsOfRuns returns each run's shards in plan order.
func (s shardStore) ShardsOfRuns(ctx context.Context, runIDs []int64) (map[int64][]*bt.RunRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM job_runs WHERE parent_run_id = ANY($1) ORDER BY parent_run_id, shard_index`, runIDs)
	shards, err := collect(rows, err, "read the shards of runs", scanRun)
	out, err := grouped(shards, err, func(r *bt.RunRecord) int64 { return r.Shard.RunID })
	for _, list := range out {
		for _, s := range list {
			s.Shard.Count = len(list)
		}
	}
	return out, err
}

// SetMaxConcurrentShards sets the job's cap on concurrent shards and returns the job.
func (s jobStore) SetMaxConcurrentShards(ctx context.Context, job string, n int, actor string) (*bt.JobSettings, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `UPDATE job_settings SET max_concurrent_shards = $2,
			version = version + 1, updated_at = statement_timestamp(), updated_by = $3
		WHERE name = $1 RETURNING `+jobColumns, job, n, actor))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "job %q not found", job)
	}
	if err != nil {
		return nil, fmt.Errorf("set the shard cap of %s: %w", job, err)
	}
	return j, nil
}

// sumShards gives each sharded run still going among runs the sums of its shards' counters, in
// one statement: a sharded run's own counters are written once, when it ends.
func (s *Store) sumShards(ctx context.Context, runs ...*bt.RunRecord) error {
	var ids []int64
	byID := map[int64]*bt.RunRecord{}
	for _, r := range runs {
		if r != nil && r.ShardTotal > 0 && r.Status.Active() {
			ids = append(ids, r.ID)
			byID[r.ID] = r
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT parent_run_id, sum(processed)::bigint, sum(succeeded)::bigint, sum(failed)::bigint,
			sum(skipped)::bigint, sum(ambiguous)::bigint, sum(total)::bigint, max(heartbeat_at), max(last_progress_at), max(last_checkpoint_at)
		FROM job_runs WHERE parent_run_id = ANY($1) GROUP BY parent_run_id`, ids)
	if err != nil {
		return fmt.Errorf("sum the shards of runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var total *int64
		var heartbeat, progress, checkpoint time.Time
		var c bt.RunRecord
		if err := rows.Scan(&id, &c.Processed, &c.Succeeded, &c.Failed, &c.Skipped, &c.Ambiguous, &total, &heartbeat, &progress, &checkpoint); err != nil {
			return fmt.Errorf("sum the shards of runs: %w", err)
		}
		r := byID[id]
		r.Processed, r.Succeeded, r.Failed, r.Skipped, r.Ambiguous = c.Processed, c.Succeeded, c.Failed, c.Skipped, c.Ambiguous
		if total != nil {
			r.Total = total
		}
		r.HeartbeatAt = later(r.HeartbeatAt, heartbeat)
		r.LastProgressAt = later(r.LastProgressAt, progress)
		r.LastCheckpointAt = later(r.LastCheckpointAt, checkpoint)
	}
	return rows.Err()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
