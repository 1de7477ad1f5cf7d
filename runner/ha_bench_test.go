//go:build unix

package runner_test

// High-availability figures (make bench-ha): what an outage of Redis, the pooler in front of
// PostgreSQL or an instance costs a run. Every iteration starts private servers of its own,
// so these run with -benchtime 1x; make bench leaves them out.

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// haBundle is a benchmark's bundle on a fresh schema of the shared PostgreSQL, with the
// job_output table itemsJob writes to.
func haBundle(tb testing.TB) *bundle {
	tb.Helper()
	b := &bundle{Bundle: testbundle.New(tb, testenv.Schema)}
	if _, err := b.Pool.Exec(context.Background(), `CREATE TABLE job_output (target text PRIMARY KEY, run_id bigint)`); err != nil {
		tb.Fatal(err)
	}
	return b
}

// liveEvent is a message of a run's topic as a subscriber received it.
type liveEvent struct {
	at     time.Time
	resync bool
}

// eventLog records the messages of a subscription as they arrive.
type eventLog struct {
	mu     sync.Mutex
	events []liveEvent
}

func (l *eventLog) follow(sub *pubsub.Subscription) {
	for m := range sub.C() {
		l.mu.Lock()
		l.events = append(l.events, liveEvent{at: time.Now(), resync: m.Resync})
		l.mu.Unlock()
	}
}

// count returns the number of events that are not a Resync and arrived after since.
func (l *eventLog) count(since time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if !e.resync && e.at.After(since) {
			n++
		}
	}
	return n
}

// gap returns the time between the last event before the first Resync that follows since
// and the first event after that Resync; ok is false until there are both.
func (l *eventLog) gap(since time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return eventGap(l.events, since)
}

func eventGap(events []liveEvent, since time.Time) (time.Duration, bool) {
	var before time.Time
	resynced := false
	for _, e := range events {
		switch {
		case e.resync && e.at.After(since):
			resynced = true
		case e.resync:
		case !resynced:
			before = e.at
		case !before.IsZero():
			return e.at.Sub(before), true
		}
	}
	return 0, false
}

// feed lets one item of a gated job through every interval until ctx ends, so a run publishes
// events at a steady pace whatever happens to Redis.
func feed(ctx context.Context, step chan<- struct{}, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case step <- struct{}{}:
		case <-ctx.Done():
			return
		}
	}
}

// BenchmarkHASentinelEventGap: a run publishes a live event per item (one item every 20ms)
// through a runner, publisher and hub on a redis+sentinel URL, set up as baton serve sets
// them up but with no per-key interval, so every item's event is sent. The master is killed
// (SIGKILL); s/promotion is the time from the kill until the first sentinel names the replica
// master, s/event-gap the time between the last event the subscriber received before the
// hub's Resync and the first one after it.
func BenchmarkHASentinelEventGap(b *testing.B) {
	var gap, promotion time.Duration
	for b.Loop() {
		g, p := sentinelFailover(b)
		gap += g
		promotion += p
	}
	b.ReportMetric(gap.Seconds()/float64(b.N), "s/event-gap")
	b.ReportMetric(promotion.Seconds()/float64(b.N), "s/promotion")
}

// promotedAfter polls every sentinel of set every 10ms and returns when the first of them
// names the server on port replica master.
func promotedAfter(ctx context.Context, tb testing.TB, set *testenv.SentinelSet, replica string) time.Time {
	tb.Helper()
	var sentinels []*redis.SentinelClient
	for _, s := range set.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))})
		defer c.Close()
		sentinels = append(sentinels, c)
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		for _, c := range sentinels {
			addr, err := c.GetMasterAddrByName(ctx, testenv.SentinelMaster).Result()
			if err == nil && len(addr) == 2 && addr[1] == replica {
				return time.Now()
			}
		}
		<-tick.C
	}
	tb.Fatal("no sentinel named the replica master within 30s of the kill")
	return time.Time{}
}

