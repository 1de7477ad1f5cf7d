package runner_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/redislock"
)

// The seed's test: 8 concurrent starts through 2 runners → 1 run, 7 ALREADY_RUNNING, one body.
func TestConcurrentStartsRunOnce(t *testing.T) {
	for _, tc := range []struct {
		name            string
		runners, starts int
	}{{"2x8", 2, 8}, {"3x64", 3, 64}} {
		t.Run(tc.name, func(t *testing.T) { concurrentStartsRunOnce(t, setup(t), tc.runners, tc.starts, nil) })
	}
}

// concurrentStartsRunOnce makes starts concurrent starts of one job through runners runners
// on b (each runner's Config changed by mod, if not nil) and checks that exactly one run
// starts and its body runs once.
func concurrentStartsRunOnce(t *testing.T, b *bundle, runners, starts int, mod func(*runner.Config)) {
	t.Helper()
	job := newItemsJob("collect", 3)
	gate := make(chan struct{})
	job.gate = func(int) <-chan struct{} { return gate }
	var rs []*runner.Runner
	for range runners {
		// Separate job values per runner, sharing counters through the one job.
		rs = append(rs, b.runner(func(c *runner.Config) {
			c.PoolSize = starts
			if mod != nil {
				mod(c)
			}
		}, job))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids, already := map[int64]bool{}, 0
	release := make(chan struct{})
	for i := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			run, err := rs[i%len(rs)].Start(context.Background(), runner.StartParams{Job: "collect", Actor: "test"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ids[run.ID] = true
			case errors.Is(err, bt.ErrAlreadyRunning):
				already++
			default:
				t.Errorf("unexpected start error: %v", err)
			}
		}()
	}
	close(release)
	wg.Wait()
	if len(ids) != 1 || already != starts-1 {
		t.Fatalf("got %d runs and %d ALREADY_RUNNING; want 1 and %d", len(ids), already, starts-1)
	}
	close(gate)
	for id := range ids {
		b.waitStatus(id, bt.StatusSucceeded)
	}
	if n := job.bodies.Load(); n != 1 {
		t.Fatalf("job body ran %d times, want 1", n)
	}
	if n := b.count(`SELECT count(*) FROM job_runs`); n != 1 {
		t.Fatalf("%d run rows, want 1 (no noise rows)", n)
	}
}

func TestRedisKeyLostDatabaseStillGuards(t *testing.T) {
	b := setup(t)
	job := newItemsJob("guarded", 2)
	gate := make(chan struct{})
	job.gate = func(int) <-chan struct{} { return gate }
	r1 := b.runner(nil, job)
	r2 := b.runner(nil, job)
	id := mustStart(t, r1, runner.StartParams{Job: "guarded"})
	b.waitStatus(id, bt.StatusRunning)
	key := redislock.New(b.Redis, b.Env).Key("guarded")
	if n := b.Redis.Del(context.Background(), key).Val(); n != 1 {
		t.Fatalf("deleted %d keys, want the lock key %s", n, key)
	}
	_, err := r2.Start(context.Background(), runner.StartParams{Job: "guarded"})
	if !errors.Is(err, bt.ErrAlreadyRunning) {
		t.Fatalf("start with the Redis key gone: %v, want ALREADY_RUNNING from the database", err)
	}
	// r2 must not have left its own lock behind after the database refused it.
	if n := b.Redis.Exists(context.Background(), key).Val(); n != 0 {
		t.Fatalf("lock key exists after a refused start")
	}
	close(gate)
	b.waitStatus(id, bt.StatusSucceeded)
}

