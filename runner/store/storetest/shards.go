package storetest

import (
	"context"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// testShardsLifecycle walks the store's part of a sharded run: the plan makes PENDING shards
// and a run without a lease of its own; a claim takes one shard under its own token (two
// claims never take one shard, and a claim respects the job's cap); a shard's writes are fenced
// on its token; a shard whose lease ran out goes back to PENDING in place, due after the
// policy's backoff, and never counts as a run for auto-resume; the run ends, its counters its
// shards' sums, when its last shard ends, and that shard's end says so.
func testShardsLifecycle(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	f, gen := RunningRun(t, s.Store, 60)
	if _, err := s.SetAutoResume(ctx, "j", store.AutoResumePatch{MaxAttempts: ptrTo(3), Backoff: ptrTo(time.Hour), Actor: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetMaxConcurrentShards(ctx, "j", 1, "t"); err != nil {
		t.Fatal(err)
	}
	plan := []store.PlannedShard{{Key: "a", Index: 0, Spec: "first half"}, {Key: "b", Index: 1, Spec: "second half"}}
	if _, _, err := s.PlanShards(ctx, store.Fence{RunID: f.RunID, Token: "stale"}, plan); bt.CodeOf(err) != bt.CodeLeaseLost {
		t.Fatalf("a plan under another token: %v, want LEASE_LOST", err)
	}
	if _, _, err := s.PlanShards(ctx, f, plan); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ShardPlan(ctx, "j", gen); err != nil || len(got) != 2 || got[1].Spec != "second half" {
		t.Fatalf("the generation's plan %+v, %v", got, err)
	}
	claim := func(token string) *bt.RunRecord { return claimShard(t, s.Store, token) }
	a := claim("ta")
	if a == nil || a.Shard == nil || a.Shard.Key != "a" || a.Shard.RunID != f.RunID || a.Status != bt.StatusStarting || a.Shard.Count != 2 {
		t.Fatalf("first claim %+v", a)
	}
	if b := claim("tb"); b != nil {
		t.Fatalf("a second shard claimed under a cap of 1: %+v", b.Shard)
	}
	fa := store.Fence{RunID: a.ID, Token: "ta"}
	if _, _, err := s.Activate(ctx, fa); err != nil {
		t.Fatal(err)
	}
	cp := "5"
	write := &store.ItemsWrite{JobName: "j", Generation: gen, Delta: store.RunDelta{Processed: 1, Succeeded: 1}, Checkpoint: &cp,
		Ledger: []store.LedgerWrite{{Target: "x", State: bt.LedgerConfirmed, IdempotencyKey: "k-x", CountInRun: true, Fresh: true}}}
	if _, _, err := s.WriteItems(ctx, store.Fence{RunID: a.ID, Token: "tb"}, write, nil); bt.CodeOf(err) != bt.CodeLeaseLost {
		t.Fatalf("a shard's write under another token: %v, want LEASE_LOST", err)
	}
	if _, _, err := s.WriteItems(ctx, fa, write, nil); err != nil {
		t.Fatal(err)
	}
	checkShardRequeued(t, s, f.RunID, a.ID)
	// Both shards are claimed and end, one after the other; the second's end ends the run.
	finish := func(rec *bt.RunRecord, token string) *bt.RunRecord { return finishShard(t, s.Store, rec, token) }
	a2 := claim("ta2")
	if a2 == nil || a2.ID != a.ID || a2.StartCheckpoint != "5" {
		t.Fatalf("the requeued shard claimed again: %+v, want shard a from checkpoint 5", a2)
	}
	if end := finish(a2, "ta2"); end.Shard.RunEnded {
		t.Fatal("the first shard's end ended the run")
	}
	b := claim("tb2")
	if b == nil || b.Shard.Key != "b" {
		t.Fatalf("second claim %+v", b)
	}
	if end := finish(b, "tb2"); !end.Shard.RunEnded {
		t.Fatal("the last shard's end did not say it ended the run")
	}
	run, err := s.Run(ctx, f.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != bt.StatusSucceeded || run.Processed != 1 || run.Succeeded != 1 || run.ShardTotal != 2 {
		t.Fatalf("the run %s with %d processed, %d shards; want SUCCEEDED, 1, 2", run.Status, run.Processed, run.ShardTotal)
	}
	if plan, _ := s.ShardPlan(ctx, "j", gen); !plan[0].Done || !plan[1].Done || plan[0].Checkpoint != "5" {
		t.Fatalf("the plan after the run: %+v, want both shards done, a at checkpoint 5", plan)
	}
}

func claimShard(t *testing.T, s store.Store, token string) *bt.RunRecord {
	t.Helper()
	rec, _, err := s.ClaimShard(context.Background(), store.ShardClaim{Jobs: []string{"j"}, Instance: "i-" + token, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func finishShard(t *testing.T, s store.Store, rec *bt.RunRecord, token string) *bt.RunRecord {
	t.Helper()
	ctx := context.Background()
	fs := store.Fence{RunID: rec.ID, Token: token}
	if _, _, err := s.Activate(ctx, fs); err != nil {
		t.Fatal(err)
	}
	end, err := s.Finish(ctx, fs, bt.StatusSucceeded, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// checkShardRequeued lets shard's holder die: the shard goes back to PENDING in place, its
// checkpoint kept, due after the policy's backoff, and the auto-resume pass leaves it alone.
func checkShardRequeued(t *testing.T, s DB, run, shard int64) {
	t.Helper()
	ctx := context.Background()
	exec(t, s, `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, shard)
	expired, err := s.RecoverExpired(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(expired) != 1 || expired[0].ShardOf != run || !expired[0].Requeued {
		t.Fatalf("recovered %+v, want shard %d of run %d requeued", expired, shard, run)
	}
	again, err := s.Run(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != bt.StatusPending || again.Attempt != 1 || again.AutoResumeAt == nil || again.Checkpoint != "5" {
		t.Fatalf("requeued shard %+v", again)
	}
	if due, _, err := s.DueAutoResumes(ctx, 10); err != nil || len(due) != 0 {
		t.Fatalf("due auto-resumes %+v, %v: a shard waiting for a claim is not a run to resume", due, err)
	}
	exec(t, s, `UPDATE job_runs SET auto_resume_at = now() - interval '1 second' WHERE id = $1`, shard)
	if due, _, err := s.DueAutoResumes(ctx, 10); err != nil || len(due) != 0 {
		t.Fatalf("due auto-resumes %+v, %v: a due shard is claimed, not resumed as a run", due, err)
	}
	if again, _ := s.Run(ctx, shard); again.AutoResumeOutcome != "" {
		t.Fatalf("the due shard's outcome is %q: the auto-resume pass must leave shards alone", again.AutoResumeOutcome)
	}
}

// testTraceParentTravels: the traceparent a run is inserted with comes back with the run, and
// its shards carry it, so whichever instance claims a shard continues the run's trace.
func testTraceParentTravels(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	if err := s.EnsureJobs(ctx, []store.JobDefaults{{Name: "j", Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90}}); err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	run, err := s.InsertRun(ctx, store.NewRun{JobName: "j", Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: "t", Instance: "t",
		Token: "tok", LeaseSeconds: 60, TraceParent: tp})
	if err != nil {
		t.Fatal(err)
	}
	if run.TraceParent != tp {
		t.Fatalf("inserted run's trace parent %q, want %q", run.TraceParent, tp)
	}
	f := store.Fence{RunID: run.ID, Token: "tok"}
	if _, _, err := s.Activate(ctx, f); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PlanShards(ctx, f, []store.PlannedShard{{Key: "a", Index: 0}}); err != nil {
		t.Fatal(err)
	}
	shard, _, err := s.ClaimShard(ctx, store.ShardClaim{Jobs: []string{"j"}, Instance: "other", Token: "ts"})
	if err != nil || shard == nil {
		t.Fatalf("claim: %+v, %v", shard, err)
	}
	if shard.TraceParent != tp {
		t.Fatalf("claimed shard's trace parent %q, want its run's %q", shard.TraceParent, tp)
	}
	if err := s.EnsureJobs(ctx, []store.JobDefaults{{Name: "k", Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90}}); err != nil {
		t.Fatal(err)
	}
	untraced, err := s.InsertRun(ctx, store.NewRun{JobName: "k", Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: "t", Instance: "t",
		Token: "tok2", LeaseSeconds: 60})
	if err != nil || untraced.TraceParent != "" {
		t.Fatalf("a run inserted without a trace parent: %q, %v; want none", untraced.TraceParent, err)
	}
}
