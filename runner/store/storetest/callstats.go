package storetest

import (
	"context"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Call statistics land in the database's minute less their age, and only while the writing
// run holds its lease: a stale fence writes nothing.
func testAddCallStatsFencedAndByDatabaseClock(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	pool := s.Pool
	f, _ := RunningRun(t, s.Store, 60)
	sums := func(window time.Duration) [3]int64 {
		t.Helper()
		c, d, r, err := s.CallStats(ctx, "j", window)
		if err != nil {
			t.Fatal(err)
		}
		return [3]int64{c, d, r}
	}

	if run, err := s.AddCallStats(ctx, f, []store.CallCounts{
		{Age: time.Second, Calls: 4, Downstream: 1, Rejects: 1},
		{Age: 0, Calls: 6, Downstream: 2},
		{Age: 10 * time.Minute, Calls: 100, Downstream: 100},
	}, time.Minute); err != nil || run != nil {
		t.Fatalf("a run that is no shard: %v, %v; want no run seconds and no error", run, err)
	}
	if got := sums(5 * time.Minute); got != [3]int64{10, 3, 1} {
		t.Fatalf("last 5 minutes: %v, want [10 3 1] (the 10-minute-old count is outside)", got)
	}
	if got := sums(15 * time.Minute); got != [3]int64{110, 103, 1} {
		t.Fatalf("last 15 minutes: %v, want [110 103 1]", got)
	}

	// A fence with another token, and the run's own after its lease ran out: nothing lands.
	stale := []store.CallCounts{{Calls: 1000, Downstream: 1000}}
	if _, err := s.AddCallStats(ctx, store.Fence{RunID: f.RunID, Token: "other"}, stale, 0); bt.CodeOf(err) != bt.CodeLeaseLost {
		t.Fatalf("write with another token: %v, want LEASE_LOST", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, f.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddCallStats(ctx, f, stale, 0); bt.CodeOf(err) != bt.CodeLeaseLost {
		t.Fatalf("write after the lease ran out: %v, want LEASE_LOST", err)
	}
	if got := sums(15 * time.Minute); got != [3]int64{110, 103, 1} {
		t.Fatalf("after stale writes: %v, want [110 103 1] unchanged", got)
	}
}
