package runner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// instances makes n runners of one cluster on b, each with slots worker slots, all running job.
func (b *bundle) instances(n, slots int, job runner.Job, mod func(*runner.Config)) []*runner.Runner {
	b.T.Helper()
	rs := make([]*runner.Runner, n)
	for i := range rs {
		rs[i] = b.runner(func(c *runner.Config) {
			c.Instance, c.PoolSize = fmt.Sprintf("node%d", i+1), slots
			if mod != nil {
				mod(c)
			}
		}, job)
	}
	return rs
}

// TestShardedRunUsesEveryInstance: one run of a sharded job is worked by every instance at
// once, each shard from its own lease; the run ends SUCCEEDED when its last shard does, its
// counters the sums of its shards', and every target made its effect once.
func TestShardedRunUsesEveryInstance(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-all", 6, 8)
	// Each shard's first item waits until every instance holds a shard: the run must spread.
	spread := make(chan struct{})
	job.gate = func(_ runner.ShardInfo, item int) <-chan struct{} {
		if item == 1 {
			return spread
		}
		return nil
	}
	rs := b.instances(3, 2, job, nil)
	id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
	waitShards(t, rs[0], id, "every instance to hold a shard", func(s []*bt.RunRecord) bool {
		held := map[string]bool{}
		for _, sh := range s {
			if sh.Status.Active() {
				held[sh.Instance] = true
			}
		}
		return len(held) == 3
	})
	close(spread)
	run := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	if run.Status != bt.StatusSucceeded || run.Processed != 48 || run.Succeeded != 48 {
		t.Fatalf("run = %s, %d processed, %d succeeded; want SUCCEEDED, 48, 48 (%s)", run.Status, run.Processed, run.Succeeded, run.Message)
	}
	shards := shardsOf(t, rs[1], id)
	if len(shards) != 6 {
		t.Fatalf("%d shards, want 6", len(shards))
	}
	for i, s := range shards {
		if s.Shard.Index != i || s.Shard.Key != fmt.Sprint(i) || s.Status != bt.StatusSucceeded || s.Succeeded != 8 || s.Checkpoint != "8" {
			t.Errorf("shard %d = %+v (%s, %d succeeded, checkpoint %q)", i, s.Shard, s.Status, s.Succeeded, s.Checkpoint)
		}
	}
	effects := b.effects()
	if len(effects) != 48 {
		t.Fatalf("%d targets had effects, want 48", len(effects))
	}
	for target, n := range effects {
		if n != 1 {
			t.Errorf("target %s made its effect %d times", target, n)
		}
	}
	key := runner.CountsKey{Job: job.name, Generation: run.Generation, RunID: id}
	all, err := rs[2].Ledger().Counts(context.Background(), []runner.CountsKey{key})
	if err != nil {
		t.Fatal(err)
	}
	if counts := all[key]; counts[bt.LedgerConfirmed] != 48 {
		t.Fatalf("the run's ledger counts %v, want 48 CONFIRMED (its shards' sums)", all[key])
	}
	// The run is one run: lists show it, not its shards.
	runs, err := rs[0].Runs().List(context.Background(), runner.RunFilter{JobName: job.name})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != id || runs[0].ShardTotal != 6 {
		t.Fatalf("runs of the job = %d (first %+v), want the one sharded run", len(runs), runs[0])
	}
}

