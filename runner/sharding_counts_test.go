package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// ledgerCounters are a shard's counters as its targets' ledger rows give them.
type ledgerCounters struct{ processed, succeeded, failed, ambiguous int64 }

// shardLedger reads the ledger of a shard's targets ("s<key>-…") in the run's generation.
func (b *bundle) shardLedger(job string, gen int64, key string) ledgerCounters {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT state, count(*) FROM job_ledger
		WHERE job_name = $1 AND generation = $2 AND target_key LIKE $3 GROUP BY state`, job, gen, "s"+key+"-%")
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	var c ledgerCounters
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			b.T.Fatal(err)
		}
		c.processed += n
		switch bt.LedgerState(state) {
		case bt.LedgerConfirmed:
			c.succeeded += n
		case bt.LedgerAmbiguous:
			c.ambiguous += n
		case bt.LedgerSkipped:
		default:
			c.failed += n
		}
	}
	if err := rows.Err(); err != nil {
		b.T.Fatal(err)
	}
	return c
}

// checkShardCounters checks that every shard of an ended run, and the run, count each of their
// targets once: their counters are the ledger's, and progress does not exceed its total.
func (b *bundle) checkShardCounters(r *runner.Runner, job string, runID int64) []string {
	b.T.Helper()
	run, err := r.Runs().Get(context.Background(), runID)
	if err != nil {
		b.T.Fatal(err)
	}
	var bad []string
	var sum ledgerCounters
	for _, s := range shardsOf(b.T, r, runID) {
		want := b.shardLedger(job, run.Generation, s.Shard.Key)
		sum.processed += want.processed
		sum.succeeded += want.succeeded
		sum.failed += want.failed
		sum.ambiguous += want.ambiguous
		got := ledgerCounters{s.Processed, s.Succeeded, s.Failed, s.Ambiguous}
		if got != want {
			bad = append(bad, fmt.Sprintf("shard %s (%s, attempt %d) counts %+v, its ledger %+v", s.Shard.Key, s.Status, s.Attempt, got, want))
		}
		if s.Total != nil && s.Processed > *s.Total {
			bad = append(bad, fmt.Sprintf("shard %s progress %d/%d", s.Shard.Key, s.Processed, *s.Total))
		}
	}
	got := ledgerCounters{run.Processed, run.Succeeded, run.Failed, run.Ambiguous}
	if got != sum {
		bad = append(bad, fmt.Sprintf("run %d (%s) counts %+v, its shards' ledger %+v", runID, run.Status, got, sum))
	}
	if run.Total != nil && run.Processed > *run.Total {
		bad = append(bad, fmt.Sprintf("run %d progress %d/%d", runID, run.Processed, *run.Total))
	}
	return bad
}

// TestShardRequeueCountsInDoubtTargetOnce: a shard whose holder died with an intent in flight
// is requeued; the recoverer quarantines the intent, and the next holder, meeting the target
// AMBIGUOUS, does not count it a second time, in the shard or in its run.
func TestShardRequeueCountsInDoubtTargetOnce(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-count-amb", 2, 3)
	job.policy = &runner.AutoResumePolicy{Enabled: true, MaxAttempts: 3, Backoff: 0, On: bt.ResumeCauses}
	frozen, stuck := make(chan struct{}), make(chan struct{})
	defer close(frozen)
	var once sync.Once
	job.gate = func(s runner.ShardInfo, item int) <-chan struct{} {
		if s.Key == "0" && item == 2 {
			var g <-chan struct{}
			once.Do(func() { close(stuck); g = frozen })
			return g
		}
		return nil
	}
	rs := b.instances(2, 1, job, func(c *runner.Config) { c.Scheduler = true })
	id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
	<-stuck
	requeueShardZeroAndCheck(t, b, rs[0], job.name, id)
}

// TestShardRequeueAfterBackoffCountsOnce: a holder that dies while a batch waits out its retry
// backoff has committed the batch's other outcomes without its checkpoint; the next holder
// meets them again from the checkpoint and does not count them twice.
func TestShardRequeueAfterBackoffCountsOnce(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-count-backoff", 2, 3)
	job.batch = true
	job.retry = &runner.RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Minute, MaxBackoff: 10 * time.Minute}
	job.policy = &runner.AutoResumePolicy{Enabled: true, MaxAttempts: 3, Backoff: 0, On: bt.ResumeCauses}
	var failed atomic.Bool
	job.itemErr = func(s runner.ShardInfo, item int) error {
		if s.Key == "0" && item == 2 && failed.CompareAndSwap(false, true) {
			return runner.Transient(errors.New("try again"))
		}
		return nil
	}
	rs := b.instances(2, 1, job, func(c *runner.Config) { c.Scheduler = true })
	id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
	testenv.Eventually(t, 20*time.Second, "shard 0 to wait out its backoff", func() bool {
		return b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND target_key = 's0-2' AND state = 'TRANSIENT'`, job.name) == 1 &&
			b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND target_key IN ('s0-1', 's0-3') AND state = 'CONFIRMED'`, job.name) == 2
	})
	requeueShardZeroAndCheck(t, b, rs[0], job.name, id)
}

// TestShardShutdownInBackoffKeepsProgressWithinTotal: an instance shut down while a shard's
// batch waits to retry records the failure to retry and hands the shard back; the instance that
// continues it from its checkpoint counts each target once, and progress stays within total.
func TestShardShutdownInBackoffKeepsProgressWithinTotal(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-count-shutdown", 2, 4)
	job.batch = true
	job.retry = &runner.RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Minute, MaxBackoff: 10 * time.Minute}
	job.policy = &runner.AutoResumePolicy{Enabled: true, MaxAttempts: 3, Backoff: 0, On: bt.ResumeCauses}
	var failed atomic.Int32
	job.itemErr = func(s runner.ShardInfo, item int) error {
		if item == 3 && failed.Add(1) <= 2 {
			return runner.Transient(errors.New("try again"))
		}
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	cfg := b.Config()
	cfg.Instance, cfg.PoolSize, cfg.DefaultLease = "leaving", 2, 2*time.Second
	leaving := b.NewRunner(cfg, job)
	done := make(chan struct{})
	go func() { defer close(done); _ = leaving.Run(ctx) }()
	id := mustStart(t, leaving, runner.StartParams{Job: job.name})
	testenv.Eventually(t, 20*time.Second, "both shards to wait out their backoff", func() bool {
		return b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND state = 'TRANSIENT'`, job.name) == 2
	})
	stop()
	<-done
	other := b.instances(1, 2, job, func(c *runner.Config) { c.Scheduler = true })[0]
	waitShards(t, other, id, "every shard to end", func(s []*bt.RunRecord) bool {
		for _, sh := range s {
			if sh.Status.Open() {
				return false
			}
		}
		return true
	})
	run := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	if run.Status != bt.StatusSucceeded {
		t.Fatalf("run %s (%s)", run.Status, run.Message)
	}
	if bad := b.checkShardCounters(other, job.name, id); len(bad) > 0 {
		t.Fatalf("counters off:\n%s", strings.Join(bad, "\n"))
	}
}

