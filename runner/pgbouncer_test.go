//go:build unix

package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// pooledSetup returns a bundle whose database is reached through PgBouncer in transaction
// mode, as baton serve reaches it with --database-direct-url set: a database of its own on
// backend, migrated over the direct URL; the bundle's pool and its runners' pools on the
// pooler in cache_describe mode (no named prepared statements); the scheduler's LISTEN on a
// direct pool (the Config change returned).
func pooledSetup(t *testing.T, backend *testenv.PostgresServer, pooler *testenv.PgBouncer) (*bundle, func(*runner.Config)) {
	t.Helper()
	var direct string
	tb := testbundle.Setup(t, func(tb testing.TB) string {
		name := backend.Database(tb, "pb_")
		direct = backend.URL(name)
		return pooler.URL(name) + "&default_query_exec_mode=cache_describe"
	})
	b := &bundle{Bundle: tb}
	if _, err := b.Pool.Exec(context.Background(), `CREATE TABLE job_output (target text PRIMARY KEY, run_id bigint)`); err != nil {
		t.Fatal(err)
	}
	listen := testenv.Pool(t, direct)
	return b, func(c *runner.Config) { c.ListenDB = listen }
}

// TestThroughPgBouncer: with PgBouncer in transaction mode in front of PostgreSQL (fewer
// server connections than the runners' clients), concurrent starts still make one run, a
// batch run commits every item, and a schedule change wakes the other instance's scheduler
// through the LISTEN on the direct connection well before its 10s poll.
func TestThroughPgBouncer(t *testing.T) {
	backend := testenv.PrivatePostgres(t)
	pooler := testenv.PrivatePgBouncer(t, backend)
	backendPool := testenv.Pool(t, backend.URL("postgres"))

	t.Run("concurrent-start", func(t *testing.T) {
		b, direct := pooledSetup(t, backend, pooler)
		concurrentStartsRunOnce(t, b, 3, 16, direct)
	})

	t.Run("batch", func(t *testing.T) {
		b, direct := pooledSetup(t, backend, pooler)
		const n = 300
		job := runner.NewJob(runner.JobInfo{Name: "pooled-batch", Lease: time.Minute, Retry: runner.RetryPolicy{MaxAttempts: 1}},
			func(ctx context.Context, run *runner.Run) error {
				for from := 0; from < n; from += 100 {
					if err := run.ProcessBatch(ctx, batchOf("t", from, from+100), 8, func(context.Context, runner.Item, *runner.Attempt) error {
						return nil
					}); err != nil {
						return err
					}
				}
				return nil
			})
		r := b.runner(direct, job)
		run, err := r.Start(context.Background(), runner.StartParams{Job: "pooled-batch", Actor: "test"})
		if err != nil {
			t.Fatal(err)
		}
		rec := b.waitStatus(run.ID, bt.StatusSucceeded, bt.StatusFailed)
		if rec.Status != bt.StatusSucceeded || rec.Processed != n || rec.Succeeded != n {
			t.Fatalf("run %s processed %d succeeded %d (%s); want SUCCEEDED %d/%d", rec.Status, rec.Processed, rec.Succeeded, rec.Message, n, n)
		}
		if got := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'pooled-batch'`); got != n {
			t.Fatalf("%d ledger entries; want %d", got, n)
		}
	})

	t.Run("schedule-change", func(t *testing.T) {
		b, direct := pooledSetup(t, backend, pooler)
		job := newItemsJob("pooled-cron", 1)
		job.cron = "0 0 1 1 *" // yearly
		// The change is made on an instance without a scheduler, so only the other
		// instance's LISTEN (or its 10s poll) can bring it to the scheduler.
		r1 := b.runner(nil, job)
		b.runner(func(c *runner.Config) { schedulerOn(c); direct(c) }, job)
		// Change the cron only once the scheduler has made its first pass and listens, so
		// that nothing but the notification can tell it of the change.
		testenv.Eventually(t, 10*time.Second, "the scheduler's first pass and its LISTEN", func() bool {
			return b.count(`SELECT count(*) FROM job_settings WHERE name = 'pooled-cron' AND next_scheduled_at IS NOT NULL`) == 1 &&
				testbundle.Count(t, backendPool, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'`) >= 1
		})
		every := "* * * * * *"
		if _, err := r1.Jobs().UpdateSchedule(context.Background(), "pooled-cron", runner.ScheduleUpdate{Cron: &every, Actor: "ops"}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 8*time.Second, "a run under the new cron (the poll is 10s)", func() bool {
			return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'pooled-cron' AND trigger = 'SCHEDULED'`) >= 1
		})
	})
}
