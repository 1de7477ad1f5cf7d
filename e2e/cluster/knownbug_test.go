//go:build unix && knownbug

package cluster

// Product bugs the cluster scenarios found, pinned as failing tests. They are behind the
// knownbug build tag so `make test` stays green; run them with
//
//	go test -tags knownbug -run KnownBug -count=1 ./e2e/cluster/
//
// and move each into the default suite once it is fixed.

import (
	"context"
	"testing"
	"time"
)

// Bug: lease renewal waits on Redis before it renews in PostgreSQL.
//
// runner.(*Run).renew calls locks.Extend (a Lua script over go-redis) with the job's context,
// which has no deadline, and only then store.Renew. When Redis is unreachable the call does
// not fail fast: go-redis retries (dial retries when the connection is refused, about 1.4s in
// all here; a 3s read timeout per attempt when Redis does not answer, about 5s per renewal).
// The renewal starts with half the lease left, so any lease shorter than about twice that
// wait expires while the worker waits on Redis: the recoverer fails the run LEASE_EXPIRED
// although PostgreSQL, the actual fence, is healthy. With Redis stalled, a 10s lease dies at
// its first renewal; at the default 30s the run freezes ~5s per renewal. This contradicts
// "Redis is the fast path, not the guard ... a Redis outage must not stop every job"
// (runner.Start) and architecture invariant 4 (the lease is proof of *progress*).
// Suggested fix: renew the database lease first (it is the fence), and bound the Redis
// extend (and Acquire in Start) by a small timeout, such as min(lease/10, 500ms).

// TestKnownBugRedisCutLosesLease: 2s lease, the holder cut off Redis (connections reset) →
// the run must go on; today it fails LEASE_EXPIRED about a second after the cut.
func TestKnownBugRedisCutLosesLease(t *testing.T) {
	knownBugRedisOutage(t, Cut, 2*time.Second)
}

// TestKnownBugRedisStallLosesLease: 10s lease, the holder's Redis traffic stalled →
// the run must go on; today it fails LEASE_EXPIRED at its first renewal.
func TestKnownBugRedisStallLosesLease(t *testing.T) {
	knownBugRedisOutage(t, Blackhole, 10*time.Second)
}

func knownBugRedisOutage(t *testing.T, mode ProxyMode, lease time.Duration) {
	s := short
	s.pages = 2000
	c := demoClusterLease(t, s, 4, lease)
	holder := c.Node(1)
	id := start(t, holder, "demo-collect", "RESTART")
	waitProcessed(t, c, id, 10)
	holder.SetRedisMode(mode)
	defer holder.Heal()
	last := c.RunRow(id)
	// Two leases without Redis, checked every half lease: the run stays active and moves.
	for i := 0; i < 4; i++ {
		time.Sleep(lease / 2)
		r := c.RunRow(id)
		c.Logf("%s: %s, lease ends in %s", (time.Duration(i+1) * lease / 2), describe(r), time.Until(r.LeaseUntil).Round(time.Millisecond))
		if !r.Active() {
			t.Fatalf("the holder lost its lease while only Redis was unreachable (%s, lease %s): %s: %s", mode, lease, describe(r), r.Message)
		}
		if r.Processed <= last.Processed {
			t.Errorf("no progress for half a lease while Redis is unreachable (%s): processed %d → %d", mode, last.Processed, r.Processed)
		}
		last = r
	}
}

// Possible bug (or an undocumented misfire policy): fires missed while no scheduler could
// fire them are neither run nor recorded.
//
// runner.schedulePass claims a late due fire with next = the schedule's next fire after
// *now* (store.ClaimFire(due, next)), so every fire between the late one and now is dropped
// without a job_schedule_events row. Issue 6 asks that "every fire ran once or is recorded as
// skipped". Here every instance is frozen (SIGSTOP) for 3s under a cron storm; after SIGCONT
// each job fires once, and the fires of the frozen seconds have no trace. A catch-up claim
// could record them (outcome SKIPPED_MISSED, say) in the claiming transaction.
func TestKnownBugMissedFiresNotRecorded(t *testing.T) {
	c := New(t, Config{Kind: StormNodes, PoolSize: 8, Env: map[string]string{"STORM_JOBS": "5"}})
	time.Sleep(3 * time.Second)
	for _, n := range c.Nodes {
		n.Pause()
	}
	time.Sleep(3 * time.Second)
	for _, n := range c.Nodes {
		n.Continue()
	}
	time.Sleep(3 * time.Second)
	c.DisableSchedules()
	c.Settle(30 * time.Second)
	checkFires(t, c, false, true)
}

// Bug: a worker stalled inside an item transaction blocks lease recovery — and with it every
// instance's scheduler — until its connection dies.
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
// Suggested fix: bound item transactions server-side (SET LOCAL
// idle_in_transaction_session_timeout and statement_timeout to the lease left), and make the
// recoverer skip rows it cannot lock (FOR UPDATE SKIP LOCKED in a CTE, or lock_timeout) so
// one stuck run cannot stop recovery and scheduling cluster-wide.

// TestKnownBugStalledTransactionBlocksRecovery stalls the holder's PostgreSQL traffic
// (blackhole) until the stall lands inside an item transaction (a few attempts at most), then
// expects the run to be failed within lease + poll and the storm jobs to keep firing.
func TestKnownBugStalledTransactionBlocksRecovery(t *testing.T) {
	knownBugStalledTransaction(t, func(n *Node) { n.BlackholePostgres() }, func(n *Node) { n.Heal() })
}