func TestLeaseRenewedWhileProgressing(t *testing.T) {
	b := setup(t)
	// A 2 s lease renews with a second to spare: a loaded test machine (the race detector, many
	// tests at once) can stall one renewal for half a second, which a 1 s lease did not survive.
	job := runner.NewJob(runner.JobInfo{Name: "long", Lease: 2 * time.Second}, func(ctx context.Context, run *runner.Run) error {
		// Run for three leases, reaching a safe point often.
		deadline := time.Now().Add(6500 * time.Millisecond)
		for time.Now().Before(deadline) {
			if err := run.Check(ctx); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond): // the job's own work, not a wait for async work
			}
		}
		return nil
	})
	r := b.runner(func(c *runner.Config) { c.Scheduler = true; c.PollInterval = 100 * time.Millisecond }, job)
	_ = r
	id := mustStart(t, r, runner.StartParams{Job: "long"})
	got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	if got.Status != bt.StatusSucceeded {
		t.Fatalf("run ended %s (%s: %s), want SUCCEEDED with its lease renewed", got.Status, got.StopReason, got.Message)
	}
}

func TestFencingStaleWorkerWritesNothing(t *testing.T) {
	b := setup(t)
	job, gate := gatedItemsJob("fenced", 3)
	r := b.runner(func(c *runner.Config) { c.Scheduler = true; c.PollInterval = 100 * time.Millisecond }, job)
	id := mustStart(t, r, runner.StartParams{Job: "fenced"})
	for i := range 2 {
		if got := <-job.reached; got != i+1 {
			t.Fatalf("reached item %d, want %d", got, i+1)
		}
	}
	// Item 2 is blocked past the lease: the recoverer fails the run.
	got := b.waitStatus(id, bt.StatusFailed)
	if got.StopReason != bt.StopLeaseExpired {
		t.Fatalf("stop reason %q, want LEASE_EXPIRED", got.StopReason)
	}
	close(gate) // the stale worker wakes and tries to commit item 2
	testenv.Eventually(t, 10*time.Second, "stale worker to give up", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE id = $1 AND status = 'FAILED'`, id) == 1 && job.bodies.Load() == 1 && job.callsOf(3) == 0 && !r.Active(id)
	})
	if n := b.count(`SELECT count(*) FROM job_output WHERE target = 't2'`); n != 0 {
		t.Fatalf("the stale worker's own write for item 2 landed")
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE target_key = 't2'`); n != 0 {
		t.Fatalf("the stale worker's ledger row for item 2 landed")
	}
	if n := b.count(`SELECT count(*) FROM job_output WHERE target = 't1'`); n != 1 {
		t.Fatalf("item 1, committed under a valid lease, is missing")
	}
	if r := b.run(id); r.Processed != 1 || r.Checkpoint != "1" {
		t.Fatalf("processed=%d checkpoint=%q after fencing, want 1 and \"1\"", r.Processed, r.Checkpoint)
	}
}

func TestCancelStopsAtItemBoundary(t *testing.T) {
	b := setup(t)
	job := newItemsJob("cancellable", 10)
	gates := map[int]chan struct{}{}
	for i := 1; i <= 10; i++ {
		gates[i] = make(chan struct{})
	}
	job.gate = func(i int) <-chan struct{} { return gates[i] }
	job.reached = make(chan int, 10)
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: "cancellable"})
	for i := 1; i <= 3; i++ {
		<-job.reached
		close(gates[i])
	}
	<-job.reached // item 4 is in its call
	if _, err := r.Runs().Cancel(context.Background(), id, "operator"); err != nil {
		t.Fatal(err)
	}
	close(gates[4]) // item 4's call finishes: its result still commits
	got := b.waitStatus(id, bt.StatusCancelled, bt.StatusSucceeded, bt.StatusFailed)
	if got.Status != bt.StatusCancelled {
		t.Fatalf("status %s, want CANCELLED", got.Status)
	}
	if got.Processed != 4 || got.Checkpoint != "4" {
		t.Fatalf("processed %d checkpoint %q, want 4 and \"4\" (items before the cancel stay)", got.Processed, got.Checkpoint)
	}
	if job.callsOf(5) != 0 {
		t.Fatalf("item 5 ran after the cancel")
	}
	if n := b.count(`SELECT count(*) FROM job_output`); n != 4 {
		t.Fatalf("%d job writes committed, want 4", n)
	}
	if _, err := r.Runs().Cancel(context.Background(), id, "operator"); code(err) != bt.CodeNotActive {
		t.Fatalf("cancel of a finished run: %v, want NOT_ACTIVE", err)
	}
	if _, err := r.Runs().Cancel(context.Background(), 999999, "operator"); code(err) != bt.CodeNotFound {
		t.Fatalf("cancel of an unknown run: %v, want NOT_FOUND", err)
	}
}

