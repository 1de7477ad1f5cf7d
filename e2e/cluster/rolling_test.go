//go:build unix

package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestClusterRollingDeploy: each instance in turn stops (SIGTERM) and starts again while the
// demo jobs run, and nobody starts a RESUME (the soak form is in soak_test.go).
func TestClusterRollingDeploy(t *testing.T) { scenarioRollingDeploy(t, short) }

// rollingShutdownTimeout is the instances' BATON_SHUTDOWN_TIMEOUT in the rolling deploy: short,
// as a deploy gives an instance little time to drain.
const rollingShutdownTimeout = 2 * time.Second

// scenarioRollingDeploy: a rolling deploy under load. Three instances run demo-collect and
// demo-settlement; s.rounds times, each instance in turn gets SIGTERM with a short shutdown
// timeout while a job runs on it, and starts again. To have them there, the test starts a job
// on the instance next to go (RESTART) once its last run has ended, so the jobs are started
// again and again (demo-settlement until a generation ends with a target in doubt: a RESTART
// is then REPLAY_BLOCKED until a reconcile, which is no part of a deploy, and the roll goes on
// with demo-collect). Nobody starts a RESUME: every run a shutdown interrupted (FAILED,
// SHUTDOWN or SHUTDOWN_TIMEOUT) is continued by an AUTO_RESUME run on another instance from
// its checkpoint, or superseded by a later run the test started; in the end every generation
// is complete and the invariants hold.
func scenarioRollingDeploy(t *testing.T, s sizes) {
	c := New(t, Config{PoolSize: 4, ShutdownTimeout: rollingShutdownTimeout, Env: demoEnv(s)})
	// The default policy waits 5s before the first resume, doubling per attempt. The test has
	// the demo jobs resume at once (backoff 0): the stopped instance is draining, then down, so
	// one of the others takes the resume. A chain that meets several stops in a row (the
	// resumed run lands on the instance next to go) would run out of the default 3 attempts in
	// the soak form's rounds: 100 attempts.
	c.Exec(`UPDATE job_settings SET auto_resume_backoff_seconds = 0, auto_resume_max_attempts = 100 WHERE name = ANY($1)`, demoJobs)
	c.Logf("auto-resume of %v: backoff 0s, 100 attempts", demoJobs)
	k := c.StartChecker()

	// A run is interrupted at each stop at least. One may finish between the test's look and
	// the SIGTERM; the roll then goes on (up to three times the stops) until the count is
	// reached, and until a job has finished and been started again during the roll.
	planned := s.rounds * len(c.Nodes)
	want := planned
	interrupted, stops := 0, 0
	blocked := map[string]bool{}
	startedAgain := func() bool {
		return c.QueryInt(`SELECT count(*) FROM job_runs WHERE trigger = 'MANUAL'`) > int64(len(demoJobs))
	}
	var left []*Node // the instances yet to go in this round
	for ; stops < 3*planned && (stops < planned || interrupted < want || !startedAgain()); stops++ {
		if len(left) == 0 {
			left = slices.Clone(c.Nodes)
		}
		var n *Node
		n, left = nextToGo(t, c, left)
		on := keepActiveOn(t, c, s, n, blocked)
		n.Term(c.Cfg.ShutdownTimeout + 20*time.Second)
		for _, id := range on {
			if awaitAutoResume(t, c, id, n) {
				interrupted++
			}
		}
		n.Start()
	}
	starts := c.QueryInt(`SELECT count(*) FROM job_runs WHERE trigger = 'MANUAL'`)
	c.Logf("rolling deploy: %d stops, %d runs started, %d interrupted and resumed by themselves", stops, starts, interrupted)
	if interrupted < want {
		t.Errorf("%d run(s) interrupted by %d stops, want at least %d: the scenario did not test what it claims", interrupted, stops, want)
	}

	c.Settle(s.runFor())
	for _, j := range demoJobs {
		if r := latestRun(t, c, j); r.Status != "SUCCEEDED" {
			t.Errorf("the last run of %s did not finish the roll: %s: %s", j, describe(r), r.Message)
		}
	}
	checkCollected(t, c, s)
	checkSettled(t, c, s)
	checkGenerationsSettled(t, c, s)
	checkShutdownsContinued(t, c, want)
	if n := c.QueryInt(`SELECT count(*) FROM job_runs WHERE mode = 'RESUME' AND trigger <> 'AUTO_RESUME'`); n != 0 {
		t.Errorf("%d RESUME run(s) not started by auto-resume; the scenario starts none", n)
	}
	k.Verify(VerifyOptions{RunTimeout: s.runFor()})
}

