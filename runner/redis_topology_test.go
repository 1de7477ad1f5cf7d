package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/redisconn"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/redislock"
)

// topologyClient returns a client of url made as baton serve makes it, closed when the test
// ends.
func topologyClient(t testing.TB, url string) redis.UniversalClient {
	t.Helper()
	c, err := redisconn.New(url, redisconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestConcurrentStartsOnRedisCluster: the concurrent-start test passes with the runners'
// locks on a three-master Redis Cluster, each runner with a client of its own.
func TestConcurrentStartsOnRedisCluster(t *testing.T) {
	set := testenv.PrivateCluster(t)
	b := setup(t)
	concurrentStartsRunOnce(t, b, 3, 16, func(c *runner.Config) { c.Redis = topologyClient(t, set.URL()) })
}

// TestRedisSentinelFailoverMidRun: a run is under way when the Redis master is killed. The
// sentinels promote the replica; meanwhile no second run of the job starts and the run keeps
// its database lease; after the promotion its lock and its live events work again. The gap in
// events is logged.
func TestRedisSentinelFailoverMidRun(t *testing.T) {
	set := testenv.PrivateSentinel(t)
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc := topologyClient(t, set.URL())
	pub := pubsub.NewPublisher(rc, b.Env, pubsub.PublisherOptions{MinInterval: -1})
	t.Cleanup(func() { _ = pub.Close(context.Background()) })
	hub := pubsub.NewHub(topologyClient(t, set.URL()), b.Env, pubsub.HubOptions{HealthCheckInterval: 500 * time.Millisecond})
	hctx, hcancel := context.WithCancel(ctx)
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(hctx) }()
	t.Cleanup(func() { hcancel(); <-hubDone })

	job := newItemsJob("sentinel", 100000)
	step := make(chan struct{})
	job.gate = func(int) <-chan struct{} { return step }
	withSentinel := func(c *runner.Config) { c.Redis = rc; c.Events = live.NewEventPublisher(pub) }
	r1 := b.runner(withSentinel, job)
	r2 := b.runner(withSentinel, job)
	run, err := r1.Start(ctx, runner.StartParams{Job: "sentinel", Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	token := leaseToken(t, b, run.ID)
	sub := hub.Subscribe(live.RunTopic(run.ID))
	defer sub.Close()
	locks := redislock.New(rc, b.Env)

	// advance lets one item through and reports whether an event of the run arrives within
	// wait; with afterResync, only an event that follows a Resync (the Hub's reconnection)
	// counts.
	resynced := false
	advance := func(wait time.Duration, afterResync bool) bool {
		select {
		case step <- struct{}{}:
		case <-ctx.Done():
			t.Fatal("the run stopped taking items")
		}
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		for {
			select {
			case m := <-sub.C():
				if m.Resync {
					resynced = true
				} else if resynced || !afterResync {
					return true
				}
			case <-deadline.C:
				return false
			}
		}
	}
	testenv.Eventually(t, 10*time.Second, "an event of the running run", func() bool { return advance(time.Second, false) })
	if holder, ok, err := locks.Holder(ctx, "sentinel"); err != nil || !ok || holder != token {
		t.Fatalf("lock holder before the failover = %q, %v, %v; want the run's token", holder, ok, err)
	}
	resynced = false
	lastBefore := time.Now()

	set.Master.Kill(t)
	killed := time.Now()
	if _, err := r2.Start(ctx, runner.StartParams{Job: "sentinel", Actor: "test"}); err == nil {
		t.Fatal("a second run started while the master was down")
	} else {
		t.Logf("second start during the failover: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, "an event after the promotion", func() bool { return advance(300*time.Millisecond, true) })
	t.Logf("gap in live events across the failover: %s (master killed %s after the last event before it)",
		time.Since(lastBefore).Round(time.Millisecond), killed.Sub(lastBefore).Round(time.Millisecond))

	if got, tok := b.run(run.ID).Status, leaseToken(t, b, run.ID); got != bt.StatusRunning || tok != token {
		t.Fatalf("after the failover the run is %s with lease token %q; want RUNNING with its own lease %q", got, tok, token)
	}
	// The run renews its lease, and with it the lock, between items.
	testenv.Eventually(t, 10*time.Second, "the run's lock on the new master", func() bool {
		advance(50*time.Millisecond, false)
		holder, ok, err := locks.Holder(ctx, "sentinel")
		return err == nil && ok && holder == token
	})
	if _, err := r2.Start(ctx, runner.StartParams{Job: "sentinel", Actor: "test"}); !errors.Is(err, bt.ErrAlreadyRunning) {
		t.Fatalf("second start after the promotion = %v; want ALREADY_RUNNING", err)
	}
	if ok, err := locks.Acquire(ctx, "probe", "p", time.Minute); err != nil || !ok {
		t.Fatalf("a new lock on the new master: %v, %v", ok, err)
	}
	if ok, err := locks.Release(ctx, "probe", "p"); err != nil || !ok {
		t.Fatalf("release on the new master: %v, %v", ok, err)
	}
	if n := b.count(`SELECT count(*) FROM job_runs`); n != 1 {
		t.Fatalf("%d runs; want 1", n)
	}
	if _, err := r1.Runs().Cancel(ctx, run.ID, "test"); err != nil {
		t.Fatal(err)
	}
	close(step)
	b.waitStatus(run.ID, bt.StatusCancelled)
	testenv.Eventually(t, 10*time.Second, "the run's lock released on the new master", func() bool {
		_, ok, err := locks.Holder(ctx, "sentinel")
		return err == nil && !ok
	})
	if n := job.bodies.Load(); n != 1 {
		t.Fatalf("job body ran %d times, want 1", n)
	}
}

func leaseToken(t *testing.T, b *bundle, id int64) string {
	t.Helper()
	var token string
	if err := b.Pool.QueryRow(context.Background(), `SELECT lease_token FROM job_runs WHERE id = $1`, id).Scan(&token); err != nil {
		t.Fatal(err)
	}
	return token
}