// TestShardPlanReplyLost: the commit of a run's shards lands but its reply is lost. Made
// again, PlanShards finds the shards planned and the run goes on; lost for as long as the
// worker retries, the run's end hands it to its shards all the same. Either way every shard
// is claimed, the run ends SUCCEEDED, and no shard is left PENDING.
func TestShardPlanReplyLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		lost int
	}{{"once", 1}, {"until the worker gives up", 1 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			job := newShardedJob(b, "sharded-lost-reply", 3, 2)
			job.lease = 2 * time.Second
			// The shards' calls wait until the run's own worker is done, however it ended.
			planDone := make(chan struct{})
			job.gate = func(runner.ShardInfo, int) <-chan struct{} { return planDone }
			rs := b.instances(2, 2, job, func(c *runner.Config) { c.Scheduler = true })
			rs[0].LosePlanShardsReplies(tc.lost)
			rs[1].LosePlanShardsReplies(tc.lost)
			id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
			testenv.Eventually(t, 20*time.Second, "the run's own worker to end", func() bool {
				return !rs[0].Active(id) && !rs[1].Active(id)
			})
			close(planDone)
			run := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled)
			if run.Status != bt.StatusSucceeded || run.Succeeded != 6 {
				t.Fatalf("run %s (%s, %s), %d succeeded; want SUCCEEDED with 6", run.Status, run.StopReason, run.Message, run.Succeeded)
			}
			if n := b.count(`SELECT count(*) FROM job_runs WHERE parent_run_id = $1 AND status = 'PENDING'`, id); n != 0 {
				t.Fatalf("%d shards left PENDING", n)
			}
			for target, n := range b.effects() {
				if n != 1 {
					t.Errorf("target %s made its effect %d times", target, n)
				}
			}
		})
	}
}

