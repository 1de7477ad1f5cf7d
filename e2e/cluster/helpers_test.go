//go:build unix

package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CleanupBuild()
	os.Exit(code)
}

// sizes are a scenario's dimensions: the short form runs in `go test`, the soak form behind
// the soak build tag.
type sizes struct {
	name string
	// Demo jobs: pages (and their latency) of demo-collect, accounts (and the provider's
	// latency) of demo-settlement. A run of either lasts about n × latency plus overhead.
	pages, accounts              int
	pageLatency, providerLatency time.Duration
	rounds                       int           // faults per scenario
	outage                       time.Duration // how long a service stays down or a partition lasts
	crashPostgres                bool          // crash PostgreSQL (SIGKILL) instead of a fast shutdown
	stormJobs                    int
	stormFor                     time.Duration
	burst                        int // concurrent startJob calls
	// How the Redis partition cuts the holder off (Cut or Blackhole), and with which lease
	// (0: the cluster's default).
	redisPartition      ProxyMode
	redisPartitionLease time.Duration
}

var short = sizes{
	name: "short", pages: 300, accounts: 200, pageLatency: 30 * time.Millisecond, providerLatency: 30 * time.Millisecond,
	rounds: 1, outage: 1 * time.Second, stormJobs: 10, stormFor: 20 * time.Second, burst: 300,
	redisPartition: Cut,
}

// demoCluster starts three `baton serve --demo` instances with the demo jobs sized by s
// and the default lease (4s).
func demoCluster(t *testing.T, s sizes, poolSize int) *Cluster {
	t.Helper()
	return demoClusterLease(t, s, poolSize, 0)
}

// demoClusterLease is demoCluster with another lease (0: the default).
func demoClusterLease(t *testing.T, s sizes, poolSize int, lease time.Duration) *Cluster {
	t.Helper()
	return New(t, Config{PoolSize: poolSize, Lease: lease, Env: demoEnv(s)})
}

// demoEnv sizes the demo jobs of `baton serve --demo` by s.
func demoEnv(s sizes) map[string]string {
	return map[string]string{
		"BATON_DEMO_PAGES":            strconv.Itoa(s.pages),
		"BATON_DEMO_PAGE_LATENCY":     s.pageLatency.String(),
		"BATON_DEMO_ACCOUNTS":         strconv.Itoa(s.accounts),
		"BATON_DEMO_PROVIDER_LATENCY": s.providerLatency.String(),
	}
}

// runFor bounds how long a demo run of these sizes may take from start to end, with room
// for a loaded machine.
func (s sizes) runFor() time.Duration {
	d := time.Duration(max(s.pages, s.accounts)) * (max(s.pageLatency, s.providerLatency) + 20*time.Millisecond)
	return max(3*time.Minute, 2*d+time.Minute)
}

// lifeCtx lasts as long as the test (subscriptions may outlive ctxT's two minutes).
func lifeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// ctxT is the context of one API call or short exchange: two minutes.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// start starts job on node n and returns the run id, failing on any refusal.
func start(t *testing.T, n *Node, job, mode string) int64 {
	t.Helper()
	res, err := n.API().StartJob(ctxT(t), job, mode)
	if err != nil {
		t.Fatalf("startJob %s %s on %s: %v", job, mode, n.Name, err)
	}
	if res.Run == nil {
		t.Fatalf("startJob %s %s on %s refused: %+v", job, mode, n.Name, res.UserErrors)
	}
	id := res.Run.DBID()
	n.c.Logf("%s: started %s %s as run %d", n.Name, job, mode, id)
	return id
}

// startAll starts each of jobs on n in mode and returns their run ids by job.
func startAll(t *testing.T, n *Node, jobs []string, mode string) map[string]int64 {
	t.Helper()
	runs := make(map[string]int64, len(jobs))
	for _, j := range jobs {
		runs[j] = start(t, n, j, mode)
	}
	return runs
}

// waitAllProcessed waits until the run of each of jobs has processed at least k items.
func waitAllProcessed(t *testing.T, c *Cluster, runs map[string]int64, jobs []string, k int64) {
	t.Helper()
	for _, j := range jobs {
		waitProcessed(t, c, runs[j], k)
	}
}

