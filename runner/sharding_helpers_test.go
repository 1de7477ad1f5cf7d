package runner_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// shardedJob works shards × perShard targets, shard by shard: target "s<shard>-<item>", each
// item an External call that records its effect in shard_effects (no key: a second effect
// shows as a second row), resuming after the shard's checkpoint.
type shardedJob struct {
	name     string
	shards   int
	perShard int
	maxConc  int
	lease    time.Duration
	policy   *runner.AutoResumePolicy
	conds    []runner.StopCondition
	plan     func(ctx context.Context, p runner.ShardPlan) ([]runner.Shard, error)
	// gate, when set, may hold an item's call until its channel closes.
	gate func(shard runner.ShardInfo, item int) <-chan struct{}
	// itemErr, when set, fails an item's call.
	itemErr func(shard runner.ShardInfo, item int) error
	// started receives each shard's key as its Run begins, if not nil.
	started chan string
	// batch works each shard's items in one ProcessBatch (its checkpoint the last item's).
	batch bool
	// retry is the job's retry policy; nil: one attempt.
	retry *runner.RetryPolicy
	// hold, when set, may hold a shard's Run at "start" (before anything) or "end" (after its
	// last item's outcome is committed) until its channel closes.
	hold func(shard runner.ShardInfo, at string) <-chan struct{}

	b *bundle

	mu      sync.Mutex
	holders map[string]map[int64]bool // shard key → the shard runs that worked it
}

func newShardedJob(b *bundle, name string, shards, perShard int) *shardedJob {
	b.T.Helper()
	if _, err := b.Pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS shard_effects (target text, idem text, at timestamptz DEFAULT clock_timestamp())`); err != nil {
		b.T.Fatal(err)
	}
	return &shardedJob{name: name, shards: shards, perShard: perShard, b: b, holders: map[string]map[int64]bool{}}
}

func (j *shardedJob) Info() runner.JobInfo {
	s := &runner.Sharding{Count: j.shards, MaxConcurrent: j.maxConc, PlanFunc: j.plan}
	conds := j.conds
	if conds == nil {
		conds = []runner.StopCondition{}
	}
	retry := runner.RetryPolicy{MaxAttempts: 1}
	if j.retry != nil {
		retry = *j.retry
	}
	return runner.JobInfo{Name: j.name, Version: "1", Lease: j.lease, Shards: s, AutoResume: j.policy, StopConditions: conds,
		Retry: retry}
}

func (j *shardedJob) Run(ctx context.Context, run *runner.Run) error {
	shard, ok := run.Shard()
	if !ok {
		return fmt.Errorf("run %d of a sharded job is no shard", run.ID())
	}
	if j.started != nil {
		j.started <- shard.Key
	}
	if j.hold != nil {
		if g := j.hold(shard, "start"); g != nil {
			<-g
		}
		defer func() {
			if g := j.hold(shard, "end"); g != nil {
				<-g
			}
		}()
	}
	start := 1
	if cp := run.Checkpoint(); cp != "" {
		n, err := strconv.Atoi(cp)
		if err != nil {
			return err
		}
		start = n + 1
	}
	if err := run.SetTotal(ctx, int64(j.perShard)); err != nil {
		return err
	}
	call := func(ctx context.Context, target string, i int, a *runner.Attempt) error {
		j.mu.Lock()
		if j.holders[shard.Key] == nil {
			j.holders[shard.Key] = map[int64]bool{}
		}
		j.holders[shard.Key][run.ID()] = true
		j.mu.Unlock()
		if j.gate != nil {
			if g := j.gate(shard, i); g != nil {
				<-g
			}
		}
		if _, err := j.b.Pool.Exec(context.Background(), `INSERT INTO shard_effects (target, idem) VALUES ($1, $2)`, target, a.IdempotencyKey); err != nil {
			return err
		}
		if j.itemErr != nil {
			return j.itemErr(shard, i)
		}
		return nil
	}
	if j.batch {
		var items []runner.Item
		index := map[string]int{}
		for i := start; i <= j.perShard; i++ {
			target := fmt.Sprintf("s%s-%d", shard.Key, i)
			index[target] = i
			items = append(items, runner.Item{Target: target, Checkpoint: strconv.Itoa(i), External: true})
		}
		if len(items) == 0 {
			return nil
		}
		return run.ProcessBatch(ctx, items, 1, func(ctx context.Context, item runner.Item, a *runner.Attempt) error {
			return call(ctx, item.Target, index[item.Target], a)
		})
	}
	for i := start; i <= j.perShard; i++ {
		target := fmt.Sprintf("s%s-%d", shard.Key, i)
		item := runner.Item{Target: target, Checkpoint: strconv.Itoa(i), External: true}
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			return call(ctx, target, i, a)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// shards reads a run's shards as the runner's service shows them.
func shardsOf(t testing.TB, r *runner.Runner, runID int64) []*bt.RunRecord {
	t.Helper()
	shards, err := r.Runs().Shards(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return shards
}

// waitShards polls until every shard of run satisfies ok.
func waitShards(t testing.TB, r *runner.Runner, runID int64, what string, ok func(s []*bt.RunRecord) bool) []*bt.RunRecord {
	t.Helper()
	var last []*bt.RunRecord
	defer func() {
		if t.Failed() {
			for _, s := range last {
				t.Logf("shard %s: %s on %q attempt %d checkpoint %q: %s", s.Shard.Key, s.Status, s.Instance, s.Attempt, s.Checkpoint, s.Message)
			}
		}
	}()
	testenv.Eventually(t, 30*time.Second, what, func() bool {
		last = shardsOf(t, r, runID)
		return ok(last)
	})
	return last
}

// effects counts the effects recorded per target.
func (b *bundle) effects() map[string]int {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT target, count(*) FROM shard_effects GROUP BY target`)
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			b.T.Fatal(err)
		}
		out[t] = n
	}
	return out
}

// containsAll reports whether s contains every one of parts.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
