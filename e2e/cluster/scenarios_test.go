//go:build unix

package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The short forms of the scenarios. Each starts a cluster of its own (private PostgreSQL and
// Redis, three instances with a 4s lease and a 500ms recovery poll), injects its fault, and
// ends with Checker.Verify. The soak forms (soak_test.go, build tag soak) run the same
// scenarios with the sizes of `soak`.

func TestClusterKillHolder(t *testing.T)          { scenarioKillHolder(t, short) }
func TestClusterPausedHolder(t *testing.T)        { scenarioPausedHolder(t, short) }
func TestClusterRedisFlushRestart(t *testing.T)   { scenarioRedisFlushRestart(t, short) }
func TestClusterPostgresRestart(t *testing.T)     { scenarioPostgresRestart(t, short) }
func TestClusterPartitionRedis(t *testing.T)      { scenarioPartitionRedis(t, short) }
func TestClusterPartitionPostgres(t *testing.T)   { scenarioPartitionPostgres(t, short) }
func TestClusterRollingRestartStorm(t *testing.T) { scenarioRollingRestartStorm(t, short) }
func TestClusterConcurrentStart(t *testing.T)     { scenarioConcurrentStart(t, short) }

// recoveryBound is how long after a holder stops (killed, frozen, cut off) its run may stay
// active: the rest of its lease, one recovery poll, and slack for a loaded 2-core machine.
func recoveryBound(c *Cluster) time.Duration { return c.Cfg.Lease + c.Cfg.PollInterval + 2*time.Second }

var demoJobs = []string{"demo-collect", "demo-settlement"}

// frozenJobs are the jobs the scenarios run under a holder that is frozen (SIGSTOP) or whose
// PostgreSQL traffic stalls. demo-collect writes its pages in the item transaction: a holder
// frozen inside it keeps the run's row locked until PostgreSQL ends the idle transaction
// (after a lease), and the recoverer skips the locked row meanwhile (it used to block on it:
// see regressions in soak_test.go).
var frozenJobs = demoJobs

// checkCollected checks that demo-collect's business date has every page exactly once.
func checkCollected(t *testing.T, c *Cluster, s sizes) {
	t.Helper()
	n := c.QueryInt(`SELECT count(*) FROM demo_collected WHERE business_date = (SELECT max(business_date) FROM demo_collected)`)
	if n != int64(s.pages) {
		t.Errorf("demo_collected holds %d pages of the business date, want %d", n, s.pages)
	}
}

// checkSettled checks that demo-settlement's current generation has a ledger row for every
// account.
func checkSettled(t *testing.T, c *Cluster, s sizes) {
	t.Helper()
	n := c.QueryInt(`SELECT count(DISTINCT target_key) FROM job_ledger l JOIN job_settings js ON js.name = l.job_name
		WHERE l.job_name = 'demo-settlement' AND l.generation = js.current_generation`)
	if n != int64(s.accounts) {
		t.Errorf("demo-settlement's generation has ledger rows for %d accounts, want %d", n, s.accounts)
	}
}

// scenarioKillHolder: SIGKILL the instances holding the two runs mid-run → both FAILED
// (LEASE_EXPIRED) within lease + one poll → each resumes by itself (ADR 12) within its backoff
// on an instance still up, from its checkpoint; the killed instances come back. Repeated
// s.rounds times, each round killing the new holders.
func scenarioKillHolder(t *testing.T, s sizes) {
	c := demoCluster(t, s, 4)
	allowAttempts(c, s.rounds) // each round kills the same chain of resumes once more
	k := c.StartChecker()
	runs := startAll(t, c.Node(1), demoJobs, "RESTART")
	for round := 1; round <= s.rounds; round++ {
		waitAllProcessed(t, c, runs, demoJobs, 10)
		holders := holdersOf(t, c, runs, demoJobs)
		killedAt := time.Now()
		for _, h := range holders {
			h.Kill()
		}
		failed := map[string]*RunRow{}
		for _, j := range demoJobs {
			r := waitLeaseExpired(t, c, runs[j], killedAt, fmt.Sprintf("SIGKILL of its holder (%s, round %d)", j, round))
			if r.Checkpoint == "" {
				t.Errorf("run %d processed %d items but has no checkpoint", r.ID, r.Processed)
			}
			failed[j] = r
		}
		for _, j := range demoJobs {
			runs[j] = awaitSelfResume(t, c, failed[j], holders).ID
		}
		for _, h := range holders {
			h.Start()
		}
	}
	expectSucceeded(t, c, s, runs, demoJobs, "last AUTO_RESUME run")
	checkCollected(t, c, s)
	checkSettled(t, c, s)
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
}

// scenarioPausedHolder: SIGSTOP the holders past their lease → their runs are failed by
// another instance and resume by themselves elsewhere; SIGCONT → the woken worker writes
// nothing (fencing checks, and its failed run rows stay as they were) and stops itself
// ("finish refused" in its log); the instance stays healthy.
func scenarioPausedHolder(t *testing.T, s sizes) {
	c := demoCluster(t, s, 4)
	allowAttempts(c, s.rounds)
	k := c.StartChecker()
	runs := startAll(t, c.Node(1), frozenJobs, "RESTART")
	for round := 1; round <= s.rounds; round++ {
		waitAllProcessed(t, c, runs, frozenJobs, 10)
		holders := holdersOf(t, c, runs, frozenJobs)
		frozenAt := time.Now()
		for _, h := range holders {
			h.Pause()
		}
		stale := map[string]*RunRow{}
		for _, j := range frozenJobs {
			stale[j] = waitLeaseExpired(t, c, runs[j], frozenAt, fmt.Sprintf("SIGSTOP of its holder (%s, round %d)", j, round))
		}
		// A new holder takes over while the old one is frozen, so the woken worker finds the
		// job running elsewhere.
		for _, j := range frozenJobs {
			runs[j] = awaitSelfResume(t, c, stale[j], holders).ID
		}
		waitAllProcessed(t, c, runs, frozenJobs, 5)
		for _, h := range holders {
			h.Continue()
		}
		for _, j := range frozenJobs {
			id := stale[j].ID
			waitFinishRefused(t, c.NodeByInstance(stale[j].Instance), id, "woken")
			now := c.RunRow(id)
			if now.Status != stale[j].Status || now.Processed != stale[j].Processed || now.Checkpoint != stale[j].Checkpoint ||
				!now.FinishedAt.Equal(*stale[j].FinishedAt) {
				t.Errorf("invariant violated: the woken worker changed its failed run: %s became %s", describe(stale[j]), describe(now))
			}
		}
		for _, h := range holders {
			c.Logf("round %d: the woken workers of %s stopped themselves and wrote nothing", round, h.Name)
			h.WaitReady(30 * time.Second)
		}
	}
	expectSucceeded(t, c, s, runs, frozenJobs, "last AUTO_RESUME run")
	checkCollected(t, c, s)
	checkSettled(t, c, s)
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
}

// waitLive waits for n more subscription events after index from whose progress moved past
// processed: live updates, not the 15s quiet re-read.
func waitLive(t *testing.T, c *Cluster, name string, sub *Subscription, from int, processed int64, n int, timeout time.Duration) {
	t.Helper()
	began := time.Now()
	deadline := began.Add(timeout)
	got := 0
	last := processed
	for got < n {
		e, i, err := sub.WaitFor(from, time.Until(deadline), func(r RunState) bool { return r.Progress.Processed > last || r.Final() })
		if err != nil {
			t.Errorf("subscription on %s: %d of %d live updates within %s after the fault: %v", name, got, n, timeout, err)
			return
		}
		got++
		last = e.Run.Progress.Processed
		if e.Run.Final() {
			break
		}
		from = i + 1
	}
	c.Logf("subscription on %s: %d live updates within %s (processed %d → %d)", name, got, time.Since(began).Round(time.Millisecond), processed, last)
}

// scenarioRedisFlushRestart: FLUSHALL, then a Redis restart, under a running run → no second
// run starts (the database refuses it: ALREADY_RUNNING from every instance, before, during
// and after the outage); the holder continues to SUCCEEDED and takes its lock back;
// runProgress subscriptions on the holder and on another instance see live updates again
// after the restart and get the final state.
func scenarioRedisFlushRestart(t *testing.T, s sizes) {
	c := demoCluster(t, s, 4)
	k := c.StartChecker()
	holder := c.Node(1)
	const job = "demo-collect"
	id := start(t, holder, job, "RESTART")
	ctx := lifeCtx(t)
	subs := map[string]*Subscription{}
	for _, n := range []*Node{holder, c.Node(2)} {
		sub, err := n.API().SubscribeRun(ctx, id)
		if err != nil {
			t.Fatalf("subscribe on %s: %v", n.Name, err)
		}
		t.Cleanup(sub.Close)
		subs[n.Name] = sub
	}
	for name, sub := range subs {
		if _, _, err := sub.WaitFor(0, 30*time.Second, func(r RunState) bool { return r.Progress.Processed >= 5 }); err != nil {
			t.Fatalf("subscription on %s before the fault: %v", name, err)
		}
	}
	others := []*Node{c.Node(2), c.Node(3)}
	for round := 1; round <= s.rounds; round++ {
		c.FlushRedis()
		expectRefused(t, c, job, 12, others...)
		c.Logf("redis: stop")
		c.Redis.Stop(t)
		expectRefused(t, c, job, 6, others...)
		time.Sleep(s.outage)
		c.Redis.Start(t)
		c.Logf("redis: started again (empty)")
		r := c.RunRow(id)
		if !r.Active() {
			t.Fatalf("the run ended during the Redis outage: %s", describe(r))
		}
		marks := map[string]int{}
		for name, sub := range subs {
			marks[name] = sub.Len()
		}
		expectRefused(t, c, job, 12, others...)
		for name, sub := range subs {
			waitLive(t, c, name, sub, marks[name], r.Processed, 3, 10*time.Second)
		}
		// The holder takes the flushed lock back at its next renewal.
		deadline := time.Now().Add(c.Cfg.Lease + 3*time.Second)
		for {
			n, err := c.RDB.Exists(context.Background(), "baton:{"+Env+"}:lock:"+job).Result()
			if err == nil && n == 1 {
				c.Logf("round %d: the holder took its Redis lock back", round)
				break
			}
			if now := c.RunRow(id); !now.Active() || time.Now().After(deadline) {
				if now.Active() {
					t.Errorf("the holder of run %d did not take its Redis lock back within a lease", id)
				}
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	r := c.WaitRun(id, s.runFor(), "ends", func(r *RunRow) bool { return !r.Active() })
	if r.Status != "SUCCEEDED" {
		t.Errorf("the holder did not continue through the Redis faults: %s: %s", describe(r), r.Message)
	}
	for name, sub := range subs {
		e, _, err := sub.WaitFor(0, 20*time.Second, func(r RunState) bool { return r.Final() })
		if err != nil {
			t.Errorf("subscription on %s: no final state: %v", name, err)
		} else if e.Run.Status != r.Status {
			t.Errorf("subscription on %s: final state %s, the run ended %s", name, e.Run.Status, r.Status)
		}
	}
	if n := len(c.Runs(job)); n != 1 {
		t.Errorf("invariant violated: %d runs of %s, want 1", n, job)
	}
	checkCollected(t, c, s)
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
}

// scenarioPostgresRestart: PostgreSQL stops (or crashes) and comes back mid-run → each run
// either continues or ends FAILED because the database went away (DATABASE_UNAVAILABLE, or
// LEASE_EXPIRED when its end could not be written) and resumes by itself (ADR 12); every
// instance reconnects (readyz 200, the API answers).
func scenarioPostgresRestart(t *testing.T, s sizes) {
	c := demoCluster(t, s, 4)
	allowAttempts(c, s.rounds)
	k := c.StartChecker()
	holders := map[string]*Node{"demo-collect": c.Node(1), "demo-settlement": c.Node(2)}
	runs := map[string]int64{}
	for _, j := range demoJobs {
		runs[j] = start(t, holders[j], j, "RESTART")
	}
	for round := 1; round <= s.rounds; round++ {
		before := map[string]int64{}
		for _, j := range demoJobs {
			if r := c.RunRow(runs[j]); r.Status == "FAILED" {
				// It went on after the last restart, then failed all the same: it resumes too.
				runs[j] = awaitSelfResume(t, c, r, nil).ID
			}
			before[j] = waitProcessed(t, c, runs[j], 10).Processed
		}
		c.RestartPostgres(s.outage, s.crashPostgres)
		backAt := time.Now()
		c.WaitAllReady(90 * time.Second)
		c.Logf("round %d: every instance ready %s after PostgreSQL came back", round, time.Since(backAt).Round(time.Millisecond))
		for _, n := range c.Nodes {
			if _, err := n.API().Runs(ctxT(t), "", 5); err != nil {
				t.Errorf("%s: runs query after the PostgreSQL restart: %v", n.Name, err)
			}
		}
		for _, j := range demoJobs {
			// Safe either way: it goes on (and makes progress), or it ends.
			r := c.WaitRun(runs[j], recoveryBound(c)+60*time.Second, "continues or ends", func(r *RunRow) bool {
				return !r.Active() || r.Processed >= before[j]+5
			})
			c.Logf("round %d: %s after the PostgreSQL restart: %s %s", round, j, r.Status, r.StopReason)
			switch {
			case r.Active(), r.Status == "SUCCEEDED":
			case r.Status == "FAILED" && (r.StopReason == "DATABASE_UNAVAILABLE" || r.StopReason == "LEASE_EXPIRED"):
				runs[j] = awaitSelfResume(t, c, r, nil).ID
			default:
				t.Errorf("run %d of %s ended %s/%s after the PostgreSQL restart, want it going on or FAILED/DATABASE_UNAVAILABLE (or LEASE_EXPIRED): %s",
					r.ID, j, r.Status, r.StopReason, r.Message)
			}
		}
	}
	for _, j := range demoJobs {
		r := followToEnd(t, c, s, runs[j])
		if r.Status != "SUCCEEDED" {
			t.Errorf("%s did not finish by itself after the PostgreSQL restarts: last run %s: %s", j, describe(r), r.Message)
		}
	}
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
	checkCollected(t, c, s)
	checkSettled(t, c, s)
}

// scenarioPartitionRedis: cut the holder off Redis (or stall its Redis traffic) → its
// readiness fails, its run continues on the database lease, no instance (the holder included)
// can start a second run, before or after the lock's TTL ran out; healed → ready again, a
// subscription elsewhere sees live updates again, the run ends SUCCEEDED.
func scenarioPartitionRedis(t *testing.T, s sizes) {
	c := demoClusterLease(t, s, 4, s.redisPartitionLease)
	k := c.StartChecker()
	holder := c.Node(1)
	const job = "demo-collect"
	id := start(t, holder, job, "RESTART")
	sub, err := c.Node(2).API().SubscribeRun(lifeCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	waitProcessed(t, c, id, 10)
	for round := 1; round <= s.rounds; round++ {
		if round > 1 && !c.RunRow(id).Active() {
			c.Logf("the run ended after %d rounds", round-1)
			break
		}
		holder.SetRedisMode(s.redisPartition)
		waitUnready(t, c, holder, 10*time.Second)
		before := c.RunRow(id).Processed
		expectRefused(t, c, job, 9, c.Nodes...)
		// Past the lock's TTL, so the other instances can take the Redis lock: the database
		// must still refuse them.
		time.Sleep(max(s.outage, c.Cfg.Lease+time.Second))
		r := c.RunRow(id)
		if !r.Active() || r.Processed <= before {
			t.Errorf("round %d: the holder did not go on without Redis: %s (processed %d before the cut)", round, describe(r), before)
		}
		expectRefused(t, c, job, 9, c.Nodes...)
		mark := sub.Len()
		holder.Heal()
		holder.WaitReady(30 * time.Second)
		if now := c.RunRow(id); now.Active() {
			waitLive(t, c, c.Node(2).Name, sub, mark, now.Processed, 3, 10*time.Second)
		}
	}
	r := c.WaitRun(id, s.runFor(), "ends", func(r *RunRow) bool { return !r.Active() })
	if r.Status != "SUCCEEDED" {
		t.Errorf("the holder did not go on through the Redis partition: %s: %s", describe(r), r.Message)
	}
	if n := len(c.Runs(job)); n != 1 {
		t.Errorf("invariant violated: %d runs of %s, want 1", n, job)
	}
	checkCollected(t, c, s)
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
}

func waitUnready(t *testing.T, c *Cluster, n *Node, timeout time.Duration) {
	t.Helper()
	began := time.Now()
	for n.Ready() {
		if time.Since(began) > timeout {
			t.Errorf("%s still ready %s after it was cut off", n.Name, timeout)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.Logf("%s: readyz not 200 after %s", n.Name, time.Since(began).Round(time.Millisecond))
}

// scenarioPartitionPostgres: (1) stall the holder's PostgreSQL traffic (blackhole) → its runs
// fail by lease expiry on another instance and resume by themselves there; heal → the stalled
// statements reach PostgreSQL after the lease: the fence refuses them, the worker stops
// itself, the instance is ready again. (2) cut the holder off PostgreSQL (connections reset,
// so PostgreSQL aborts an open item transaction: demo-collect is safe here) → its run fails
// by lease expiry; heal → ready again; the run resumes by itself and succeeds.
func scenarioPartitionPostgres(t *testing.T, s sizes) {
	c := demoCluster(t, s, 4)
	k := c.StartChecker()
	holder := c.Node(1)
	runs := startAll(t, holder, frozenJobs, "RESTART")
	waitAllProcessed(t, c, runs, frozenJobs, 10)

	holder.BlackholePostgres()
	stalledAt := time.Now()
	stale := map[string]*RunRow{}
	for _, j := range frozenJobs {
		stale[j] = waitLeaseExpired(t, c, runs[j], stalledAt, fmt.Sprintf("its holder's PostgreSQL stalled (%s)", j))
	}
	waitUnready(t, c, holder, 10*time.Second)
	for _, j := range frozenJobs {
		runs[j] = awaitSelfResume(t, c, stale[j], []*Node{holder}).ID
	}
	waitAllProcessed(t, c, runs, frozenJobs, 5)
	time.Sleep(s.outage)
	holder.Heal()
	holder.WaitReady(30 * time.Second)
	for _, j := range frozenJobs {
		id := stale[j].ID
		waitFinishRefused(t, holder, id, "stalled")
		now := c.RunRow(id)
		if now.Status != stale[j].Status || now.Processed != stale[j].Processed || now.Checkpoint != stale[j].Checkpoint {
			t.Errorf("invariant violated: stalled writes changed the failed run: %s became %s", describe(stale[j]), describe(now))
		}
	}
	expectSucceeded(t, c, s, runs, frozenJobs, "RESUME run")
	checkCollected(t, c, s)
	checkSettled(t, c, s)

	// (2) Cut.
	const job = "demo-collect"
	id := start(t, holder, job, "RESTART")
	waitProcessed(t, c, id, 10)
	holder.CutPostgres()
	cut := waitLeaseExpired(t, c, id, time.Now(), "its holder was cut off PostgreSQL")
	waitUnready(t, c, holder, 10*time.Second)
	time.Sleep(s.outage)
	holder.Heal()
	healedAt := time.Now()
	holder.WaitReady(30 * time.Second)
	c.Logf("%s: ready %s after the heal", holder.Name, time.Since(healedAt).Round(time.Millisecond))
	resumed := awaitSelfResume(t, c, cut, nil)
	expectSucceeded(t, c, s, map[string]int64{job: resumed.ID}, []string{job}, "AUTO_RESUME run")
	checkCollected(t, c, s)
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
}

// scenarioRollingRestartStorm: s.stormJobs jobs fire every second on three storm nodes while
// each node in turn gets SIGTERM and starts again → no fire ran twice, none both ran and was
// recorded skipped, none recorded twice (Verify), fires of a running job are recorded
// SKIPPED_RUNNING, interrupted runs resume by themselves or are superseded by the next fire
// (invariant 10, Verify), and every fire either ran or was recorded.
func scenarioRollingRestartStorm(t *testing.T, s sizes) {
	// Runs take 200ms, so a SIGTERM often interrupts one (FAILED/SHUTDOWN: its auto-resume,
	// due after 5s, is usually superseded by the job's next fire); storm-000 takes 1.2s, so
	// every other fire of it finds it running and is recorded SKIPPED_RUNNING.
	c := New(t, Config{Kind: StormNodes, PoolSize: max(16, s.stormJobs/2), Env: map[string]string{
		"STORM_JOBS": strconv.Itoa(s.stormJobs), "STORM_WORK": "200ms", "STORM_SLOW_WORK": "1200ms"}})
	k := c.StartChecker()
	began := time.Now()
	time.Sleep(3 * time.Second)
	restarts := 0
	for time.Since(began) < s.stormFor-5*time.Second {
		for _, n := range c.Nodes {
			if time.Since(began) >= s.stormFor-5*time.Second && restarts >= len(c.Nodes) {
				break
			}
			n.Restart(c.Cfg.ShutdownTimeout + 20*time.Second)
			restarts++
			time.Sleep(time.Second)
		}
	}
	if d := s.stormFor - time.Since(began); d > 0 {
		time.Sleep(d)
	}
	c.DisableSchedules()
	c.Logf("storm: %d jobs for %s, %d rolling restarts", s.stormJobs, time.Since(began).Round(time.Second), restarts)
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
	checkFires(t, c, true)
}

// checkFires fails for every fire of a storm job, between its first and its last, that
// neither ran nor was recorded as skipped. With wantSkips it also fails unless some fire was
// recorded SKIPPED_RUNNING.
func checkFires(t *testing.T, c *Cluster, wantSkips bool) {
	t.Helper()
	ctx := ctxT(t)
	rows, err := c.DB.Query(ctx, `SELECT job_name, scheduled_for, 'RAN' FROM job_runs WHERE scheduled_for IS NOT NULL AND job_name LIKE 'storm-%'
		UNION ALL SELECT job_name, scheduled_for, outcome FROM job_schedule_events WHERE job_name LIKE 'storm-%'`)
	if err != nil {
		t.Fatal(err)
	}
	type fire struct {
		at      time.Time
		outcome string
	}
	byJob := map[string][]fire{}
	outcomes := map[string]int{}
	for rows.Next() {
		var job, outcome string
		var at time.Time
		if err := rows.Scan(&job, &at, &outcome); err != nil {
			t.Fatal(err)
		}
		byJob[job] = append(byJob[job], fire{at, outcome})
		outcomes[outcome]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	missing := 0
	var examples []string
	for job, fires := range byJob {
		sort.Slice(fires, func(i, j int) bool { return fires[i].at.Before(fires[j].at) })
		for i := 1; i < len(fires); i++ {
			gap := fires[i].at.Sub(fires[i-1].at)
			if gap > time.Second {
				n := int(gap/time.Second) - 1
				missing += n
				if len(examples) < 10 {
					examples = append(examples, fmt.Sprintf("%s: %d fire(s) after %s", job, n, fires[i-1].at.Format("15:04:05")))
				}
			}
		}
	}
	c.Logf("storm fires: %v across %d jobs; %d fire(s) neither ran nor were recorded", outcomes, len(byJob), missing)
	if wantSkips && outcomes["SKIPPED_RUNNING"] == 0 {
		t.Errorf("no fire of storm-000 (1.2s of work a second) was recorded SKIPPED_RUNNING")
	}
	slices.Sort(examples)
	if missing > 0 {
		t.Errorf("invariant violated: %d scheduled fire(s) neither ran nor were recorded as skipped, e.g. %v", missing, examples)
	}
}

// scenarioConcurrentStart: s.burst startJob calls at once, spread over the three instances
// (and over several tokens, since the mutation rate limit is per token and instance) → exactly
// one run; every other call ALREADY_RUNNING (or CAPACITY_EXCEEDED), none failing.
func scenarioConcurrentStart(t *testing.T, s sizes) {
	c := demoCluster(t, s, 8)
	k := c.StartChecker()
	const job = "demo-collect"
	tokens := c.MintTokens("burst", max(3, s.burst/25))
	type result struct {
		node    string
		run     int64
		code    string
		err     error
		latency time.Duration
	}
	results := make([]result, s.burst)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range s.burst {
		n := c.Nodes[i%len(c.Nodes)]
		cl := n.Client(tokens[i%len(tokens)])
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			<-gate
			t0 := time.Now()
			res, err := cl.StartJob(ctx, job, "RESTART")
			r := result{node: n.Name, err: err, latency: time.Since(t0)}
			if err == nil {
				if res.Run != nil {
					r.run = res.Run.DBID()
				} else {
					r.code = res.Code()
				}
			}
			results[i] = r
		}()
	}
	began := time.Now()
	close(gate)
	wg.Wait()
	took := time.Since(began)
	codes := map[string]int{}
	var started []int64
	var lat []time.Duration
	for _, r := range results {
		lat = append(lat, r.latency)
		switch {
		case r.err != nil:
			t.Errorf("startJob on %s failed: %v", r.node, r.err)
		case r.run != 0:
			started = append(started, r.run)
		case r.code == "ALREADY_RUNNING" || r.code == "CAPACITY_EXCEEDED":
			codes[r.code]++
		default:
			t.Errorf("startJob on %s refused with %s, want ALREADY_RUNNING", r.node, r.code)
		}
	}
	slices.Sort(lat)
	c.Logf("%d concurrent startJob in %s: %d started, refusals %v; latency p50 %s p99 %s", s.burst,
		took.Round(time.Millisecond), len(started), codes, lat[len(lat)/2].Round(time.Millisecond),
		lat[len(lat)*99/100].Round(time.Millisecond))
	if len(started) != 1 {
		t.Errorf("invariant violated: %d calls started a run (%v), want exactly 1", len(started), started)
	}
	if n := len(c.Runs(job)); n != 1 {
		t.Errorf("invariant violated: %d runs of %s in the database, want 1", n, job)
	}
	if len(started) > 0 {
		ues, err := c.API(1).CancelRun(ctxT(t), started[0])
		if err != nil || len(ues) > 0 {
			t.Errorf("cancelRun %d: %v %+v", started[0], err, ues)
		}
		r := c.WaitRun(started[0], 30*time.Second, "ends after cancel", func(r *RunRow) bool { return !r.Active() })
		if r.Status != "CANCELLED" {
			t.Errorf("cancelled run ended %s/%s", r.Status, r.StopReason)
		}
	}
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
}
