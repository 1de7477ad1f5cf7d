//go:build unix

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/demo"
)

// Sharded runs across instances (docs/adr/0019-sharded-runs.md): demo-settlement-sharded pays
// its accounts in 12 shards through one provider the test serves over HTTP, demo-crawl walks
// its pages in 16. Each scenario is short: a shard lasts a second or two.

const (
	shardedSettlement = "demo-settlement-sharded"
	crawl             = "demo-crawl"
)

// settlementCluster starts three instances (4 slots each: the 12 shards are held at once) that
// pay demo-settlement-sharded's accounts through one provider served by the test, and turns
// the job's auto-resume backoff down to a second so a dead holder's shards resume quickly.
func settlementCluster(t *testing.T, accounts int) (*Cluster, *demo.Provider) {
	t.Helper()
	var handler atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := handler.Load()
		if h == nil {
			http.Error(w, "the provider is not up yet", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := New(t, Config{PoolSize: 4, Env: map[string]string{
		"BATON_DEMO_ACCOUNTS":          strconv.Itoa(accounts),
		"BATON_DEMO_SETTLEMENT_SHARDS": "12",
		"BATON_DEMO_PROVIDER_URL":      srv.URL,
	}})
	p := demo.NewProvider(c.DB, demo.ProviderConfig{Latency: 50 * time.Millisecond, ServerErrorRate: demo.Off,
		ThrottleRate: demo.Off, TimeoutAfterApplyRate: demo.Off, RejectRate: demo.Off})
	h := demo.ProviderHandler(p)
	handler.Store(&h)
	c.Exec(`UPDATE job_settings SET auto_resume_backoff_seconds = 1 WHERE name = $1`, shardedSettlement)
	return c, p
}

// waitSpread waits until every instance holds a shard of run id at the same moment, and at
// least minProcessed items are done, and returns the shards as they were then.
func waitSpread(t *testing.T, c *Cluster, id int64, minProcessed int64) []*ShardRow {
	t.Helper()
	shards := WaitShards(c, id, 60*time.Second, "held by every instance at once", func(ss []*ShardRow) bool {
		var done int64
		holders := map[string]bool{}
		for _, s := range ss {
			done += s.Processed
			if s.Held() {
				holders[s.Instance] = true
			}
		}
		return len(holders) == len(c.Nodes) && done >= minProcessed
	})
	c.Logf("run %d: every instance holds shards at once: %s", id, describeShards(shards))
	return shards
}

// heldBy returns the shards of shards that instance holds, and the busiest holder other than
// node-1 (whose API the scenario goes on using).
func busiestHolder(c *Cluster, shards []*ShardRow) (*Node, []*ShardRow) {
	by := map[string][]*ShardRow{}
	for _, s := range shards {
		if s.Held() && s.Instance != c.Node(1).Name {
			by[s.Instance] = append(by[s.Instance], s)
		}
	}
	var best string
	for name, held := range by {
		if best == "" || len(held) > len(by[best]) || (len(held) == len(by[best]) && name < best) {
			best = name
		}
	}
	return c.NodeByInstance(best), by[best]
}

// accountNumber reads demo-settlement's checkpoint "acct:0042" (0 for none).
func accountNumber(t *testing.T, cp string) int {
	t.Helper()
	if cp == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimPrefix(cp, "acct:"))
	if err != nil {
		t.Fatalf("checkpoint %q is no account", cp)
	}
	return n
}

// TestClusterShardsKillHolder: the 12 shards of demo-settlement-sharded are held by all three
// instances at once; SIGKILL the busiest holder mid-run → its shards go back to PENDING once
// their leases run out and are resumed by the other instances from their checkpoints, the run
// ends SUCCEEDED, and once the targets in doubt at the kill are reconciled (and those never
// applied paid by a replay), the provider holds exactly one effect per account.
func TestClusterShardsKillHolder(t *testing.T) {
	const accounts = 360
	c, _ := settlementCluster(t, accounts)
	k := c.StartChecker()
	id := start(t, c.Node(1), shardedSettlement, "RESTART")
	shards := waitSpread(t, c, id, 24)
	victim, _ := busiestHolder(c, shards)
	victim.Kill()
	// What the dead holder committed is final: read after the kill.
	atKill := map[int64]*ShardRow{}
	for _, s := range Shards(c, id) {
		if s.Instance == victim.Name && s.Held() {
			atKill[s.ID] = s
		}
	}
	if len(atKill) == 0 {
		t.Fatalf("%s held no shard of run %d when it was killed", victim.Name, id)
	}
	run := c.WaitRun(id, 2*time.Minute, "ends", func(r *RunRow) bool { return !r.Active() })
	if run.Status != "SUCCEEDED" {
		t.Fatalf("run %d after the kill: %s: %s", id, describe(run), run.Message)
	}
	progressed := 0
	after := Shards(c, id)
	for _, s := range after {
		before, ok := atKill[s.ID]
		if !ok {
			continue
		}
		if before.Checkpoint != "" {
			progressed++
		}
		// The dead holder's last commit may still land after the kill (PostgreSQL ends what it
		// was sent): a shard pays one account at a time, so it resumes from the checkpoint read
		// after the kill or the next account's. A shard with no checkpoint yet stands just before
		// its first account (shard i of n pays accounts i×A/n+1 to (i+1)×A/n).
		from, at := accountNumber(t, s.StartCheckpoint), accountNumber(t, before.Checkpoint)
		if before.Checkpoint == "" {
			at = s.Index * accounts / len(after)
		}
		if s.Status != "SUCCEEDED" || s.Instance == victim.Name || s.Attempt < 1 || from < at || from > at+1 {
			t.Errorf("shard %s of the killed holder (at checkpoint %q): %s on %s, attempt %d, resumed from %q; want SUCCEEDED elsewhere from its checkpoint",
				s.Key, before.Checkpoint, s.Status, s.Instance, s.Attempt, s.StartCheckpoint)
		}
	}
	if progressed == 0 {
		t.Errorf("no shard of %s had a checkpoint when it was killed: make the shards longer", victim.Name)
	}
	c.Logf("%d shards of %s resumed elsewhere from their checkpoints (%d had progressed)", len(atKill), victim.Name, progressed)
	settleInDoubt(t, c, id)
	if n := c.QueryInt(`SELECT count(*) FROM (SELECT l.target_key FROM job_ledger l
			JOIN demo_provider_effects e ON e.idempotency_key = l.idempotency_key AND e.target_key = l.target_key
			WHERE l.job_name = $1 GROUP BY 1 HAVING count(*) = 1) once`, shardedSettlement); n != accounts {
		t.Errorf("%d of %d accounts paid exactly once", n, accounts)
	}
	if n := c.QueryInt(`SELECT count(*) FROM demo_provider_effects`); n != accounts {
		t.Errorf("the provider holds %d effects, want one per account (%d)", n, accounts)
	}
	k.Verify(VerifyOptions{NoResume: true})
}

// settleInDoubt reconciles the targets of the job left AMBIGUOUS_EFFECT by a holder that died
// mid-call, and pays those the provider never saw with a REPLAY of scope TRANSIENT (requested,
// then approved by a second token: the job is HIGH risk).
func settleInDoubt(t *testing.T, c *Cluster, runID int64) {
	t.Helper()
	amb := c.QueryInt(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND state = 'AMBIGUOUS_EFFECT'`, shardedSettlement)
	if amb > 0 {
		var out struct {
			ReconcileEntries struct {
				UserErrors []UserError `json:"userErrors"`
			} `json:"reconcileEntries"`
		}
		if err := c.API(1).Do(ctxT(t), `mutation($job: String!) { reconcileEntries(input: {jobName: $job}) { userErrors { code message } } }`,
			map[string]any{"job": shardedSettlement}, &out); err != nil || len(out.ReconcileEntries.UserErrors) > 0 {
			t.Fatalf("reconcileEntries: %v %+v", err, out.ReconcileEntries.UserErrors)
		}
		deadline := time.Now().Add(60 * time.Second)
		for c.QueryInt(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND state = 'AMBIGUOUS_EFFECT'`, shardedSettlement) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("targets of %s still AMBIGUOUS_EFFECT 60s after their reconcile", shardedSettlement)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	notApplied := c.QueryInt(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND state = 'NOT_APPLIED'`, shardedSettlement)
	c.Logf("%d target(s) in doubt after the kill reconciled; %d never reached the provider", amb, notApplied)
	if notApplied == 0 {
		return
	}
	var req struct {
		RequestReplay struct {
			ReplayRequest *struct {
				ID string `json:"id"`
			} `json:"replayRequest"`
			UserErrors []UserError `json:"userErrors"`
		} `json:"requestReplay"`
	}
	if err := c.API(1).Do(ctxT(t), `mutation($run: ID!) { requestReplay(input: {runId: $run, scope: TRANSIENT, reason: "pay the targets never applied",
			compensationRef: "none: nothing was paid"}) { replayRequest { id } userErrors { code message } } }`,
		map[string]any{"run": RunGlobalID(runID)}, &req); err != nil || req.RequestReplay.ReplayRequest == nil {
		t.Fatalf("requestReplay: %v %+v", err, req.RequestReplay.UserErrors)
	}
	var ok struct {
		ApproveReplay struct {
			Run        *RunState   `json:"run"`
			UserErrors []UserError `json:"userErrors"`
		} `json:"approveReplay"`
	}
	approver := c.Node(1).Client(c.MintTokens("approver", 1)[0])
	if err := approver.Do(ctxT(t), `mutation($id: ID!) { approveReplay(input: {requestId: $id}) { run { id status } userErrors { code message } } }`,
		map[string]any{"id": req.RequestReplay.ReplayRequest.ID}, &ok); err != nil || ok.ApproveReplay.Run == nil {
		t.Fatalf("approveReplay: %v %+v", err, ok.ApproveReplay.UserErrors)
	}
	replay := c.WaitRun(ok.ApproveReplay.Run.DBID(), 2*time.Minute, "ends", func(r *RunRow) bool { return !r.Active() })
	if replay.Status != "SUCCEEDED" {
		t.Fatalf("the replay of the targets never applied: %s: %s", describe(replay), replay.Message)
	}
}

// TestClusterShardsPausedHolder: SIGSTOP the busiest holder of demo-settlement-sharded's shards
// past its lease → its shards are resumed elsewhere and the run ends SUCCEEDED while it is
// frozen; SIGCONT → each of its woken workers has its finish (or its activation) refused and writes nothing: no
// ledger row, no shard row and no provider effect changes.
func TestClusterShardsPausedHolder(t *testing.T) {
	c, _ := settlementCluster(t, 240)
	k := c.StartChecker()
	id := start(t, c.Node(1), shardedSettlement, "RESTART")
	shards := waitSpread(t, c, id, 12)
	victim, held := busiestHolder(c, shards)
	victim.Pause()
	run := c.WaitRun(id, 2*time.Minute, "ends while its holder is frozen", func(r *RunRow) bool { return !r.Active() })
	if run.Status != "SUCCEEDED" {
		t.Fatalf("run %d with a frozen holder: %s: %s", id, describe(run), run.Message)
	}
	ledger := ledgerSnapshot(t, c)
	effects := c.QueryInt(`SELECT count(*) FROM demo_provider_effects`)
	after := map[int64]ShardRow{}
	for _, s := range Shards(c, id) {
		after[s.ID] = *s
	}
	for _, s := range held {
		if now := after[s.ID]; now.Instance == victim.Name || now.Status != "SUCCEEDED" {
			t.Errorf("shard %s of the frozen holder: %s on %s, want SUCCEEDED on another instance", s.Key, now.Status, now.Instance)
		}
	}
	victim.Continue()
	for _, s := range held {
		waitShardStopped(t, victim, s.ID)
	}
	victim.WaitReady(30 * time.Second)
	if now := ledgerSnapshot(t, c); now != ledger {
		t.Errorf("invariant violated: the woken holder changed the ledger:\nbefore %s\nafter  %s", ledger, now)
	}
	if n := c.QueryInt(`SELECT count(*) FROM demo_provider_effects`); n != effects {
		t.Errorf("invariant violated: %d provider effects after the holder woke, %d before", n, effects)
	}
	for _, s := range Shards(c, id) {
		if prev := after[s.ID]; prev.Status != s.Status || prev.Instance != s.Instance || prev.Checkpoint != s.Checkpoint ||
			prev.Processed != s.Processed || prev.Token != s.Token {
			t.Errorf("invariant violated: shard %s changed after the holder woke: %+v became %+v", s.Key, prev, *s)
		}
	}
	c.Logf("%d woken workers of %s stopped themselves and wrote nothing", len(held), victim.Name)
	k.Verify(VerifyOptions{NoResume: true})
}

// ledgerSnapshot sums up the job's ledger: every row's state, attempt, run and last write.
func ledgerSnapshot(t *testing.T, c *Cluster) string {
	t.Helper()
	ctx, cancel := dbCtx()
	defer cancel()
	var s string
	if err := c.DB.QueryRow(ctx, `SELECT count(*) || ' rows, ' || COALESCE(md5(string_agg(format('%s/%s/%s/%s/%s', target_key, state, attempt, run_id, updated_at),
			',' ORDER BY id)), '-') FROM job_ledger WHERE job_name = $1`, shardedSettlement).Scan(&s); err != nil {
		t.Fatalf("read the ledger: %v", err)
	}
	return s
}

// waitShardStopped waits up to 20s for holder's log to show that its woken worker of shard run
// shardID stopped itself: the fence refused its finish, or, for a shard frozen before its
// worker activated it, its activation.
func waitShardStopped(t *testing.T, holder *Node, shardID int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	shard := fmt.Sprintf(`"shard_run_id":%d,`, shardID)
	for !holder.LogContains(`"msg":"finish refused"`, shard) && !holder.LogContains(`"msg":"activate run"`, shard) {
		if time.Now().After(deadline) {
			t.Errorf("%s: the woken worker of shard run %d did not stop itself (no \"finish refused\" or \"activate run\" in its log within 20s)",
				holder.Name, shardID)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterShardsStopAndStart: 8 concurrent starts of demo-crawl from the three instances
// make one run (the others ALREADY_RUNNING); a cancel stops every shard at its next boundary
// (the run CANCELLED); a RESUME, paused (the run PAUSED, every shard stopped), then resumed,
// continues every unfinished shard from its checkpoint and ends SUCCEEDED.
func TestClusterShardsStopAndStart(t *testing.T) {
	c := New(t, Config{PoolSize: 2, Env: map[string]string{"BATON_DEMO_CRAWL_PAGES": "960", "BATON_DEMO_CRAWL_LATENCY": "40ms"}})
	k := c.StartChecker()
	id := concurrentStarts(t, c, crawl, 8)

	// Cancel: every shard stops, held ones at their next page, pending ones at once.
	waitShardsProcessed(t, c, id, 20)
	if ues, err := c.API(2).CancelRun(ctxT(t), id); err != nil || len(ues) > 0 {
		t.Fatalf("cancelRun %d: %v %+v", id, err, ues)
	}
	run := c.WaitRun(id, 30*time.Second, "cancelled", func(r *RunRow) bool { return !r.Active() })
	cancelled := Shards(c, id)
	if run.Status != "CANCELLED" {
		t.Fatalf("run %d after cancelRun: %s", id, describe(run))
	}
	for _, s := range cancelled {
		if s.Status != "CANCELLED" && s.Status != "SUCCEEDED" {
			t.Errorf("shard %s of the cancelled run ended %s/%s", s.Key, s.Status, s.StopReason)
		}
	}

	// Pause a RESUME mid-run, then resume it: each shard goes on from its own checkpoint.
	resumed := start(t, c.Node(3), crawl, "RESUME")
	waitShardsProcessed(t, c, resumed, 20)
	pauseJob(t, c.Node(2), crawl)
	run = c.WaitRun(resumed, 30*time.Second, "paused", func(r *RunRow) bool { return !r.Active() })
	paused := Shards(c, resumed)
	if run.Status != "PAUSED" {
		t.Fatalf("run %d after pauseJob: %s", resumed, describe(run))
	}
	for i, s := range paused {
		if s.Held() || s.Status == "PENDING" || s.StartCheckpoint != cancelled[i].Checkpoint {
			t.Errorf("shard %s of the paused run: %s from %q; want ended, from the cancelled shard's %q", s.Key, s.Status,
				s.StartCheckpoint, cancelled[i].Checkpoint)
		}
	}
	last := resumeJob(t, c.Node(1), crawl)
	run = c.WaitRun(last, 2*time.Minute, "ends", func(r *RunRow) bool { return !r.Active() })
	if run.Status != "SUCCEEDED" {
		t.Fatalf("run %d after resumeJob: %s: %s", last, describe(run), run.Message)
	}
	for i, s := range Shards(c, last) {
		if s.Status != "SUCCEEDED" || s.StartCheckpoint != paused[i].Checkpoint {
			t.Errorf("shard %s of the last run: %s from %q, want SUCCEEDED from the paused shard's %q", s.Key, s.Status,
				s.StartCheckpoint, paused[i].Checkpoint)
		}
	}
	if n := c.QueryInt(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND state = 'CONFIRMED'`, crawl); n != 960 {
		t.Errorf("%d pages confirmed, want 960", n)
	}
	if n := c.QueryInt(`SELECT sum(processed) FROM job_runs WHERE job_name = $1 AND parent_run_id IS NULL`, crawl); n != 960 {
		t.Errorf("the three runs processed %d pages in all, want each of the 960 once", n)
	}
	k.Verify(VerifyOptions{NoResume: true})
}

// waitShardsProcessed waits until the shards of run id have processed n items in all while the
// run is active (the run's own counters are its shards' sums only once it ends).
func waitShardsProcessed(t *testing.T, c *Cluster, id, n int64) {
	t.Helper()
	WaitShards(c, id, 60*time.Second, fmt.Sprintf("processed >= %d", n), func(ss []*ShardRow) bool {
		var done int64
		for _, s := range ss {
			done += s.Processed
		}
		return done >= n
	})
	if r := c.RunRow(id); !r.Active() {
		t.Fatalf("run %d ended (%s) before its shards processed %d items: make the run longer", id, describe(r), n)
	}
}

// concurrentStarts makes calls startJob RESTART calls of job at once, spread over the
// instances, and fails unless exactly one started a run and the others were refused
// ALREADY_RUNNING. It returns the run.
func concurrentStarts(t *testing.T, c *Cluster, job string, calls int) int64 {
	t.Helper()
	tokens := c.MintTokens("burst", 3)
	var mu sync.Mutex
	var started []int64
	codes := map[string]int{}
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range calls {
		cl := c.Nodes[i%len(c.Nodes)].Client(tokens[i%len(tokens)])
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			<-gate
			res, err := cl.StartJob(ctx, job, "RESTART")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("startJob %s: %v", job, err)
			case res.Run != nil:
				started = append(started, res.Run.DBID())
			default:
				codes[res.Code()]++
			}
		}()
	}
	close(gate)
	wg.Wait()
	c.Logf("%d concurrent startJob %s: started %v, refused %v", calls, job, started, codes)
	// A start on an instance whose slots the run's shards already fill is refused as
	// CAPACITY_EXCEEDED before it reaches the lock: a refusal all the same.
	if len(started) != 1 || codes["ALREADY_RUNNING"]+codes["CAPACITY_EXCEEDED"] != calls-1 {
		t.Fatalf("invariant violated: %d concurrent starts of %s started %v and were refused %v; want one run, %d ALREADY_RUNNING or CAPACITY_EXCEEDED",
			calls, job, started, codes, calls-1)
	}
	if n := c.QueryInt(`SELECT count(*) FROM job_runs WHERE job_name = $1 AND parent_run_id IS NULL`, job); n != 1 {
		t.Fatalf("invariant violated: %d runs of %s in the database, want 1", n, job)
	}
	return started[0]
}

