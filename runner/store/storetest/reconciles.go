package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// ambiguousEntry inserts an AMBIGUOUS_EFFECT ledger row of job j and returns its id.
func ambiguousEntry(t *testing.T, pool *pgxpool.Pool, target string) int64 {
	t.Helper()
	var id int64
	err := pool.QueryRow(context.Background(), `INSERT INTO job_ledger (job_name, generation, target_key, state, idempotency_key, external, run_id)
		VALUES ('j', 1, $1, 'AMBIGUOUS_EFFECT', 'key-' || $1, true, 1) RETURNING id`, target).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

var jLease = []store.ReconcileLease{{Job: "j", Lease: time.Minute}}

// testReconcileStaleLeaseCannotResolve: a holder whose lease ended (by the database clock at
// the moment of its write) changes neither the request nor the entry, and a second request of
// an entry with one open is refused.
func testReconcileStaleLeaseCannotResolve(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	pool := s.Pool
	entry := ambiguousEntry(t, pool, "x1")
	req, err := s.InsertReconcile(ctx, entry, "ops", store.AuditRecord{Actor: "ops", Action: "reconcile", Outcome: "PENDING"})
	if err != nil || req.Status != bt.ReconcilePending {
		t.Fatalf("insert: %v %+v", err, req)
	}
	if _, err := s.InsertReconcile(ctx, entry, "eve", store.AuditRecord{Actor: "eve", Action: "reconcile"}); bt.CodeOf(err) != bt.CodeAlreadyRunning {
		t.Fatalf("a second request while one is open: %v, want ALREADY_RUNNING", err)
	}
	claimed, remaining, err := s.ClaimReconcile(ctx, jLease, "a", "tok-a")
	if err != nil || claimed == nil || claimed.ID != req.ID || claimed.Status != bt.ReconcileRunning || remaining <= 0 {
		t.Fatalf("claim: %v %+v %s", err, claimed, remaining)
	}
	// The lease ends while the hook is still out (a paused worker).
	if _, err := pool.Exec(ctx, `UPDATE reconcile_requests SET lease_until = statement_timestamp() - interval '1 millisecond' WHERE id = $1`, req.ID); err != nil {
		t.Fatal(err)
	}
	resolve := store.ReconcileOutcome{Resolve: bt.LedgerConfirmed, Note: "reconciled", Message: "reconciled"}
	fence := store.ReconcileFence{ID: req.ID, Token: "tok-a"}
	if _, err := s.FinishReconcile(ctx, fence, resolve, store.AuditRecord{Actor: "ops", Action: "reconcile"}); bt.CodeOf(err) != bt.CodeLeaseLost {
		t.Fatalf("finish after the lease ended: %v, want LEASE_LOST", err)
	}
	if e, _ := s.LedgerEntry(ctx, entry); e.State != bt.LedgerAmbiguous {
		t.Fatalf("a stale holder resolved the entry: %s", e.State)
	}
	// The recoverer puts it back; another holder claims it; the first one's token is void.
	back, err := s.RecoverReconciles(ctx, 3)
	if err != nil || len(back) != 1 || back[0].Status != bt.ReconcilePending {
		t.Fatalf("recover: %v %+v", err, back)
	}
	if again, _, err := s.ClaimReconcile(ctx, jLease, "b", "tok-b"); err != nil || again == nil || again.Attempt != 2 {
		t.Fatalf("claim again: %v %+v", err, again)
	}
	if _, err := s.FinishReconcile(ctx, fence, resolve, store.AuditRecord{Actor: "ops", Action: "reconcile"}); bt.CodeOf(err) != bt.CodeLeaseLost {
		t.Fatalf("finish with the old token: %v, want LEASE_LOST", err)
	}
	done, err := s.FinishReconcile(ctx, store.ReconcileFence{ID: req.ID, Token: "tok-b"},
		store.ReconcileOutcome{Resolve: bt.LedgerNotApplied, Note: "no effect", Message: "no effect"}, store.AuditRecord{Actor: "ops", Action: "reconcile"})
	if err != nil || done.Status != bt.ReconcileDone || done.ResultState == nil || *done.ResultState != bt.LedgerNotApplied {
		t.Fatalf("finish by the holder: %v %+v", err, done)
	}
	if e, _ := s.LedgerEntry(ctx, entry); e.State != bt.LedgerNotApplied {
		t.Fatalf("entry is %s, want NOT_APPLIED", e.State)
	}
}

// testReconcileResolvedMeanwhile: an entry resolved by hand while its reconcile was out ends
// the request FAILED and keeps the hand resolution.
func testReconcileResolvedMeanwhile(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	pool := s.Pool
	entry := ambiguousEntry(t, pool, "x1")
	req, err := s.InsertReconcile(ctx, entry, "ops", store.AuditRecord{Actor: "ops", Action: "reconcile", Outcome: "PENDING"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ClaimReconcile(ctx, jLease, "a", "tok"); err != nil {
		t.Fatal(err)
	}
	ev := "stmt-1"
	if _, err := s.ResolveAmbiguous(ctx, entry, bt.LedgerConfirmed, nil, &ev, "by hand", store.AuditRecord{Actor: "erin", Action: "resolveAmbiguous"}); err != nil {
		t.Fatal(err)
	}
	done, err := s.FinishReconcile(ctx, store.ReconcileFence{ID: req.ID, Token: "tok"},
		store.ReconcileOutcome{Resolve: bt.LedgerNotApplied, Note: "no effect"}, store.AuditRecord{Actor: "ops", Action: "reconcile"})
	if err != nil || done.Status != bt.ReconcileFailed || !testenv.Contains(done.Message, "resolved meanwhile") {
		t.Fatalf("finish after a hand resolution: %v %+v, want FAILED saying so", err, done)
	}
	if e, _ := s.LedgerEntry(ctx, entry); e.State != bt.LedgerConfirmed {
		t.Fatalf("entry is %s, want the hand resolution CONFIRMED", e.State)
	}
}

// testReconcileClaimedOnce: many claimers at once, one pending request: one claims it.
func testReconcileClaimedOnce(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	pool := s.Pool
	if _, err := s.InsertReconcile(ctx, ambiguousEntry(t, pool, "x1"), "ops", store.AuditRecord{Actor: "ops", Action: "reconcile"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	claims := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, _, err := s.ClaimReconcile(ctx, jLease, "i", "tok-"+string(rune('a'+i)))
			if err != nil {
				t.Error(err)
			}
			if q != nil {
				mu.Lock()
				claims++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if claims != 1 {
		t.Fatalf("%d claims of one request, want 1", claims)
	}
}
