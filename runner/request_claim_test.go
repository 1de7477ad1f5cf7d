package runner_test

import (
	"context"
	"sync"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// approvedWhilePaused records a RESTART request of a clean LOW-risk job while the job is
// paused: it needs no approval, its start fails, and it stays APPROVED. The job is resumed
// before it returns.
func approvedWhilePaused(t *testing.T, b *bundle, r *runner.Runner, job string) *bt.ReplayRequest {
	t.Helper()
	ctx := context.Background()
	if _, err := r.Jobs().Pause(ctx, job, "ops"); err != nil {
		t.Fatal(err)
	}
	req, err := r.Replays().RequestRestart(ctx, runner.RestartParams{Job: job, Reason: "new rates", Actor: "alice"})
	if code(err) != bt.CodeJobPaused || req == nil || req.Status != bt.ReplayApproved {
		t.Fatalf("RESTART request while paused: %v %+v, want JOB_PAUSED and the request APPROVED", err, req)
	}
	if _, _, err := r.Jobs().Resume(ctx, job, "ops"); err != nil {
		t.Fatal(err)
	}
	return req
}

// Many executes of one APPROVED request at once start one run, one new generation, however
// fast that run ends: the request is claimed before anything starts.
func TestConcurrentExecutesStartOneRun(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, _ := b.settledOnce("quick", bt.RiskLow, "ok1")
	for round := 1; round <= 5; round++ {
		gen := b.currentGeneration("quick")
		req := approvedWhilePaused(t, b, r, "quick")
		var wg sync.WaitGroup
		results := make([]*bt.ReplayRequest, 8)
		errs := make([]error, 8)
		for i := range results {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				results[i], errs[i] = r.Replays().Execute(ctx, req.ID, runner.Actor{Name: "carol"})
			}(i)
		}
		wg.Wait()
		executed := 0
		for i, got := range results {
			switch {
			case errs[i] == nil && got != nil && got.Status == bt.ReplayExecuted:
				executed++
			case code(errs[i]) != bt.CodeConflict && code(errs[i]) != bt.CodeAlreadyRunning && code(errs[i]) != bt.CodeReplayBlocked:
				t.Fatalf("round %d: execute %d: %v %+v, want EXECUTED or refused", round, i, errs[i], got)
			}
		}
		var ids []int64
		rows, err := b.Pool.Query(ctx, `SELECT id FROM job_runs WHERE replay_request_id = $1`, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		for _, id := range ids {
			b.finish(r, id)
		}
		if executed != 1 || len(ids) != 1 || b.currentGeneration("quick") != gen+1 {
			t.Fatalf("round %d: %d executes EXECUTED, runs %v, generation %d → %d; want one run and one new generation",
				round, executed, ids, gen, b.currentGeneration("quick"))
		}
	}
	if n := job.callsOf("ok1"); n != 6 {
		t.Fatalf("ok1 called %d times, want 6 (the first run and one per request)", n)
	}
}

// An execute that claimed a request and went away (its instance died) holds it only until
// its claim lapses; then another execute takes it over and starts the one run.
func TestLapsedClaimIsTakenOver(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, _, _ := b.settledOnce("lapse", bt.RiskLow, "ok1")
	req := approvedWhilePaused(t, b, r, "lapse")
	if _, err := b.Pool.Exec(ctx, `UPDATE replay_requests SET claim_token = 'gone', claim_until = now() + interval '2 minutes' WHERE id = $1`, req.ID); err != nil {
		t.Fatal(err)
	}
	got, err := r.Replays().Execute(ctx, req.ID, runner.Actor{Name: "carol"})
	if code(err) != bt.CodeConflict || got != nil {
		t.Fatalf("execute while another claim holds: %v %+v, want CONFLICT", err, got)
	}
	if cur, _ := r.Replays().Get(ctx, req.ID); cur.Status != bt.ReplayApproved || cur.ClaimedUntil == nil {
		t.Fatalf("request after a refused execute: %+v, want APPROVED and still claimed", cur)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE replay_request_id = $1`, req.ID); n != 0 {
		t.Fatalf("%d runs while the request was claimed elsewhere", n)
	}
	// The claim's two minutes pass.
	if _, err := b.Pool.Exec(ctx, `UPDATE replay_requests SET claim_until = now() - interval '1 second' WHERE id = $1`, req.ID); err != nil {
		t.Fatal(err)
	}
	done, err := r.Replays().Execute(ctx, req.ID, runner.Actor{Name: "carol"})
	if err != nil || done.Status != bt.ReplayExecuted || done.ReplayRunID == nil || done.ClaimedUntil != nil {
		t.Fatalf("execute after the claim lapsed: %v %+v, want EXECUTED, the claim gone", err, done)
	}
	if rec := b.finish(r, *done.ReplayRunID); rec.Status != bt.StatusSucceeded || rec.Mode != bt.ModeRestart {
		t.Fatalf("run %+v, want a SUCCEEDED RESTART", rec)
	}
	b.wantAudit("carol", "executeReplay", replayTarget(req.ID), string(bt.ReplayExecuted))
}
