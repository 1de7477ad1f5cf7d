//go:build unix

package cluster

// Regression tests for product bugs this suite found, each kept after its fix. Short forms
// run in `make test`; soak_test.go has the long ones.

import (
	"testing"
	"time"
)

// Fixed in 7bae8bb ("renew the database lease first and bound every Redis lock call") for
// Redis going away, and for a stalled Redis by setting ContextTimeoutEnabled on the client
// server.Serve builds (go-redis ignores context deadlines on socket reads without it). It was:
// runner.(*Run).renew called locks.Extend with the job's context (no deadline) before
// store.Renew; with Redis unreachable go-redis kept retrying (about 1.4s when connections
// are reset, about 5s per renewal when Redis does not answer), so any lease shorter than
// about twice that wait expired while the worker waited on Redis — the run FAILED
// LEASE_EXPIRED although PostgreSQL, the fence, was healthy. Observed: a 2s lease lost about
// a second after the cut; a 10s lease lost at its first renewal under a stall.

// TestClusterRedisCutKeepsLease: 2s lease, the holder cut off Redis → the run goes on and
// makes progress in every half lease.
func TestClusterRedisCutKeepsLease(t *testing.T) { redisOutageKeepsLease(t, Cut, 2*time.Second) }

// TestClusterRedisStallKeepsLease: 4s lease, the holder's Redis traffic stalled (accepted,
// never answered) → the same. Before the fix each renewal froze the worker inside
// redislock.(*Locker).Extend for ReadTimeout and more: the run was FAILED LEASE_EXPIRED ~6s
// after the stall, having processed nothing since.
func TestClusterRedisStallKeepsLease(t *testing.T) {
	redisOutageKeepsLease(t, Blackhole, 4*time.Second)
}

func redisOutageKeepsLease(t *testing.T, mode ProxyMode, lease time.Duration) {
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

// Fixed in 316cb74 ("missed fires are recorded"). It was: a late claim moved
// next_scheduled_at past now, and the fires in between were neither run nor recorded.

// TestClusterFrozenSchedulersRecordMissedFires freezes every instance (SIGSTOP) for 3s
// under a cron storm: the fires of the frozen seconds must be recorded (SKIPPED_MISSED).
func TestClusterFrozenSchedulersRecordMissedFires(t *testing.T) {
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
	checkFires(t, c, false)
	if n := c.QueryInt(`SELECT count(*) FROM job_schedule_events WHERE outcome = 'SKIPPED_MISSED'`); n == 0 {
		t.Errorf("no fire was recorded SKIPPED_MISSED after every scheduler was frozen for 3s")
	}
}

// Fixed by running a start, from its claim on, under context.WithoutCancel with a timeout,
// and by ordering Shutdown after the starts in flight. It was: runner.(*Runner).Start passed
// the scheduler's context to store.ClaimFire and store.InsertRun; on SIGTERM that context was
// cancelled, and when it happened while a COMMIT was on the wire PostgreSQL committed but pgx
// reported the cancellation. After InsertRun, Start released the lock and recorded the fire
// "SKIPPED_" while the STARTING run it had committed stayed without a worker, blocking the
// job for a lease until the recoverer failed it; after ClaimFire, the fire neither ran nor
// was recorded. Seen in the rolling-restart storm (runs recorded SKIPPED_ that had been
// inserted; 10 such and 11 unrecorded fires in the 2-minute soak storm).

// TestClusterShutdownDuringClaims sends SIGTERM to an instance right after second boundaries,
// while the fires of that second are being claimed and inserted: no fire both ran and was
// recorded skipped, none neither ran nor was recorded.
func TestClusterShutdownDuringClaims(t *testing.T) { shutdownDuringClaims(t, 6) }

func shutdownDuringClaims(t *testing.T, restarts int) {
	c := New(t, Config{Kind: StormNodes, PoolSize: 40, Env: map[string]string{"STORM_JOBS": "30"}})
	k := c.StartChecker()
	time.Sleep(2 * time.Second)
	for i := range restarts {
		n := c.Nodes[i%len(c.Nodes)]
		offset := time.Duration((i*7)%40) * time.Millisecond
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + offset)))
		n.Restart(30 * time.Second)
	}
	c.DisableSchedules()
	k.Verify(VerifyOptions{})
	checkFires(t, c, false)
}

// A run whose write fails because PostgreSQL is shutting down (fast shutdown: "terminating
// connection due to administrator command", 57P01) ends DATABASE_UNAVAILABLE, and its worker
// records that end once the database is back. The end used to be retried only when no
// connection could be had: its BEGIN met 57P01 or a reset instead and was dropped, and the run
// stayed RUNNING until the recoverer ended it LEASE_EXPIRED, a lease later, under the wrong
// cause for the policy's auto_resume_on. It failed every time then.

// TestClusterDatabaseEndRecordedAfterRestart: PostgreSQL stops for 1s under demo-collect (its
// item transaction meets the shutdown) → the run, if the restart ended it, ended
// FAILED/DATABASE_UNAVAILABLE, recorded by its worker once the database was back.
func TestClusterDatabaseEndRecordedAfterRestart(t *testing.T) {
	// A lease well beyond the restart: on a loaded machine PostgreSQL's restart and the worker's
	// reconnect can take longer than the default 4s, and the recoverer would then end the run
	// LEASE_EXPIRED before its worker could record the cause. The regression this catches never
	// records it at all, whatever the lease.
	c := demoClusterLease(t, short, 4, 15*time.Second)
	for attempt := 1; attempt <= 3; attempt++ {
		id := start(t, c.Node(1), "demo-collect", "RESTART")
		before := waitProcessed(t, c, id, 10).Processed
		c.RestartPostgres(short.outage, false)
		r := c.WaitRun(id, recoveryBound(c)+60*time.Second, "continues or ends", func(r *RunRow) bool {
			return !r.Active() || r.Processed >= before+5
		})
		if r.Active() {
			c.Logf("attempt %d: run %d went on through the restart", attempt, id)
			c.WaitRun(id, short.runFor(), "ends", func(r *RunRow) bool { return !r.Active() })
			continue
		}
		if r.StopReason != "DATABASE_UNAVAILABLE" {
			t.Errorf("run %d ended %s/%s after PostgreSQL restarted under it, want FAILED/DATABASE_UNAVAILABLE recorded by its worker: %s",
				id, r.Status, r.StopReason, r.Message)
		}
		return
	}
	t.Fatal("the run went on through every restart: the scenario never cut it, so it checked nothing")
}