// TestShardedRunStartsOnce is the seed's concurrency test on a sharded job: eight concurrent
// starts across two instances make one run.
func TestShardedRunStartsOnce(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-once", 4, 2)
	hold := make(chan struct{})
	job.gate = func(runner.ShardInfo, int) <-chan struct{} { return hold }
	rs := b.instances(2, 4, job, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var started []int64
	codes := map[bt.Code]int{}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, err := rs[i%2].Start(context.Background(), runner.StartParams{Job: job.name})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				codes[bt.CodeOf(err)]++
				return
			}
			started = append(started, run.ID)
		}()
	}
	wg.Wait()
	if len(started) != 1 || codes[bt.CodeAlreadyRunning]+codes[bt.CodeCapacityExceeded] != 7 {
		t.Fatalf("started %v, refused %v; want one run and seven ALREADY_RUNNING or CAPACITY_EXCEEDED", started, codes)
	}
	close(hold)
	if run := b.waitStatus(started[0], bt.StatusSucceeded, bt.StatusFailed); run.Status != bt.StatusSucceeded {
		t.Fatalf("run = %s (%s)", run.Status, run.Message)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = $1 AND parent_run_id IS NULL`, job.name); n != 1 {
		t.Fatalf("%d runs of the job, want 1", n)
	}
}

// TestShardedRunCap: the job's cap holds across instances: never more shards held at once
// than it allows, however many slots are free.
func TestShardedRunCap(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-cap", 8, 3)
	job.maxConc = 2
	var mu sync.Mutex
	inCall, peak := 0, 0
	job.gate = func(runner.ShardInfo, int) <-chan struct{} {
		mu.Lock()
		inCall++
		peak = max(peak, inCall)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the call's own time, so that shards overlap
		mu.Lock()
		inCall--
		mu.Unlock()
		return nil
	}
	rs := b.instances(2, 4, job, nil)
	id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
	maxHeld := 0
	testenv.Eventually(t, 30*time.Second, "the run to end", func() bool {
		held := 0
		for _, s := range shardsOf(t, rs[0], id) {
			if s.Status.Active() {
				held++
			}
		}
		maxHeld = max(maxHeld, held)
		return !b.run(id).Status.Open()
	})
	if run := b.run(id); run.Status != bt.StatusSucceeded || run.Succeeded != 24 {
		t.Fatalf("run = %s, %d succeeded (%s)", run.Status, run.Succeeded, run.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	if peak > 2 || maxHeld > 2 {
		t.Fatalf("%d calls at once and %d shards held at once; the cap is 2", peak, maxHeld)
	}
	if peak < 2 {
		t.Fatalf("at most %d call at once: the cap of 2 was never used", peak)
	}
	// A raised cap applies to the next claim.
	if _, err := rs[1].Jobs().SetMaxConcurrentShards(context.Background(), job.name, -1, "op"); bt.CodeOf(err) != bt.CodeInvalidInput {
		t.Fatalf("a cap of -1: %v, want INVALID_INPUT", err)
	}
	j, err := rs[1].Jobs().SetMaxConcurrentShards(context.Background(), job.name, 5, "op")
	if err != nil || j.MaxConcurrentShards != 5 {
		t.Fatalf("set the cap to 5: %+v, %v", j, err)
	}
}

// TestShardStaleHolderWritesNothing: a shard holder frozen past its lease (its call still
// going) loses the shard to another instance, which continues it from the shard's checkpoint;
// when the stale holder wakes it can write nothing, and the other shard never noticed.
func TestShardStaleHolderWritesNothing(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-stale", 2, 3)
	job.policy = &runner.AutoResumePolicy{Enabled: true, MaxAttempts: 3, Backoff: 0, On: bt.ResumeCauses}
	frozen, stuck := make(chan struct{}), make(chan struct{})
	var once sync.Once
	job.gate = func(s runner.ShardInfo, item int) <-chan struct{} {
		if s.Key == "0" && item == 2 {
			var g <-chan struct{}
			once.Do(func() { close(stuck); g = frozen })
			return g
		}
		return nil
	}
	// Both instances run the scheduler: its recoverer hands the shard back, and its auto-resume
	// pass, which resumes runs, must leave a shard waiting for a slot to the claimers.
	rs := b.instances(2, 1, job, func(c *runner.Config) { c.Scheduler = true })
	id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
	<-stuck
	var shard0 *bt.RunRecord
	for _, s := range shardsOf(t, rs[0], id) {
		if s.Shard.Key == "0" {
			shard0 = s
		}
	}
	stale := shard0.Instance
	// The holder is frozen in its call: its lease runs out, and the recoverer hands the shard back.
	if _, err := b.Pool.Exec(context.Background(), `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, shard0.ID); err != nil {
		t.Fatal(err)
	}
	shards := waitShards(t, rs[0], id, "shard 0 to be worked elsewhere to its end", func(s []*bt.RunRecord) bool {
		return s[0].Status == bt.StatusSucceeded && s[0].Instance != stale && s[1].Status == bt.StatusSucceeded
	})
	if shards[0].Attempt != 1 {
		t.Fatalf("shard 0 attempt %d, want 1 (one resume)", shards[0].Attempt)
	}
	run := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	close(frozen) // the stale holder wakes, its call returns
	testenv.Eventually(t, 10*time.Second, "the stale holder's worker to end", func() bool { return !rs[0].Active(shard0.ID) && !rs[1].Active(shard0.ID) })
	if run.Status != bt.StatusSucceeded {
		t.Fatalf("run %s (%s)", run.Status, run.Message)
	}
	// s0-2 was in flight on the stale holder: in doubt, never called again; its result, written
	// late, was refused.
	var state string
	if err := b.Pool.QueryRow(context.Background(), `SELECT state FROM job_ledger WHERE target_key = 's0-2'`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != string(bt.LedgerAmbiguous) {
		t.Fatalf("s0-2 is %s, want AMBIGUOUS_EFFECT: the stale holder's late result must be refused", state)
	}
	for target, n := range b.effects() {
		if n != 1 {
			t.Errorf("target %s made its effect %d times", target, n)
		}
	}
	after := b.run(id)
	if after.Processed != run.Processed || after.Status != bt.StatusSucceeded {
		t.Fatalf("after the stale holder woke the run is %s with %d processed, before %d", after.Status, after.Processed, run.Processed)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE state = 'CONFIRMED'`); n != 5 {
		t.Fatalf("%d targets CONFIRMED, want 5 (every one but s0-2)", n)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = $1 AND parent_run_id IS NULL`, job.name); n != 1 {
		t.Fatalf("%d runs of the job, want 1: a shard handed back is resumed by a claim, not by a run of its own", n)
	}
}

