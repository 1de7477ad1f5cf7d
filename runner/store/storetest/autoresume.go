package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// testAutoResumeClaimedOnce ends a run by its lease (RecoverExpired) under a policy with no
// backoff and checks the store's part of auto-resume: the end makes the run due in the same
// write; DueAutoResumes returns it; the first AUTO_RESUME insert claims it (attempt 1, resumed
// from it, the ended run RESUMED by the new one) and a second is ErrResumeTaken and writes
// nothing; a run that fails on its own is never due; the last attempt is EXHAUSTED.
func testAutoResumeClaimedOnce(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	f, _ := RunningRun(t, s.Store, 60)
	if _, err := s.SetAutoResume(ctx, "j", store.AutoResumePatch{MaxAttempts: ptrTo(1), Backoff: ptrTo(time.Duration(0)), Actor: "t"}); err != nil {
		t.Fatal(err)
	}
	exec(t, s, `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, f.RunID)
	if _, err := s.RecoverExpired(ctx, nil); err != nil {
		t.Fatal(err)
	}
	due, _, err := s.DueAutoResumes(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].RunID != f.RunID || due[0].JobName != "j" || due[0].Attempt != 0 {
		t.Fatalf("due auto-resumes %+v, want run %d of j at attempt 0", due, f.RunID)
	}
	resume := store.NewRun{JobName: "j", Trigger: bt.TriggerAutoResume, Mode: bt.ModeResume, Actor: "auto-resume",
		Instance: "t", Token: "tok2", LeaseSeconds: 60, AutoResumeOf: f.RunID}
	run, err := s.InsertRun(ctx, resume)
	if err != nil {
		t.Fatal(err)
	}
	if run.Attempt != 1 || run.ResumedFrom == nil || *run.ResumedFrom != f.RunID || run.Trigger != bt.TriggerAutoResume {
		t.Fatalf("auto-resume run %+v, want attempt 1 resumed from %d", run, f.RunID)
	}
	ended, err := s.Run(ctx, f.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if ended.AutoResumeOutcome != bt.AutoResumeResumed || ended.AutoResumeRunID == nil || *ended.AutoResumeRunID != run.ID {
		t.Fatalf("ended run %+v, want RESUMED by run %d", ended, run.ID)
	}
	// The second claim, once the first run has ended too, is refused and writes nothing.
	second := store.Fence{RunID: run.ID, Token: "tok2"}
	if _, _, err := s.Activate(ctx, second); err != nil {
		t.Fatal(err)
	}
	resume.Token = "tok3"
	if _, err := s.InsertRun(ctx, resume); !errors.Is(err, store.ErrResumeTaken) {
		t.Fatalf("claiming the resumed run again while its resume runs: %v, want ErrResumeTaken", err)
	}
	exec(t, s, `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, run.ID)
	if _, err := s.RecoverExpired(ctx, nil); err != nil {
		t.Fatal(err)
	}
	last, err := s.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last.AutoResumeOutcome != bt.AutoResumeExhausted || last.AutoResumeAt != nil {
		t.Fatalf("last attempt %+v, want EXHAUSTED and not due", last)
	}
	if _, err := s.InsertRun(ctx, resume); !errors.Is(err, store.ErrResumeTaken) {
		t.Fatalf("claiming an ended run that was resumed already: %v, want ErrResumeTaken", err)
	}
	var runs int
	if err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE job_name = 'j'`).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("%d runs of j, want 2: a refused claim wrote a run", runs)
	}

	// A run that fails on its own is not the cluster's to resume.
	s2 := open(t)
	f2, _ := RunningRun(t, s2.Store, 60)
	if _, err := s2.Finish(ctx, f2, bt.StatusFailed, bt.StopError, "boom"); err != nil {
		t.Fatal(err)
	}
	if r, err := s2.Run(ctx, f2.RunID); err != nil || r.AutoResumeAt != nil || r.AutoResumeOutcome != "" {
		t.Fatalf("a run that failed by ERROR: %+v (%v), want neither due nor decided", r, err)
	}
}

func ptrTo[T any](v T) *T { return &v }