// TestShardOrphansOfAnEndedRunAreSettled: shards a run left PENDING when it ended without
// them are ended by the recoverer as their run ended, and the run stays as it ended.
func TestShardOrphansOfAnEndedRunAreSettled(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-orphans", 3, 1)
	job.maxConc = 1
	hold := make(chan struct{})
	defer close(hold)
	job.gate = func(runner.ShardInfo, int) <-chan struct{} { return hold }
	r := b.instances(1, 2, job, func(c *runner.Config) { c.Scheduler = true })[0]
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	waitShards(t, r, id, "one shard held, two pending", func(s []*bt.RunRecord) bool {
		pending := 0
		for _, sh := range s {
			if sh.Status == bt.StatusPending {
				pending++
			}
		}
		return len(s) == 3 && pending == 2
	})
	// The run ends by itself, as a worker whose PlanShards reply was lost ended it.
	if _, err := b.Pool.Exec(context.Background(), `UPDATE job_runs SET status = 'FAILED', stop_reason = 'DATABASE_UNAVAILABLE',
		finished_at = now(), message = 'the database went away' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	shards := waitShards(t, r, id, "no shard left PENDING", func(s []*bt.RunRecord) bool {
		for _, sh := range s {
			if sh.Status == bt.StatusPending {
				return false
			}
		}
		return true
	})
	for _, s := range shards {
		if s.Status != bt.StatusFailed && !s.Status.Active() {
			t.Errorf("shard %s is %s (%s); want FAILED", s.Shard.Key, s.Status, s.Message)
		}
	}
	if run := b.run(id); run.Status != bt.StatusFailed || run.StopReason != bt.StopReason("DATABASE_UNAVAILABLE") {
		t.Errorf("run %s (%s); want it FAILED as it ended", run.Status, run.StopReason)
	}
}

// requeueShardZeroAndCheck ends the lease of run id's shard 0, as its holder's death would, waits
// for the run to succeed once another holder has taken the shard over, and checks that the run's
// and every shard's counters equal the ledger's.
func requeueShardZeroAndCheck(t *testing.T, b *bundle, r *runner.Runner, job string, id int64) {
	t.Helper()
	if _, err := b.Pool.Exec(context.Background(), `UPDATE job_runs SET lease_until = now() - interval '1 second'
		WHERE parent_run_id = $1 AND shard_key = '0'`, id); err != nil {
		t.Fatal(err)
	}
	run := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	if run.Status != bt.StatusSucceeded {
		t.Fatalf("run %s (%s)", run.Status, run.Message)
	}
	if bad := b.checkShardCounters(r, job, id); len(bad) > 0 {
		t.Fatalf("counters off:\n%s", strings.Join(bad, "\n"))
	}
}