// expectSucceeded waits for the run of each of jobs to end and fails for each that did not
// succeed; what names the runs in the message.
func expectSucceeded(t *testing.T, c *Cluster, s sizes, runs map[string]int64, jobs []string, what string) {
	t.Helper()
	for _, j := range jobs {
		r := c.WaitRun(runs[j], s.runFor(), "ends", func(r *RunRow) bool { return !r.Active() })
		if r.Status != "SUCCEEDED" {
			t.Errorf("%s %d of %s ended %s/%s: %s", what, r.ID, j, r.Status, r.StopReason, r.Message)
		}
	}
}

// waitProcessed waits until run id has processed at least k items while still active.
func waitProcessed(t *testing.T, c *Cluster, id, k int64) *RunRow {
	t.Helper()
	r := c.WaitRun(id, 60*time.Second, fmt.Sprintf("processed >= %d", k), func(r *RunRow) bool {
		return r.Processed >= k || !r.Active()
	})
	if !r.Active() {
		t.Fatalf("run %d ended (%s) before processing %d items: make the run longer", id, describe(r), k)
	}
	return r
}

// expectRefused makes calls concurrent startJob calls of job across nodes and fails unless
// every one is refused with ALREADY_RUNNING (or CAPACITY_EXCEEDED).
func expectRefused(t *testing.T, c *Cluster, job string, calls int, nodes ...*Node) {
	t.Helper()
	type result struct {
		code string
		run  int64
		err  error
	}
	out := make(chan result, calls)
	for i := range calls {
		n := nodes[i%len(nodes)]
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := n.API().StartJob(ctx, job, "RESUME")
			switch {
			case err != nil:
				out <- result{err: fmt.Errorf("%s: %w", n.Name, err)}
			case res.Run != nil:
				out <- result{run: res.Run.DBID()}
			default:
				out <- result{code: res.Code()}
			}
		}()
	}
	counts := map[string]int{}
	for range calls {
		r := <-out
		switch {
		case r.err != nil:
			t.Errorf("startJob %s: %v", job, r.err)
		case r.run != 0:
			t.Errorf("invariant violated: startJob %s started a second run %d while one was active", job, r.run)
		case r.code != "ALREADY_RUNNING" && r.code != "CAPACITY_EXCEEDED":
			t.Errorf("startJob %s: refused with %s, want ALREADY_RUNNING", job, r.code)
		default:
			counts[r.code]++
		}
	}
	c.Logf("%d concurrent startJob %s while it runs: %v", calls, job, counts)
}

// waitLeaseExpired waits for run id to end after a fault at faultAt (fault names it, as in
// "run 7 FAILED after <fault>") and fails unless it ended FAILED by lease expiry within
// recoveryBound. It returns the run's row.
func waitLeaseExpired(t *testing.T, c *Cluster, id int64, faultAt time.Time, fault string) *RunRow {
	t.Helper()
	r := c.WaitRun(id, recoveryBound(c)+30*time.Second, "fails after "+fault, func(r *RunRow) bool { return !r.Active() })
	withinBound(t, c, fmt.Sprintf("run %d FAILED after %s", id, fault), time.Since(faultAt), recoveryBound(c))
	if r.Status != "FAILED" || r.StopReason != "LEASE_EXPIRED" {
		t.Errorf("run %d ended %s/%s after %s, want FAILED/LEASE_EXPIRED", r.ID, r.Status, r.StopReason, fault)
	}
	return r
}