// TestKnownBugFrozenTransactionBlocksRecovery is the same with SIGSTOP instead of a stall.
func TestKnownBugFrozenTransactionBlocksRecovery(t *testing.T) {
	knownBugStalledTransaction(t, func(n *Node) { n.Pause() }, func(n *Node) { n.Continue() })
}

func knownBugStalledTransaction(t *testing.T, stall, unstall func(*Node)) {
	c := New(t, Config{Kind: StormNodes, PoolSize: 8, Env: map[string]string{
		"STORM_JOBS": "3", "STORM_DEMO": "1", "BATON_DEMO_PAGES": "100000", "BATON_DEMO_PAGE_LATENCY": "2ms"}})
	holder := c.Node(1)
	for attempt := 1; attempt <= 25; attempt++ {
		// A woken worker may hold the Redis lock for a moment: its renewal takes the lost key
		// back before the database refuses the lease (see the first bug above).
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
			c.Logf("attempt %d: run %d recovered in %s (the stall missed the item transaction)", attempt, id, time.Since(at).Round(time.Millisecond))
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
	t.Log("the stall never landed inside an item transaction in 25 attempts")
}

// Bug: a scheduled start interrupted by shutdown can leave an orphan run and also record the
// fire as skipped.
//
// runner.(*Runner).Start passes the scheduler's context to store.InsertRun. On SIGTERM that
// context is cancelled; if it happens while the COMMIT of InsertRun is on the wire,
// PostgreSQL commits the STARTING run but pgx reports the cancellation. Start then takes the
// error path: it releases the Redis lock and records the fire in job_schedule_events as
// "SKIPPED_" (an uncoded error: the outcome ends in an empty code) — while the run row
// stays STARTING with no worker, blocks the job (ALREADY_RUNNING) for a lease, and is failed
// LEASE_EXPIRED by the recoverer, never having been activated. Seen in the rolling-restart
// storm: "storm-004 fire 13:40:36 ran as run 73 and was recorded SKIPPED_ by node-3", node-3
// logging "shutting down" at 13:40:36.144 and node-2 "run failed: lease expired ... run 73"
// at 13:40:40. The same race hits a manual startJob whose HTTP request is cancelled: the
// caller gets an error, yet an orphan run blocks the job for a lease.
// Suggested fix: run InsertRun under context.WithoutCancel(ctx) with a timeout (the insert is
// short and its outcome must be known), or on a commit error check whether the row exists.

// TestKnownBugShutdownOrphansScheduledRun sends SIGTERM to an instance right after second
// boundaries, while the fires of that second are being inserted, and checks strictly.
func TestKnownBugShutdownOrphansScheduledRun(t *testing.T) {
	c := New(t, Config{Kind: StormNodes, PoolSize: 40, Env: map[string]string{"STORM_JOBS": "30"}})
	k := c.StartChecker()
	time.Sleep(2 * time.Second)
	for i := range 15 {
		n := c.Nodes[i%len(c.Nodes)]
		offset := time.Duration(2+(i*7)%40) * time.Millisecond
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + offset)))
		n.Restart(30 * time.Second)
	}
	c.DisableSchedules()
	k.Verify(VerifyOptions{Strict: true})
}

// Bug: Finish deadlocks with the next start of the same job, and a run that succeeded ends
// FAILED/LEASE_EXPIRED.
//
// postgres.(*Store).Finish is one statement: UPDATE the job_runs row (row lock), then INSERT
// the checkpoint into job_checkpoints, whose foreign key takes KEY SHARE on the job's
// job_settings row. postgres.(*Store).InsertRun, in one transaction, locks that job_settings
// row FOR UPDATE first and then INSERTs a job_runs row, which must wait for the finishing
// row's transaction because of the partial unique index job_runs_one_active. Opposite lock
// order: when a run finishes while the job's next start is being inserted (a cron fire, or a
// startJob), PostgreSQL aborts one of them with "deadlock detected" (SQLSTATE 40P01). When
// the victim is Finish, the worker logs "finish refused ... deadlock detected" and leaves; the
// run, done, stays RUNNING without a worker (the job is blocked for the rest of its lease)
// until the recoverer fails it LEASE_EXPIRED. Seen in the shutdown test: runs 1640 and 1651
// (storm-010, storm-015) finished SUCCEEDED, both "finish refused ... deadlock detected" at
// 13:56:12.82, recovered LEASE_EXPIRED at 13:56:14.6; the PostgreSQL log shows the Finish
// waiting "while locking tuple ... in relation job_settings" (the FK check) against the
// InsertRun's INSERT INTO job_runs.
// Suggested fix: take the locks in one order (Finish could lock the job_settings row first, or
// InsertRun could check for an active run before locking job_settings), and retry Finish on
// 40P01 — it is idempotent under its fence.

// TestKnownBugFinishDeadlocksWithNextStart runs 20 jobs every second whose runs last 0.9s to
// 1.1s, so many end while their next fire is being inserted, with Redis flushed every 50ms
// so that the lock does not keep the next start away (the database is the guard then, as
// after any Redis loss or slow lock call: the deadlock above followed an Acquire that timed
// out). It fails if a run that processed all its items ended anything but SUCCEEDED, or if
// an instance logged a deadlock.
func TestKnownBugFinishDeadlocksWithNextStart(t *testing.T) {
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
	time.Sleep(30 * time.Second)
	close(stop)
	<-done
	c.DisableSchedules()
	k.Verify(VerifyOptions{Strict: true, NoResume: true})
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