// nextToGo picks the instance of left to stop next: the first that holds a run of a demo job
// (a deploy goes in any order; this one spares the wait for a run to come to it), else the
// first. It returns it and the rest of left.
func nextToGo(t *testing.T, c *Cluster, left []*Node) (*Node, []*Node) {
	t.Helper()
	pick := 0
	holders := map[string]bool{}
	for _, j := range demoJobs {
		if r := latestRun(t, c, j); r != nil && r.Active() {
			holders[r.Instance] = true
		}
	}
	for i, n := range left {
		if holders[n.Name] {
			pick = i
			break
		}
	}
	n := left[pick]
	return n, slices.Delete(slices.Clone(left), pick, pick+1)
}

// rollPatience is how long keepActiveOn waits for a job running elsewhere to end (so it can
// start it on the instance next to go) once it has a run on that instance.
const rollPatience = 2 * time.Second

// keepActiveOn makes sure the demo jobs run on n and have processed a few items, and returns
// their runs. A job whose last run ended is started on n (RESTART); one running elsewhere is
// waited for (for rollPatience once another runs on n, else until it ends); one whose RESTART
// is REPLAY_BLOCKED is marked in blocked and left alone from then on.
func keepActiveOn(t *testing.T, c *Cluster, s sizes, n *Node, blocked map[string]bool) []int64 {
	t.Helper()
	began := time.Now()
	deadline := began.Add(s.runFor())
	for {
		var on []int64
		for _, j := range demoJobs {
			if blocked[j] {
				continue
			}
			r := latestRun(t, c, j)
			switch {
			case r != nil && r.Active():
				if r.Instance == n.Name {
					on = append(on, r.ID)
				}
				continue
			case r != nil && r.Status == "FAILED" && r.AutoResumeOutcome == "" && waitsForAutoResume(t, c, r.ID):
				continue // about to be resumed elsewhere: a RESTART now would supersede it
			}
			res, err := n.API().StartJob(ctxT(t), j, "RESTART")
			switch {
			case err != nil:
				t.Fatalf("startJob %s RESTART on %s: %v", j, n.Name, err)
			case res.Run != nil:
				on = append(on, res.Run.DBID())
				c.Logf("%s: started %s RESTART as run %d", n.Name, j, res.Run.DBID())
			case res.Code() == "REPLAY_BLOCKED":
				blocked[j] = true
				c.Logf("%s: RESTART of %s refused: %s; the roll goes on without it", n.Name, j, res.UserErrors[0].Message)
			case res.Code() != "ALREADY_RUNNING" && res.Code() != "CAPACITY_EXCEEDED":
				t.Fatalf("startJob %s RESTART on %s refused: %+v", j, n.Name, res.UserErrors)
			}
		}
		patient := time.Since(began) < rollPatience
		if len(on) == len(demoJobs)-len(blocked) || (!patient && len(on) > 0) {
			var going []int64
			for _, id := range on {
				if r := waitProgress(c, id, 10); r.Active() {
					going = append(going, id)
				}
			}
			if len(going) > 0 && (len(going) == len(on) || !patient) {
				return going
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run of %v became active on %s within %s", demoJobs, n.Name, s.runFor())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkGenerationsSettled checks that every generation of demo-settlement whose last run
// succeeded has a ledger row for every account: no generation the roll went through lost one.
func checkGenerationsSettled(t *testing.T, c *Cluster, s sizes) {
	t.Helper()
	gens := c.QueryInt(`SELECT count(DISTINCT generation) FROM job_runs WHERE job_name = 'demo-settlement'`)
	short := c.QueryInt(`SELECT count(*) FROM (SELECT DISTINCT ON (generation) generation, status FROM job_runs
			WHERE job_name = 'demo-settlement' ORDER BY generation, id DESC) last
		WHERE status = 'SUCCEEDED' AND (SELECT count(DISTINCT target_key) FROM job_ledger l
			WHERE l.job_name = 'demo-settlement' AND l.generation = last.generation) <> $1`, s.accounts)
	c.Logf("demo-settlement: %d generation(s)", gens)
	if short > 0 {
		t.Errorf("%d of %d generation(s) of demo-settlement ended SUCCEEDED without a ledger row for each of the %d accounts", short, gens, s.accounts)
	}
}

// waitProgress waits until run id has processed k items or ended, and returns its row.
func waitProgress(c *Cluster, id, k int64) *RunRow {
	c.T.Helper()
	return c.WaitRun(id, 60*time.Second, fmt.Sprintf("processed >= %d or ended", k), func(r *RunRow) bool { return r.Processed >= k || !r.Active() })
}

// waitsForAutoResume reports whether ended run id has a due time for its auto-resume.
func waitsForAutoResume(t *testing.T, c *Cluster, id int64) bool {
	t.Helper()
	return c.QueryInt(`SELECT count(*) FROM job_runs WHERE id = $1 AND auto_resume_at IS NOT NULL AND auto_resume_outcome IS NULL`, id) == 1
}

// latestRun returns the job's latest run, or nil.
func latestRun(t *testing.T, c *Cluster, job string) *RunRow {
	t.Helper()
	ctx, cancel := dbCtx()
	defer cancel()
	r, err := scanRunRow(c.DB.QueryRow(ctx, `SELECT `+runRowColumns+` FROM job_runs WHERE job_name = $1 ORDER BY id DESC LIMIT 1`, job))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		t.Fatalf("latest run of %s: %v", job, err)
	}
	return r
}

// awaitAutoResume checks run id, active on n when n got SIGTERM: it ended FAILED by the
// shutdown (or finished first), and then continued by itself on another instance
// (awaitSelfResume). It reports whether the shutdown interrupted the run.
func awaitAutoResume(t *testing.T, c *Cluster, id int64, n *Node) bool {
	t.Helper()
	r := c.WaitRun(id, recoveryBound(c)+30*time.Second, "ends with its instance", func(r *RunRow) bool { return !r.Active() })
	switch {
	case r.Status == "SUCCEEDED":
		c.Logf("run %d of %s finished before the shutdown of %s reached it", id, r.JobName, n.Name)
		return false
	case r.Status != "FAILED" || (r.StopReason != "SHUTDOWN" && r.StopReason != "SHUTDOWN_TIMEOUT"):
		t.Errorf("run %d, active on %s at its SIGTERM, ended %s/%s, want FAILED/SHUTDOWN or SHUTDOWN_TIMEOUT: %s",
			id, n.Name, r.Status, r.StopReason, r.Message)
		return false
	}
	awaitSelfResume(t, c, r, []*Node{n})
	return true
}

// checkShutdownsContinued checks every run of the cluster a shutdown ended (FAILED, SHUTDOWN or
// SHUTDOWN_TIMEOUT): one AUTO_RESUME run, on another instance, resumed from it, or it was
// superseded by a later run the test started (MANUAL). It fails unless there are at least want.
func checkShutdownsContinued(t *testing.T, c *Cluster, want int) {
	t.Helper()
	ctx, cancel := dbCtx()
	defer cancel()
	rows, err := c.DB.Query(ctx, `SELECT r.id, r.job_name, r.instance, COALESCE(r.auto_resume_outcome, ''),
			COALESCE(array_agg(n.id ORDER BY n.id) FILTER (WHERE n.id IS NOT NULL), '{}'),
			COALESCE(array_agg(n.instance ORDER BY n.id) FILTER (WHERE n.id IS NOT NULL), '{}'),
			EXISTS (SELECT 1 FROM job_runs l WHERE l.job_name = r.job_name AND l.id > r.id AND l.trigger = 'MANUAL')
		FROM job_runs r LEFT JOIN job_runs n ON n.resumed_from = r.id AND n.trigger = 'AUTO_RESUME'
		WHERE r.status = 'FAILED' AND r.stop_reason IN ('SHUTDOWN', 'SHUTDOWN_TIMEOUT')
		GROUP BY r.id ORDER BY r.id`)
	if err != nil {
		t.Fatalf("runs ended by a shutdown: %v", err)
	}
	defer rows.Close()
	resumed, superseded := 0, 0
	for rows.Next() {
		var id int64
		var job, instance, outcome string
		var by []int64
		var on []string
		var laterManual bool
		if err := rows.Scan(&id, &job, &instance, &outcome, &by, &on, &laterManual); err != nil {
			t.Fatalf("runs ended by a shutdown: %v", err)
		}
		switch {
		case len(by) == 1 && on[0] != instance && outcome == "RESUMED":
			resumed++
		case len(by) == 0 && outcome == "SUPERSEDED" && laterManual:
			superseded++
		case len(by) > 1:
			t.Errorf("invariant violated: run %d of %s was auto-resumed %d times: runs %v", id, job, len(by), by)
		default:
			t.Errorf("run %d of %s ended by the shutdown of %s was not continued on another instance: outcome %q, AUTO_RESUME runs %v on %v",
				id, job, instance, outcome, by, on)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("runs ended by a shutdown: %v", err)
	}
	c.Logf("runs ended by a shutdown: %d auto-resumed on another instance, %d superseded by a later run", resumed, superseded)
	if resumed+superseded < want {
		t.Errorf("%d run(s) ended by a shutdown, want at least %d", resumed+superseded, want)
	}
}
