// Package storetest is the conformance suite of runner/store: what every implementation of
// store.Store must do, checked against a real database. An implementation runs it from a
// test of its own:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.DB {
//			pool := ... // a fresh, migrated, empty database (or schema) of the test's own
//			return storetest.DB{Store: mystore.New(pool), Pool: pool}
//		})
//	}
//
// The suite checks the store's promises: fencing (a write under a wrong token, an expired
// lease or for an ended run lands nothing and is refused with LEASE_LOST), the ledger's state
// machine (every cell of store.Transition: a refused move lands nothing and returns its coded
// error), the counters (the job's and the run's move with the rows, in the same write), the
// runs list's filters and keyset pages, the run events each change records, and the alarm
// notifications' channels, routes and outbox (claimed once, within each channel's bucket, a
// RESOLVE after its TRIGGER).
// It seeds rows and reads them back with SQL of its own, on Baton's schema (migrations/).
package storetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// DB is a store under test and a pool on its database, on which the suite seeds rows and reads
// them back.
type DB struct {
	store.Store
	Pool *pgxpool.Pool
}

// Open returns a store on a fresh, migrated database of t's own, where nothing else runs.
// Tests run in parallel, each with its own.
type Open func(t *testing.T) DB

// Run runs the suite against the stores open returns, each test on a store of its own.
func Run(t *testing.T, open Open) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Open)
	}{
		{"WriteItemsCounts", testWriteItemsCounts},
		{"WriteItemsKnowledge", testWriteItemsKnowledge},
		{"WriteItemsFenced", testWriteItemsFenced},
		{"StagedWrite", testStagedWrite},
		{"StagedCommitJudgesTheLeaseAtCommit", testStagedCommitJudgesTheLeaseAtCommit},
		{"LedgerTransitionTable", testLedgerTransitionTable},
		{"WriteKindMustFitState", testWriteKindMustFitState},
		{"EndedRunIsFenced", testEndedRunIsFenced},
		{"AddCallStatsFencedAndByDatabaseClock", testAddCallStatsFencedAndByDatabaseClock},
		{"RetentionDeletesAreFenced", testRetentionDeletesAreFenced},
		{"ReconcileStaleLeaseCannotResolve", testReconcileStaleLeaseCannotResolve},
		{"ReconcileResolvedMeanwhile", testReconcileResolvedMeanwhile},
		{"ReconcileClaimedOnce", testReconcileClaimedOnce},
		{"ScheduleState", testScheduleState},
		{"OneRunPerScheduledFire", testOneRunPerScheduledFire},
		{"AutoResumeClaimedOnce", testAutoResumeClaimedOnce},
		{"ShardsLifecycle", testShardsLifecycle},
		{"TraceParentTravels", testTraceParentTravels},
		{"AlertEpisodesOpenOnce", testAlertEpisodesOpenOnce},
		{"NotificationChannelsAndRoutes", testNotificationChannelsAndRoutes},
		{"DeliveriesClaimedOnceWithinTheBucket", testDeliveriesClaimedOnceWithinTheBucket},
		{"ResolveWaitsForItsTrigger", testResolveWaitsForItsTrigger},
		{"AuditStoredSanitized", testAuditStoredSanitized},
		{"RunsFilters", testRunsFilters},
		{"RunsOfJobsFilters", testRunsOfJobsFilters},
		{"RunEventsRecorded", testRunEventsRecorded},
		{"RequestClaimedOnce", testRequestClaimedOnce},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open) })
	}
}

// RunningRun registers job "j" in s and starts a RUNNING run of it under lease token "tok",
// leaseSeconds long, and returns the run's fence and generation.
func RunningRun(t testing.TB, s store.Store, leaseSeconds int) (store.Fence, int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.EnsureJobs(ctx, []store.JobDefaults{{Name: "j", Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90}}); err != nil {
		t.Fatal(err)
	}
	run, err := s.InsertRun(ctx, store.NewRun{JobName: "j", Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: "t", Instance: "t", Token: "tok", LeaseSeconds: leaseSeconds})
	if err != nil {
		t.Fatal(err)
	}
	f := store.Fence{RunID: run.ID, Token: "tok"}
	if _, _, err := s.Activate(ctx, f); err != nil {
		t.Fatal(err)
	}
	return f, run.Generation
}

// LedgerRows counts the ledger rows of job "j"'s generation gen by state, read through pool.
func LedgerRows(t testing.TB, pool *pgxpool.Pool, gen int64) map[bt.LedgerState]int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT state, count(*) FROM job_ledger WHERE job_name = 'j' AND generation = $1 GROUP BY state`, gen)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	actual := map[bt.LedgerState]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			t.Fatal(err)
		}
		actual[bt.LedgerState(st)] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return actual
}