func sentinelFailover(tb testing.TB) (gap, promotion time.Duration) {
	set := testenv.PrivateSentinel(tb)
	bn := haBundle(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc := topologyClient(tb, set.URL())
	pub := pubsub.NewPublisher(rc, bn.Env, pubsub.PublisherOptions{MinInterval: -1})
	tb.Cleanup(func() { _ = pub.Close(context.Background()) })
	hub := pubsub.NewHub(rc, bn.Env, pubsub.HubOptions{})
	hctx, hcancel := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(hctx) }()
	tb.Cleanup(func() { hcancel(); <-hubDone })

	job := newItemsJob("sentinel", 1_000_000)
	step := make(chan struct{})
	job.gate = func(int) <-chan struct{} { return step }
	r := bn.runner(func(c *runner.Config) { c.Redis = rc; c.Events = live.NewEventPublisher(pub) }, job)
	run, err := r.Start(ctx, runner.StartParams{Job: "sentinel", Actor: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	sub := hub.Subscribe(live.RunTopic(run.ID))
	defer sub.Close()
	var log eventLog
	go log.follow(sub)
	fctx, fcancel := context.WithCancel(ctx)
	fed := make(chan struct{})
	go func() { defer close(fed); feed(fctx, step, 20*time.Millisecond) }()

	testenv.Eventually(tb, 20*time.Second, "events of the running run", func() bool { return log.count(time.Time{}) >= 10 })
	replica := strconv.Itoa(set.Replica.Port)
	killed := time.Now()
	set.Master.Kill(tb)
	promotion = promotedAfter(ctx, tb, set, replica).Sub(killed)
	testenv.Eventually(tb, 30*time.Second, "an event after the hub's Resync", func() bool {
		var ok bool
		gap, ok = log.gap(killed)
		return ok
	})

	if _, err := r.Runs().Cancel(ctx, run.ID, "bench"); err != nil {
		tb.Fatal(err)
	}
	fcancel()
	<-fed
	close(step)
	bn.waitStatus(run.ID, bt.StatusCancelled)
	return gap, promotion
}

// The batch run of BenchmarkHAPgBouncerBatch: haBatchItems no-op items in batches of
// haBatchSize, haBatchParallelism at a time, haBatchReps timed runs each way per iteration.
const (
	haBatchItems       = 5000
	haBatchSize        = 500
	haBatchParallelism = 8
	haBatchReps        = 5
)

// haBatchJob walks n no-op items through ProcessBatch.
func haBatchJob(name string, n int) runner.Job {
	return runner.NewJob(runner.JobInfo{Name: name, Lease: time.Minute}, func(ctx context.Context, run *runner.Run) error {
		items := make([]runner.Item, 0, haBatchSize)
		for i := range n {
			items = append(items, runner.Item{Target: strconv.Itoa(i), Checkpoint: strconv.Itoa(i)})
			if len(items) == haBatchSize || i == n-1 {
				if err := run.ProcessBatch(ctx, items, haBatchParallelism, func(context.Context, runner.Item, *runner.Attempt) error { return nil }); err != nil {
					return err
				}
				items = items[:0]
			}
		}
		return nil
	})
}

// batchSide is one way to the database: a runner of haBatchJob and the sink of its final events.
type batchSide struct {
	r      *runner.Runner
	finals *testbundle.Finals
}

// run starts the job afresh and returns how long it took to finish every item.
func (s batchSide) run(tb testing.TB) time.Duration {
	tb.Helper()
	t0 := time.Now()
	started, err := s.r.Start(context.Background(), runner.StartParams{Job: "ha-batch", Mode: bt.ModeRestart, Actor: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	rec := s.finals.Wait(tb, started.ID)
	took := time.Since(t0)
	testenv.Eventually(tb, 10*time.Second, "the run's slot to be freed", func() bool { return !s.r.Active(started.ID) })
	if rec.Status != bt.StatusSucceeded || rec.Processed != haBatchItems {
		tb.Fatalf("batch run %s with %d items; want SUCCEEDED with %d", rec.Status, rec.Processed, haBatchItems)
	}
	return took
}

// newBatchSide makes a runner of haBatchJob on a database of its own on backend, reached at
// url(name), with the scheduler's LISTEN on the direct URL as baton serve has it with
// --database-direct-url.
func newBatchSide(tb testing.TB, backend *testenv.PostgresServer, url func(db string) string) batchSide {
	tb.Helper()
	name := backend.Database(tb, "ha_")
	bn := testbundle.New(tb, func(testing.TB) string { return url(name) })
	s := batchSide{finals: &testbundle.Finals{}}
	cfg := bn.BenchConfig()
	cfg.PoolSize, cfg.Events, cfg.DefaultLease = 4, s.finals, 30*time.Second
	cfg.ListenDB = testenv.Pool(tb, backend.URL(name))
	s.r = bn.NewRunner(cfg, haBatchJob("ha-batch", haBatchItems))
	return s
}

// BenchmarkHAPgBouncerBatch: the same batch run (haBatchItems items through ProcessBatch)
// on a private PostgreSQL directly and through a private PgBouncer in transaction mode in
// front of the same server, each on a database of its own, the two interleaved (haBatchReps
// runs each way per iteration, after one untimed warm-up run each). The pooled runner uses
// cache_describe, as PgBouncer in transaction mode requires; the direct one pgx's default.
func BenchmarkHAPgBouncerBatch(b *testing.B) {
	var direct, pooled time.Duration
	for b.Loop() {
		backend := testenv.PrivatePostgres(b)
		pooler := testenv.PrivatePgBouncer(b, backend)
		sides := [2]batchSide{
			newBatchSide(b, backend, backend.URL),
			newBatchSide(b, backend, func(db string) string { return pooler.URL(db) + "&default_query_exec_mode=cache_describe" }),
		}
		for _, s := range sides {
			s.run(b)
		}
		for rep := range haBatchReps {
			// Alternate which goes first, so neither always runs on a warmer server.
			for k := range 2 {
				i := (rep + k) % 2
				took := sides[i].run(b)
				if i == 0 {
					direct += took
				} else {
					pooled += took
				}
			}
		}
	}
	items := float64(haBatchItems * haBatchReps * b.N)
	b.ReportMetric(items/direct.Seconds(), "items/s-direct")
	b.ReportMetric(items/pooled.Seconds(), "items/s-pgbouncer")
	b.ReportMetric(direct.Seconds()/pooled.Seconds(), "ratio-pgbouncer/direct")
}

// runWatch is an EventSink that notes when the run it watches fails and when the first
// AUTO_RESUME run is RUNNING.
type runWatch struct {
	mu      sync.Mutex
	killed  int64 // the run that dies with its process
	failed  time.Time
	resumed bt.RunRecord
	running time.Time
}

func (w *runWatch) RunChanged(ev runner.RunEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case ev.Run.ID == w.killed && ev.Run.Status == bt.StatusFailed && w.failed.IsZero():
		w.failed = time.Now()
	case ev.Run.Trigger == bt.TriggerAutoResume && ev.Run.Status == bt.StatusRunning && w.running.IsZero():
		w.resumed, w.running = ev.Run, time.Now()
	}
}

func (w *runWatch) times() (failed, running time.Time, resumed bt.RunRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed, w.running, w.resumed
}

// haPoll is the survivor's poll interval in BenchmarkHAKillToResumed: the default.
const haPoll = runner.DefaultPollInterval

// BenchmarkHAKillToResumed: a run of slowJob in a child process (the test binary as a
// worker, childWorker) and a survivor runner in this process with runner.Config's defaults
// and the scheduler (which recovers expired leases) on, both on the shared PostgreSQL and
// Redis. The child is SIGKILLed mid-run; s/kill-to-failed
// is the time until the survivor's recoverer fails the run for its expired lease,
// s/kill-to-running until the AUTO_RESUME run it starts (the job's auto-resume backoff set
// to 0) is RUNNING. s/lease (the job's lease) and s/poll (the survivor's recoverer poll)
// bound it: the lease must run out and a poll see it. The kill falls at a random moment of
// the survivor's poll cycle.
func BenchmarkHAKillToResumed(b *testing.B) {
	var failed, running time.Duration
	for b.Loop() {
		f, r := killToResumed(b)
		failed += f
		running += r
	}
	b.ReportMetric(failed.Seconds()/float64(b.N), "s/kill-to-failed")
	b.ReportMetric(running.Seconds()/float64(b.N), "s/kill-to-running")
	b.ReportMetric(slowJob(1).Info().Lease.Seconds(), "s/lease")
	b.ReportMetric(haPoll.Seconds(), "s/poll")
}

func killToResumed(tb testing.TB) (failed, running time.Duration) {
	bn := haBundle(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := testenv.StartWorker(tb, "child", bn.URL, bn.Env)
	watch := &runWatch{killed: w.Run}
	cfg := bn.BenchConfig()
	cfg.Events, cfg.Scheduler = watch, true // the scheduler's instance runs the recoverer
	cfg.PollInterval = haPoll
	survivor := bn.Runner(cfg, slowJob(100000))
	zero := time.Duration(0)
	if _, err := survivor.Jobs().SetAutoResume(ctx, "slow", runner.AutoResumeUpdate{Backoff: &zero, Actor: "bench"}); err != nil {
		tb.Fatal(err)
	}
	testenv.Eventually(tb, 20*time.Second, "the child to commit some items", func() bool {
		return bn.run(w.Run).Processed >= 20
	})

	// A real crash falls anywhere in the survivor's poll cycle; so does this kill. Nothing
	// is awaited here: the delay only picks the moment.
	time.Sleep(rand.N(haPoll))
	killed := time.Now()
	if err := w.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	_ = w.Cmd.Wait()
	testenv.Eventually(tb, time.Minute, "the AUTO_RESUME run RUNNING on the survivor", func() bool {
		_, r, _ := watch.times()
		return !r.IsZero()
	})
	f, r, resumed := watch.times()
	if got := bn.run(w.Run); got.Status != bt.StatusFailed || got.StopReason != bt.StopLeaseExpired || f.IsZero() {
		tb.Fatalf("the killed run is %s (%s), failed event seen: %v; want FAILED, LEASE_EXPIRED", got.Status, got.StopReason, !f.IsZero())
	}
	if resumed.Mode != bt.ModeResume {
		tb.Fatalf("the AUTO_RESUME run %d is %s; want RESUME", resumed.ID, resumed.Mode)
	}
	if _, err := survivor.Runs().Cancel(ctx, resumed.ID, "bench"); err != nil {
		tb.Fatal(err)
	}
	bn.waitStatus(resumed.ID, bt.StatusCancelled)
	return f.Sub(killed), r.Sub(killed)
}