// pauseJob pauses job through n's API.
func pauseJob(t *testing.T, n *Node, job string) {
	t.Helper()
	var out struct {
		PauseJob struct {
			UserErrors []UserError `json:"userErrors"`
		} `json:"pauseJob"`
	}
	if err := n.API().Do(ctxT(t), `mutation($name: String!) { pauseJob(input: {name: $name}) { userErrors { code message } } }`,
		map[string]any{"name": job}, &out); err != nil || len(out.PauseJob.UserErrors) > 0 {
		t.Fatalf("pauseJob %s on %s: %v %+v", job, n.Name, err, out.PauseJob.UserErrors)
	}
	n.c.Logf("%s: paused %s", n.Name, job)
}

// resumeJob resumes job through n's API and returns the RESUME run that continues its paused
// run.
func resumeJob(t *testing.T, n *Node, job string) int64 {
	t.Helper()
	var out struct {
		ResumeJob struct {
			Run        *RunState   `json:"run"`
			UserErrors []UserError `json:"userErrors"`
		} `json:"resumeJob"`
	}
	if err := n.API().Do(ctxT(t), `mutation($name: String!) { resumeJob(input: {name: $name}) { run { id status } userErrors { code message } } }`,
		map[string]any{"name": job}, &out); err != nil || out.ResumeJob.Run == nil {
		t.Fatalf("resumeJob %s on %s: %v %+v", job, n.Name, err, out.ResumeJob.UserErrors)
	}
	id := out.ResumeJob.Run.DBID()
	n.c.Logf("%s: resumed %s as run %d", n.Name, job, id)
	return id
}