// TestShardHandedBackAtShutdown: an instance that shuts down hands its shards back at once;
// another continues each from its checkpoint, calling nothing twice.
func TestShardHandedBackAtShutdown(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-shutdown", 2, 4)
	reached, hold := make(chan string, 8), make(chan struct{})
	job.gate = func(s runner.ShardInfo, item int) <-chan struct{} {
		if item == 3 {
			reached <- s.Key
			return hold
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
	<-reached
	<-reached
	stop() // shutdown: each shard stops at its next boundary
	testenv.Eventually(t, 10*time.Second, "the instance to drain", func() bool {
		_, err := leaving.Start(context.Background(), runner.StartParams{Job: job.name})
		return bt.CodeOf(err) == bt.CodeShuttingDown
	})
	close(hold)
	<-done
	other := b.instances(1, 2, job, nil)[0]
	run := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	if run.Status != bt.StatusSucceeded || run.Succeeded != 8 {
		t.Fatalf("run %s, %d succeeded (%s)", run.Status, run.Succeeded, run.Message)
	}
	for _, s := range shardsOf(t, other, id) {
		if s.Instance != "node1" || s.Attempt != 0 {
			t.Errorf("shard %s finished on %s at attempt %d; want node1, attempt 0 (a shutdown costs no attempt)", s.Shard.Key, s.Instance, s.Attempt)
		}
	}
	for target, n := range b.effects() {
		if n != 1 {
			t.Errorf("target %s made its effect %d times", target, n)
		}
	}
}

// TestShardedRunCancel: a cancel stops every shard at its next boundary, ends the shards no
// instance holds at once, and the run ends CANCELLED.
func TestShardedRunCancel(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-cancel", 5, 4)
	reached, hold := make(chan string, 8), make(chan struct{})
	job.gate = func(s runner.ShardInfo, item int) <-chan struct{} {
		if item == 2 {
			reached <- s.Key
			return hold
		}
		return nil
	}
	r := b.instances(1, 2, job, nil)[0]
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	<-reached
	<-reached
	shard := shardsOf(t, r, id)[0]
	if _, err := r.Runs().Cancel(context.Background(), shard.ID, "op"); bt.CodeOf(err) != bt.CodeInvalidInput || !containsAll(err.Error(), "shard", fmt.Sprint(id)) {
		t.Fatalf("cancel of a shard: %v, want INVALID_INPUT naming its run", err)
	}
	if _, err := r.Runs().Cancel(context.Background(), id, "op"); err != nil {
		t.Fatal(err)
	}
	close(hold)
	run := b.waitStatus(id, bt.StatusCancelled, bt.StatusSucceeded, bt.StatusFailed)
	if run.Status != bt.StatusCancelled || run.StopReason != bt.StopCancelled {
		t.Fatalf("run %s (%s): %s", run.Status, run.StopReason, run.Message)
	}
	held, unclaimed := 0, 0
	for _, s := range shardsOf(t, r, id) {
		switch {
		case s.Status != bt.StatusCancelled:
			t.Errorf("shard %s ended %s, want CANCELLED", s.Shard.Key, s.Status)
		case s.Processed == 2:
			held++ // items 1 and 2 committed, then the boundary
		case s.Processed == 0 && s.Instance == "":
			unclaimed++
		}
	}
	if held != 2 || unclaimed != 3 {
		t.Fatalf("%d shards stopped at their boundary and %d never claimed; want 2 and 3", held, unclaimed)
	}
	if n := len(b.effects()); n != 4 {
		t.Fatalf("%d effects, want 4 (two items of two shards)", n)
	}
}

// TestShardedRunPauseAndResume: a pause stops every shard, the run ends PAUSED; lifting it
// starts a RESUME run whose shards each continue from their own checkpoint.
func TestShardedRunPauseAndResume(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-pause", 4, 5)
	reached, hold := make(chan string, 16), make(chan struct{})
	var paused sync.Once
	job.gate = func(s runner.ShardInfo, item int) <-chan struct{} {
		if item == 3 {
			select {
			case <-hold:
				return nil
			default:
			}
			reached <- s.Key
			return hold
		}
		return nil
	}
	r := b.instances(1, 2, job, nil)[0]
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	<-reached
	<-reached
	if _, err := r.Jobs().Pause(context.Background(), job.name, "op"); err != nil {
		t.Fatal(err)
	}
	paused.Do(func() { close(hold) })
	run := b.waitStatus(id, bt.StatusPaused, bt.StatusSucceeded, bt.StatusFailed)
	if run.Status != bt.StatusPaused {
		t.Fatalf("run %s (%s)", run.Status, run.Message)
	}
	for _, s := range shardsOf(t, r, id) {
		if s.Status != bt.StatusPaused {
			t.Errorf("shard %s ended %s, want PAUSED", s.Shard.Key, s.Status)
		}
	}
	_, resumed, err := r.Jobs().Resume(context.Background(), job.name, "op")
	if err != nil || resumed == nil {
		t.Fatalf("resume: %v, %v", resumed, err)
	}
	if resumed.Generation != run.Generation || resumed.Mode != bt.ModeResume {
		t.Fatalf("resumed run %+v is not a RESUME of generation %d", resumed, run.Generation)
	}
	again := b.waitStatus(resumed.ID, bt.StatusSucceeded, bt.StatusFailed, bt.StatusPaused)
	if again.Status != bt.StatusSucceeded {
		t.Fatalf("resumed run %s (%s)", again.Status, again.Message)
	}
	// Every shard continued after its own checkpoint: the two paused after item 3 call items
	// 4-5 only, the two never claimed call everything; no target made its effect twice.
	effects := b.effects()
	if len(effects) != 20 {
		t.Fatalf("%d targets had effects, want 20", len(effects))
	}
	for target, n := range effects {
		if n != 1 {
			t.Errorf("target %s made its effect %d times", target, n)
		}
	}
	for _, s := range shardsOf(t, r, resumed.ID) {
		if want := map[bool]string{true: "3", false: ""}[s.StartCheckpoint != ""]; s.StartCheckpoint != want || s.Checkpoint != "5" {
			t.Errorf("shard %s of the resumed run started after %q and ended at %q", s.Shard.Key, s.StartCheckpoint, s.Checkpoint)
		}
	}
}

// TestShardStopConditionJudgesTheWholeRun: the stop condition sees the calls of every shard:
// no shard alone makes enough calls for a verdict, together they trip it, and the whole run stops.
func TestShardStopConditionJudgesTheWholeRun(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-stop", 4, 100)
	job.conds = []runner.StopCondition{{Name: "errors", Metric: runner.DownstreamErrorRate, Threshold: 0.05, MinCalls: 150}}
	started := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(4)
	go func() { arrived.Wait(); close(started) }()
	job.gate = func(_ runner.ShardInfo, item int) <-chan struct{} {
		if item == 1 {
			arrived.Done()
			return started // the four shards run together
		}
		time.Sleep(15 * time.Millisecond) // each call's own time: the shards overlap
		return nil
	}
	job.itemErr = func(_ runner.ShardInfo, item int) error {
		if item%5 == 0 {
			return runner.Transient(fmt.Errorf("503 from the provider"))
		}
		return nil
	}
	rs := b.instances(2, 2, job, nil)
	id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
	run := b.waitStatus(id, bt.StatusFailed, bt.StatusSucceeded, bt.StatusCancelled)
	if run.Status != bt.StatusFailed || run.StopReason != bt.StopCondition {
		t.Fatalf("run %s (%s): %s; want FAILED by its stop condition", run.Status, run.StopReason, run.Message)
	}
	if run.Processed >= 400 {
		t.Fatalf("the run processed all %d items: it did not stop", run.Processed)
	}
}

// TestShardPlan: a plan computed when the run starts names the shards and what each covers;
// a bad plan fails the run with a reason and makes no shard.
func TestShardPlan(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-plan", 0, 2)
	job.plan = func(_ context.Context, p runner.ShardPlan) ([]runner.Shard, error) {
		return []runner.Shard{{Key: "a-m", Spec: "from a to m"}, {Key: "n-z", Spec: "from n to z"}}, nil
	}
	bad := newShardedJob(b, "sharded-bad-plan", 0, 2)
	bad.plan = func(context.Context, runner.ShardPlan) ([]runner.Shard, error) {
		return []runner.Shard{{Key: "x"}, {Key: "x"}}, nil
	}
	r := b.runner(nil, job, bad)
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	if run := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed); run.Status != bt.StatusSucceeded || run.Succeeded != 4 {
		t.Fatalf("run %s, %d succeeded (%s)", run.Status, run.Succeeded, run.Message)
	}
	shards := shardsOf(t, r, id)
	if len(shards) != 2 || shards[0].Shard.Key != "a-m" || shards[1].Shard.Spec != "from n to z" {
		t.Fatalf("shards %+v, %+v", shards[0].Shard, shards[1].Shard)
	}
	if n := len(b.effects()); n != 4 {
		t.Fatalf("%d effects, want 4", n)
	}
	badID := mustStart(t, r, runner.StartParams{Job: bad.name})
	run := b.waitStatus(badID, bt.StatusSucceeded, bt.StatusFailed)
	if run.Status != bt.StatusFailed || !containsAll(run.Message, `"x"`, "twice") {
		t.Fatalf("a plan with a key twice: run %s (%s)", run.Status, run.Message)
	}
	if n := len(shardsOf(t, r, badID)); n != 0 {
		t.Fatalf("a refused plan made %d shards", n)
	}
	if err := r.Register(context.Background(), runner.NewJob(runner.JobInfo{Name: "no-plan", Shards: &runner.Sharding{}},
		func(context.Context, *runner.Run) error { return nil })); bt.CodeOf(err) != bt.CodeInvalidInput {
		t.Fatalf("sharding with neither a count nor a plan: %v, want INVALID_INPUT", err)
	}
}

// TestShardedReplay: preflight reads a sharded run's ledger as any run's, and its replay is
// sharded the same way: each shard walks its part again from its beginning, the ledger calls
// only the targets in scope, and no checkpoint moves.
func TestShardedReplay(t *testing.T) {
	b := setup(t)
	job := newShardedJob(b, "sharded-replay", 3, 4)
	var phase sync.Map // after the first run, nothing fails
	job.itemErr = func(s runner.ShardInfo, item int) error {
		if _, replayed := phase.Load("replay"); !replayed && item == 2 {
			return runner.Transient(fmt.Errorf("503 on shard %s", s.Key))
		}
		return nil
	}
	rs := b.instances(2, 2, job, nil)
	id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
	first := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	if first.Status != bt.StatusSucceeded || first.Succeeded != 9 || first.Failed != 3 {
		t.Fatalf("first run %s, %d succeeded, %d failed (%s); want SUCCEEDED, 9, 3", first.Status, first.Succeeded, first.Failed, first.Message)
	}
	pf, err := rs[1].Replays().Preflight(context.Background(), id, bt.ScopeTransient)
	if err != nil {
		t.Fatal(err)
	}
	if pf.Confirmed != 9 || pf.TargetsInScope != 3 || pf.FailedByClass[bt.LedgerTransient] != 3 {
		t.Fatalf("preflight %d confirmed, %d in scope, %v failed; want 9, 3, 3 TRANSIENT", pf.Confirmed, pf.TargetsInScope, pf.FailedByClass)
	}
	phase.Store("replay", true)
	rep := b.replayNow(rs[1], id, bt.ScopeTransient)
	if rep.ShardTotal != 3 || rep.Succeeded != 3 || rep.Skipped != 9 {
		t.Fatalf("replay run %d: %d shards, %d succeeded, %d skipped; want 3, 3, 9", rep.ID, rep.ShardTotal, rep.Succeeded, rep.Skipped)
	}
	for _, s := range shardsOf(t, rs[0], rep.ID) {
		if s.Trigger != bt.TriggerReplay || s.StartCheckpoint != "" || s.Status != bt.StatusSucceeded {
			t.Errorf("replay shard %s: %s from %q, %s; want a REPLAY shard from the beginning, SUCCEEDED", s.Shard.Key, s.Trigger, s.StartCheckpoint, s.Status)
		}
	}
	effects := b.effects()
	for target, n := range effects {
		want := 1
		if target[len(target)-2:] == "-2" {
			want = 2 // the TRANSIENT attempt and the replay's
		}
		if n != want {
			t.Errorf("target %s made its effect %d times, want %d", target, n, want)
		}
	}
	if len(effects) != 12 {
		t.Fatalf("%d targets had effects, want 12", len(effects))
	}
}