func TestResumeAndRestart(t *testing.T) {
	b := setup(t)
	job := newItemsJob("resumable", 6)
	job.itemErr = func(i int) error { return nil }
	stopAt := 3
	job.gate = nil
	var cancelOnce sync.Once
	var r *runner.Runner
	var first int64
	job.reached = make(chan int, 100)
	r = b.runner(nil, job)
	// First run: cancel after item 3 commits.
	hold := make(chan struct{})
	job.gate = func(i int) <-chan struct{} {
		if i == stopAt+1 {
			return hold
		}
		return nil
	}
	first = mustStart(t, r, runner.StartParams{Job: "resumable"})
	for got := range job.reached {
		if got == stopAt+1 {
			break
		}
	}
	cancelOnce.Do(func() {
		if _, err := r.Runs().Cancel(context.Background(), first, "t"); err != nil {
			t.Error(err)
		}
	})
	close(hold)
	got := b.waitStatus(first, bt.StatusCancelled)
	if got.Checkpoint != "4" {
		t.Fatalf("checkpoint after cancel %q, want \"4\"", got.Checkpoint)
	}
	job.gate = nil
	before := map[int]int{}
	for i := 1; i <= 6; i++ {
		before[i] = job.callsOf(i)
	}
	second := mustStart(t, r, runner.StartParams{Job: "resumable", Mode: bt.ModeResume})
	res := b.waitStatus(second, bt.StatusSucceeded)
	for i := 1; i <= 4; i++ {
		if job.callsOf(i) != before[i] {
			t.Fatalf("RESUME re-ran item %d", i)
		}
	}
	for i := 5; i <= 6; i++ {
		if job.callsOf(i) != before[i]+1 {
			t.Fatalf("RESUME did not run item %d once", i)
		}
	}
	if res.Generation != got.Generation || res.Processed != 2 {
		t.Fatalf("resume: generation %d (want %d), processed %d (want 2)", res.Generation, got.Generation, res.Processed)
	}
	third := mustStart(t, r, runner.StartParams{Job: "resumable", Mode: bt.ModeRestart})
	rs := b.waitStatus(third, bt.StatusSucceeded)
	if rs.Generation != got.Generation+1 || rs.Processed != 6 {
		t.Fatalf("restart: generation %d (want %d), processed %d (want 6)", rs.Generation, got.Generation+1, rs.Processed)
	}
	if job.callsOf(1) != before[1]+1 {
		t.Fatalf("RESTART did not start at the first item")
	}
}

