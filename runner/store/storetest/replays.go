package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// testRequestClaimedOnce checks the claim on an APPROVED request: one claimer at a time, a
// lapsed claim taken over, and only the claim's holder inserting the request's run, which
// marks it EXECUTED in the same write; the insert under a lost claim writes nothing.
func testRequestClaimedOnce(t *testing.T, open Open) {
	db := open(t)
	s, ctx := db.Store, context.Background()
	_, _ = RunningRun(t, s, 30) // job "j" with a run to replay
	src, err := s.LastRun(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED', finished_at = now() WHERE id = $1`, src.ID); err != nil {
		t.Fatal(err)
	}
	req, err := s.InsertReplay(ctx, &bt.ReplayRequest{JobName: "j", SourceRunID: src.ID, Generation: src.Generation, Scope: bt.ScopeFailed,
		Status: bt.ReplayApproved, Reason: "r", RequestedBy: "alice"}, store.AuditRecord{Actor: "alice", Action: "requestReplay", Outcome: "APPROVED"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimReplay(ctx, req.ID, "first", 2*time.Minute)
	if err != nil || claimed.ClaimedUntil == nil || claimed.Status != bt.ReplayApproved {
		t.Fatalf("first claim: %v %+v, want the request APPROVED and claimed", err, claimed)
	}
	if _, err := s.ClaimReplay(ctx, req.ID, "second", 2*time.Minute); bt.CodeOf(err) != bt.CodeConflict {
		t.Fatalf("a second claim while the first holds: %v, want CONFLICT", err)
	}
	// The first claimer goes away; its claim lapses and the second takes it over.
	if _, err := db.Pool.Exec(ctx, `UPDATE replay_requests SET claim_until = now() - interval '1 second' WHERE id = $1`, req.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimReplay(ctx, req.ID, "second", 2*time.Minute); err != nil {
		t.Fatalf("claim after the first lapsed: %v", err)
	}
	id := req.ID
	newRun := func(token string) store.NewRun {
		return store.NewRun{JobName: "j", Trigger: bt.TriggerReplay, Mode: bt.ModeResume, Actor: "alice", Instance: "t", Token: "run-" + token,
			LeaseSeconds: 30, Generation: src.Generation, FromStart: true, ReplayRequestID: &id, RequestClaim: token}
	}
	if _, err := s.InsertRun(ctx, newRun("first")); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("insert under the lapsed claim: %v, want ErrClaimLost", err)
	}
	var runs int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE replay_request_id = $1`, id).Scan(&runs); err != nil || runs != 0 {
		t.Fatalf("%d runs of the request after an insert under a lost claim (%v), want none", runs, err)
	}
	run, err := s.InsertRun(ctx, newRun("second"))
	if err != nil {
		t.Fatalf("insert under the claim: %v", err)
	}
	got, err := s.ReplayRequest(ctx, id)
	if err != nil || got.Status != bt.ReplayExecuted || got.ReplayRunID == nil || *got.ReplayRunID != run.ID || got.ExecutedAt == nil || got.ClaimedUntil != nil {
		t.Fatalf("request after its run's insert: %v %+v, want EXECUTED by run %d, the claim gone", err, got, run.ID)
	}
	if _, err := s.ClaimReplay(ctx, id, "third", 2*time.Minute); bt.CodeOf(err) != bt.CodeConflict {
		t.Fatalf("claim of an EXECUTED request: %v, want CONFLICT", err)
	}
	if err := s.ReleaseReplayClaim(ctx, id, "second"); err != nil {
		t.Fatalf("releasing a claim already spent: %v", err)
	}
}
