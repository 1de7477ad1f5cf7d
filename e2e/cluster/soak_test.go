//go:build unix && soak

package cluster

import (
	"context"
	"testing"
	"time"
)

// The soak forms (`make soak`: go test -tags soak -run Soak ./e2e/...): the scenarios of
// scenarios_test.go with longer runs, several faults per scenario, longer outages (PostgreSQL
// crashed rather than stopped), 50 storm jobs for 2 minutes and 1,000 concurrent starts.
var soak = sizes{
	name: "soak", pages: 6000, accounts: 3000, pageLatency: 20 * time.Millisecond, providerLatency: 20 * time.Millisecond,
	rounds: 5, outage: 8 * time.Second, crashPostgres: true, stormJobs: 50, stormFor: 2 * time.Minute, burst: 1000,
	// A stalled Redis, at the default 30s lease.
	redisPartition: Blackhole, redisPartitionLease: 30 * time.Second,
}

func TestSoakKillHolder(t *testing.T)          { scenarioKillHolder(t, soak) }
func TestSoakPausedHolder(t *testing.T)        { scenarioPausedHolder(t, soak) }
func TestSoakRedisFlushRestart(t *testing.T)   { scenarioRedisFlushRestart(t, soak) }
func TestSoakPostgresRestart(t *testing.T)     { scenarioPostgresRestart(t, soak) }
func TestSoakPartitionRedis(t *testing.T)      { scenarioPartitionRedis(t, soak) }
func TestSoakPartitionPostgres(t *testing.T)   { scenarioPartitionPostgres(t, soak) }
func TestSoakRollingRestartStorm(t *testing.T) { scenarioRollingRestartStorm(t, soak) }
func TestSoakConcurrentStart(t *testing.T)     { scenarioConcurrentStart(t, soak) }
func TestSoakRollingDeploy(t *testing.T)       { scenarioRollingDeploy(t, soak) }

// Fixed in 316cb74 ("recoverer skips runs locked by a frozen worker, item transactions end
// with the lease"). It was: a worker stalled inside an item transaction blocked lease
// recovery — and with it every instance's scheduler — until its connection died.
//
// postgres.(*Store).WriteItems, for an item with job writes (Attempt.Tx, as demo-collect
// does), opens a transaction whose first statement is the fenced UPDATE of the job_runs row;
// the row stays locked until COMMIT. If the worker stops between that UPDATE and COMMIT —
// frozen (SIGSTOP, a long GC or VM pause) or partitioned from PostgreSQL — its session sits
// "idle in transaction" holding the lock: PostgreSQL has no idle_in_transaction_session_timeout
// set and the TCP connection is healthy. The recoverer's UPDATE ... WHERE lease_until < now()
// (postgres.RecoverExpired) then waits on that row lock on every instance, forever, so the
// expired run is never failed (and no other expired run anywhere is either). The recoverer
// runs inside the scheduler loop (runner.schedule), so no cron job fires on any instance
// meanwhile. Observed: pg_stat_activity shows the worker's session "idle in transaction"
// (last query the demo_collected INSERT) and the recoverers of the other instances waiting
// on Lock/tuple and Lock/transactionid behind it; the run stays RUNNING long past its lease.
// The regression tests below retry until a stall has had every chance to land inside an
// item transaction (before the fix, within 8 to 14 attempts), so they live in the soak.

// TestSoakStalledTransactionRecovered stalls the holder's PostgreSQL traffic (blackhole) 25
// times, so that some stalls land inside an item transaction, and each time expects the run
// to be failed within lease + poll (while the storm jobs keep firing).
func TestSoakStalledTransactionRecovered(t *testing.T) {
	stalledTransaction(t, func(n *Node) { n.BlackholePostgres() }, func(n *Node) { n.Heal() })
}

// TestSoakFrozenTransactionRecovered is the same with SIGSTOP instead of a stall.
func TestSoakFrozenTransactionRecovered(t *testing.T) {
	stalledTransaction(t, func(n *Node) { n.Pause() }, func(n *Node) { n.Continue() })
}