func TestCapacityExceededWritesNothing(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	defer close(gate)
	var jobs []runner.Job
	for _, n := range []string{"a", "b", "c"} {
		j := newItemsJob(n, 1)
		j.gate = func(int) <-chan struct{} { return gate }
		jobs = append(jobs, j)
	}
	r := b.runner(func(c *runner.Config) { c.PoolSize = 2 }, jobs...)
	mustStart(t, r, runner.StartParams{Job: "a"})
	mustStart(t, r, runner.StartParams{Job: "b"})
	_, err := r.Start(context.Background(), runner.StartParams{Job: "c"})
	if !errors.Is(err, bt.ErrCapacityExceeded) {
		t.Fatalf("third start: %v, want CAPACITY_EXCEEDED", err)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'c'`); n != 0 {
		t.Fatalf("a refused start left %d run rows", n)
	}
	if ok, _, _ := redislock.New(b.Redis, b.Env).Holder(context.Background(), "c"); ok != "" {
		t.Fatalf("a refused start left a lock")
	}
	if _, err := r.Start(context.Background(), runner.StartParams{Job: "nope"}); code(err) != bt.CodeNotFound {
		t.Fatalf("unknown job: %v, want NOT_FOUND", err)
	}
	if _, err := r.Start(context.Background(), runner.StartParams{Job: "a", Mode: "SIDEWAYS"}); code(err) != bt.CodeInvalidInput {
		t.Fatalf("bad mode: %v, want INVALID_INPUT", err)
	}
}

func TestRegisterRefusesDuplicatesAndBadSchedules(t *testing.T) {
	b := setup(t)
	r := b.runner(nil, newItemsJob("one", 1))
	if err := r.Register(context.Background(), newItemsJob("one", 1)); code(err) != bt.CodeDuplicateJob {
		t.Fatalf("duplicate registration: %v, want DUPLICATE_JOB", err)
	}
	bad := newItemsJob("bad", 1)
	bad.cron = "61 * * * *"
	if err := r.Register(context.Background(), bad); code(err) != bt.CodeInvalidCron {
		t.Fatalf("bad cron: %v, want INVALID_CRON", err)
	}
	if n := b.count(`SELECT count(*) FROM job_settings WHERE name = 'bad'`); n != 0 {
		t.Fatalf("a refused registration wrote settings")
	}
	if err := r.Register(context.Background(), newItemsJob("has space", 1)); code(err) != bt.CodeInvalidInput {
		t.Fatalf("bad name: %v, want INVALID_INPUT", err)
	}
}

func TestClockSkewChangesNothing(t *testing.T) {
	for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			b := setup(t)
			now := func() time.Time { return time.Now().Add(skew) }
			job, gate := gatedItemsJob("skewed", 4)
			r1 := b.runner(func(c *runner.Config) { c.NowFunc = now; c.Scheduler = true; c.PollInterval = 100 * time.Millisecond }, job)
			r2 := b.runner(func(c *runner.Config) { c.NowFunc = func() time.Time { return time.Now().Add(-skew) } }, job)
			id := mustStart(t, r1, runner.StartParams{Job: "skewed"})
			<-job.reached
			<-job.reached
			if _, err := r2.Start(context.Background(), runner.StartParams{Job: "skewed"}); !errors.Is(err, bt.ErrAlreadyRunning) {
				t.Fatalf("second start under skew: %v, want ALREADY_RUNNING", err)
			}
			// Holding item 2 within the lease keeps the run; renewal happens at the next safe point.
			close(gate)
			got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
			if got.Status != bt.StatusSucceeded || got.Processed != 4 {
				t.Fatalf("skewed run ended %s (%s) with %d items, want SUCCEEDED with 4", got.Status, got.Message, got.Processed)
			}
		})
	}
}

func TestItemContextEndsWithLease(t *testing.T) {
	b := setup(t)
	type seen struct {
		set  bool
		left time.Duration
	}
	// The item reports through a channel: the test reads what the worker saw only after the
	// worker handed it over, not after the run's status changed in the database.
	saw := make(chan seen, 1)
	job := runner.NewJob(runner.JobInfo{Name: "deadline", Lease: 2 * time.Second}, func(ctx context.Context, run *runner.Run) error {
		return run.Process(ctx, runner.Item{Target: "x"}, func(ctx context.Context, a *runner.Attempt) error {
			d, ok := ctx.Deadline()
			saw <- seen{ok, time.Until(d)}
			return nil
		})
	})
	r := b.runner(nil, job)
	b.waitStatus(mustStart(t, r, runner.StartParams{Job: "deadline"}), bt.StatusSucceeded)
	got := <-saw
	if !got.set || got.left <= 0 || got.left > 2*time.Second {
		t.Fatalf("item context deadline: set %v, %s left; want one within the 2s lease", got.set, got.left)
	}
}

// gatedItemsJob is an itemsJob of n items under a 1s lease whose item 2 waits at gate; items
// announce themselves on reached as they start.
func gatedItemsJob(name string, n int) (*itemsJob, chan struct{}) {
	job := newItemsJob(name, n)
	job.lease = time.Second
	gate := make(chan struct{})
	job.gate = func(i int) <-chan struct{} {
		if i == 2 {
			return gate
		}
		return nil
	}
	job.reached = make(chan int, 10)
	return job, gate
}