// waitFinishRefused waits up to 20s for holder's log to show that its worker (who: "woken",
// "stalled") of the failed run id stopped itself: the fence refused the run's finish.
func waitFinishRefused(t *testing.T, holder *Node, id int64, who string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !holder.LogContains(`"msg":"finish refused"`, fmt.Sprintf(`"run_id":%d,`, id)) {
		if time.Now().After(deadline) {
			t.Errorf("%s: the %s worker of run %d did not stop itself (no \"finish refused\" in its log within 20s)", holder.Name, who, id)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// withinBound fails unless d <= bound, logging the measure either way.
func withinBound(t *testing.T, c *Cluster, what string, d, bound time.Duration) {
	t.Helper()
	c.Logf("%s: %s (bound %s)", what, d.Round(time.Millisecond), bound)
	if d > bound {
		t.Errorf("%s took %s, more than %s", what, d.Round(time.Millisecond), bound)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// holdersOf returns the instances the runs of jobs are on, each once, in the order of jobs.
func holdersOf(t *testing.T, c *Cluster, runs map[string]int64, jobs []string) []*Node {
	t.Helper()
	var holders []*Node
	for _, j := range jobs {
		n := c.NodeByInstance(c.RunRow(runs[j]).Instance)
		if !slices.Contains(holders, n) {
			holders = append(holders, n)
		}
	}
	return holders
}

// allowAttempts raises the auto-resume attempts of the demo jobs to at least n, for a scenario
// that interrupts one chain of resumes n times (the default policy gives up after 3).
func allowAttempts(c *Cluster, n int) {
	c.T.Helper()
	c.Exec(`UPDATE job_settings SET auto_resume_max_attempts = GREATEST(auto_resume_max_attempts, $1) WHERE name = ANY($2)`, n, demoJobs)
}

// awaitSelfResume waits for ended run failed to continue by itself (ADR 12) and returns the run
// that continues it: an AUTO_RESUME RESUME run, the next attempt of the chain, in the same
// generation, from failed's checkpoint, on none of the instances down (killed, frozen, cut off,
// shutting down). It must start within the job's backoff (doubled per attempt) and one
// scheduler pass, with room for a loaded 2-core machine.
func awaitSelfResume(t *testing.T, c *Cluster, failed *RunRow, down []*Node) *RunRow {
	t.Helper()
	backoff := time.Duration(c.QueryInt(`SELECT auto_resume_backoff_seconds FROM job_settings WHERE name = $1`, failed.JobName)) *
		time.Second << failed.Attempt
	bound := backoff + c.Cfg.PollInterval + 10*time.Second
	ended := c.WaitRun(failed.ID, bound, "continued by an auto-resume", func(r *RunRow) bool { return r.AutoResumeOutcome != "" })
	if ended.AutoResumeOutcome != "RESUMED" || ended.AutoResumeRunID == nil {
		t.Fatalf("run %d of %s ended %s/%s: auto-resume outcome %q, want RESUMED", failed.ID, failed.JobName, failed.Status,
			failed.StopReason, ended.AutoResumeOutcome)
	}
	next := c.RunRow(*ended.AutoResumeRunID)
	if next.Trigger != "AUTO_RESUME" || next.Mode != "RESUME" || next.ResumedFrom == nil || *next.ResumedFrom != failed.ID ||
		next.Attempt != failed.Attempt+1 || next.Generation != failed.Generation || next.StartCheckpoint != failed.Checkpoint {
		t.Errorf("run %d (attempt %d, generation %d, checkpoint %q) was continued by run %d: trigger %s mode %s resumed from %v attempt %d generation %d start checkpoint %q",
			failed.ID, failed.Attempt, failed.Generation, failed.Checkpoint, next.ID, next.Trigger, next.Mode, next.ResumedFrom,
			next.Attempt, next.Generation, next.StartCheckpoint)
	}
	for _, n := range down {
		if next.Instance == n.Name {
			t.Errorf("run %d of %s was auto-resumed by run %d on %s, which was down", failed.ID, failed.JobName, next.ID, n.Name)
		}
	}
	c.Logf("run %d of %s (%s/%s, attempt %d) continued by itself: run %d on %s %s after it ended (backoff %s)", failed.ID,
		failed.JobName, failed.Status, failed.StopReason, failed.Attempt, next.ID, next.Instance,
		next.StartedAt.Sub(*failed.FinishedAt).Round(time.Millisecond), backoff)
	return next
}

// followToEnd waits for run id to end and, while it ends resumed by itself, for the run that
// continues it, and returns the last run of the chain.
func followToEnd(t *testing.T, c *Cluster, s sizes, id int64) *RunRow {
	t.Helper()
	for {
		r := c.WaitRun(id, s.runFor(), "ends", func(r *RunRow) bool { return !r.Active() })
		pending := r.AutoResumeOutcome == "" && c.QueryInt(`SELECT count(*) FROM job_runs WHERE id = $1 AND auto_resume_at IS NOT NULL`, id) == 1
		if r.AutoResumeOutcome != "RESUMED" && !pending {
			return r
		}
		id = awaitSelfResume(t, c, r, nil).ID
	}
}