func stalledTransaction(t *testing.T, stall, unstall func(*Node)) {
	c := New(t, Config{Kind: StormNodes, PoolSize: 8, Env: map[string]string{
		"STORM_JOBS": "3", "STORM_DEMO": "1", "BATON_DEMO_PAGES": "100000", "BATON_DEMO_PAGE_LATENCY": "2ms"}})
	holder := c.Node(1)
	for attempt := 1; attempt <= 25; attempt++ {
		// A woken worker may still hold the Redis lock for a moment after the heal.
		var id int64
		for deadline := time.Now().Add(10 * time.Second); id == 0; {
			res, err := holder.API().StartJob(ctxT(t), "demo-collect", "RESTART")
			switch {
			case err != nil:
				t.Fatal(err)
			case res.Run != nil:
				id = res.Run.DBID()
			case res.Code() != "ALREADY_RUNNING" || time.Now().After(deadline):
				t.Fatalf("startJob refused: %+v", res.UserErrors)
			default:
				time.Sleep(100 * time.Millisecond)
			}
		}
		waitProcessed(t, c, id, 20)
		stall(holder)
		at := time.Now()
		for time.Since(at) < recoveryBound(c) && c.RunRow(id).Active() {
			time.Sleep(50 * time.Millisecond)
		}
		r := c.RunRow(id)
		if !r.Active() {
			c.Logf("attempt %d: run %d recovered in %s", attempt, id, time.Since(at).Round(time.Millisecond))
			unstall(holder)
			holder.WaitReady(30 * time.Second)
			continue
		}
		sessions := c.pgActivity()
		before := c.QueryInt(`SELECT count(*) FROM job_runs WHERE job_name LIKE 'storm-%'`)
		time.Sleep(5 * time.Second)
		fired := c.QueryInt(`SELECT count(*) FROM job_runs WHERE job_name LIKE 'storm-%'`) - before
		r = c.RunRow(id)
		unstall(holder)
		t.Errorf("attempt %d: run %d is still %s %s after its holder stalled, its lease ended %s ago; "+
			"3 jobs due every second fired %d times cluster-wide in the last 5s\n%s",
			attempt, id, r.Status, time.Since(at).Round(time.Millisecond), time.Since(r.LeaseUntil).Round(time.Millisecond), fired, sessions)
		return
	}
}

// TestSoakShutdownDuringClaims: TestClusterShutdownDuringClaims with 30 restarts.
func TestSoakShutdownDuringClaims(t *testing.T) { shutdownDuringClaims(t, 30) }

// Fixed by InsertRun locking the job_settings row FOR NO KEY UPDATE (it took FOR UPDATE) and
// by Finish retrying a deadlock victim. It was: Finish updates the job_runs row, then inserts
// the checkpoint, whose foreign key takes KEY SHARE on the job's job_settings row; InsertRun
// locked that row FOR UPDATE and then inserted a job_runs row, which waits on the finishing
// row through the one-active-run index. Opposite lock order: when a run finished while the
// job's next start was being inserted, PostgreSQL aborted one of them ("deadlock detected");
// when Finish was the victim, the run, done, stayed RUNNING without a worker until the
// recoverer failed it LEASE_EXPIRED.

// TestSoakFinishRacesNextStart runs 20 jobs every second whose runs last 0.9s to 1.1s, so
// many end while their next fire is being inserted, with Redis flushed every 50ms so the lock
// does not keep the next start away (the database is the guard then). It fails if a run that
// processed all its items ended anything but SUCCEEDED, or if an instance logged a deadlock.
// The race is rare; runner/postgres's TestFinishDoesNotDeadlockWithNextStart replays it step
// by step in `make test`.
func TestSoakFinishRacesNextStart(t *testing.T) { finishRacesNextStart(t, 60*time.Second) }

func finishRacesNextStart(t *testing.T, d time.Duration) {
	c := New(t, Config{Kind: StormNodes, PoolSize: 24, Env: map[string]string{
		"STORM_JOBS": "20", "STORM_WORK": "900ms", "STORM_SLOW_WORK": "1s", "STORM_WORK_SPREAD": "10ms"}})
	k := c.StartChecker()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				_ = c.RDB.FlushAll(context.Background()).Err()
			}
		}
	}()
	time.Sleep(d)
	close(stop)
	<-done
	c.DisableSchedules()
	k.Verify(VerifyOptions{NoResume: true})
	lost := c.QueryInt(`SELECT count(*) FROM job_runs WHERE status <> 'SUCCEEDED' AND total = 1 AND processed = 1`)
	deadlocked := 0
	for _, n := range c.Nodes {
		if n.LogContains("deadlock detected") {
			deadlocked++
		}
	}
	if lost > 0 || deadlocked > 0 {
		t.Errorf("%d run(s) processed every item yet did not end SUCCEEDED; %d instance(s) logged \"deadlock detected\"", lost, deadlocked)
	}
}
