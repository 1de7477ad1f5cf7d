package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// writeBehindJob runs body with a transaction holding the run's row lock, so the result write
// a batch leaves in flight waits until body lets it go.
func writeBehindJob(b *bundle, name string, body func(ctx context.Context, run *runner.Run, lock pgx.Tx) error) runner.Job {
	return runner.NewJob(runner.JobInfo{Name: name, Lease: time.Minute, Retry: runner.RetryPolicy{MaxAttempts: 1}},
		func(ctx context.Context, run *runner.Run) error {
			lock, err := b.Pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer lock.Rollback(context.Background()) //nolint:errcheck
			if _, err := lock.Exec(ctx, `SELECT 1 FROM job_runs WHERE id = $1 FOR UPDATE`, run.ID()); err != nil {
				return err
			}
			return body(ctx, run, lock)
		})
}

func batchOf(prefix string, from, to int) []runner.Item {
	var items []runner.Item
	for i := from; i < to; i++ {
		items = append(items, runner.Item{Target: fmt.Sprintf("%s%02d", prefix, i), Checkpoint: fmt.Sprintf("%s%02d", prefix, i)})
	}
	return items
}

// A batch without external effects returns before its result commit lands; everything that
// must see the commit waits for it: a later batch offering the same targets (the ledger
// decides on the committed rows, never on a read that misses them), Sync, and the run's end.
func TestProcessBatchWritesBehind(t *testing.T) {
	b := setup(t)
	var (
		mu       sync.Mutex
		called   []string
		problems []string
	)
	record := func(ctx context.Context, item runner.Item, a *runner.Attempt) error {
		mu.Lock()
		defer mu.Unlock()
		called = append(called, item.Target)
		return nil
	}
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	job := writeBehindJob(b, "behind", func(ctx context.Context, run *runner.Run, lock pgx.Tx) error {
		if err := run.ProcessBatch(ctx, batchOf("x", 0, 10), 4, record); err != nil {
			return err
		}
		// Returned, though the row lock holds its commit back.
		if n := b.count(`SELECT processed FROM job_runs WHERE id = $1`, run.ID()); n != 0 {
			problem("processed = %d while the batch's commit is held back: ProcessBatch waited for it", n)
		}
		if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'behind'`); n != 0 {
			problem("%d ledger rows while the commit is held back", n)
		}
		// Offered again while the commit is in flight, x00..x04 must wait for it, not be
		// called again on a read that cannot see them yet: nothing is called before the
		// deadline, and the call returns the deadline.
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := run.ProcessBatch(short, append(batchOf("x", 0, 5), batchOf("y", 0, 1)...), 4, record)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			problem("the batch overlapping the held commit returned %v, want the deadline", err)
		}
		mu.Lock()
		if len(called) != 10 {
			problem("called %v; want only x00..x09, once each", called)
		}
		mu.Unlock()

		if err := lock.Rollback(ctx); err != nil {
			return err
		}
		if err := run.Sync(ctx); err != nil {
			return err
		}
		if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'behind' AND state = 'CONFIRMED'`); n != 10 {
			problem("%d CONFIRMED rows after Sync, want 10", n)
		}
		if n := b.count(`SELECT processed FROM job_runs WHERE id = $1`, run.ID()); n != 10 {
			problem("processed = %d after Sync, want 10", n)
		}
		// Now the ledger skips the confirmed ones and calls only the new targets.
		return run.ProcessBatch(ctx, append(batchOf("x", 0, 5), batchOf("y", 0, 2)...), 4, record)
	})
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: "behind"})
	rec := b.finish(r, id)
	if len(problems) > 0 {
		t.Fatalf("%d problems: %v", len(problems), problems)
	}
	if rec.Status != bt.StatusSucceeded || rec.Processed != 17 || rec.Succeeded != 12 || rec.Skipped != 5 || rec.Checkpoint != "y01" {
		t.Fatalf("run %s processed %d succeeded %d skipped %d checkpoint %q; want SUCCEEDED 17/12/5 at y01",
			rec.Status, rec.Processed, rec.Succeeded, rec.Skipped, rec.Checkpoint)
	}
	if len(called) != 12 {
		t.Fatalf("called %v; want x00..x09, y00, y01", called)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'behind'`); n != 12 {
		t.Fatalf("%d ledger rows, want 12", n)
	}
}

// Two result writes may be in flight: while the first waits to commit, the second's rows are
// already inserted (staged, uncommitted, on a connection of its own); a third batch waits for
// the first to land before it returns. They land in the order they were made.
func TestWriteBehindTwoInFlight(t *testing.T) {
	b := setup(t)
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	noop := func(context.Context, runner.Item, *runner.Attempt) error { return nil }
	job := writeBehindJob(b, "two", func(ctx context.Context, run *runner.Run, lock pgx.Tx) error {
		if err := run.ProcessBatch(ctx, batchOf("x", 0, 10), 4, noop); err != nil {
			return err
		}
		if err := run.ProcessBatch(ctx, batchOf("y", 0, 10), 4, noop); err != nil {
			return err
		}
		// Both writes hold a transaction that has inserted into the ledger: the second did not
		// wait for the first to commit before sending its rows.
		testenv.Eventually(t, 10*time.Second, "two transactions holding ledger inserts", func() bool {
			return b.count(`SELECT count(DISTINCT virtualtransaction) FROM pg_locks
				WHERE relation = 'job_ledger'::regclass AND mode = 'RowExclusiveLock' AND granted`) == 2
		})
		if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'two'`); n != 0 {
			problem("%d ledger rows visible before any commit", n)
		}
		// A third batch waits for the first write: it cannot land, so the batch returns only
		// when its context ends. The last item's call ends it, once every item is called.
		third, cancel := context.WithCancel(ctx)
		items := batchOf("z", 0, 10)
		err := run.ProcessBatch(third, items, 1, func(_ context.Context, item runner.Item, _ *runner.Attempt) error {
			if item.Target == items[len(items)-1].Target {
				cancel()
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			problem("a third batch returned %v while two writes were in flight, want it to wait (context.Canceled)", err)
		}
		if err := lock.Rollback(ctx); err != nil {
			return err
		}
		if err := run.Sync(ctx); err != nil {
			return err
		}
		if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'two' AND state = 'CONFIRMED'`); n != 20 {
			problem("%d CONFIRMED rows after Sync, want x00..x09 and y00..y09", n)
		}
		return nil
	})
	r := b.runner(nil, job)
	rec := b.finish(r, mustStart(t, r, runner.StartParams{Job: "two"}))
	if len(problems) > 0 {
		t.Fatalf("%d problems: %v", len(problems), problems)
	}
	if rec.Status != bt.StatusSucceeded || rec.Processed != 20 || rec.Succeeded != 20 || rec.Checkpoint != "y09" {
		t.Fatalf("run %s processed %d succeeded %d checkpoint %q; want SUCCEEDED 20/20 at y09", rec.Status, rec.Processed, rec.Succeeded, rec.Checkpoint)
	}
	if n := b.count(`SELECT sum(n) FROM job_ledger_counts WHERE job_name = 'two' AND run_id = 0 AND state = 'CONFIRMED'`); n != 20 {
		t.Fatalf("generation counter CONFIRMED = %d, want 20", n)
	}
}

// refuseCheckpoint makes every write that would move a run's checkpoint to cp fail, with
// "refused by the test".
func refuseCheckpoint(b *bundle, cp string) {
	b.T.Helper()
	if _, err := b.Pool.Exec(context.Background(), `
		CREATE FUNCTION refuse_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.checkpoint = '`+cp+`' THEN RAISE EXCEPTION 'refused by the test'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_checkpoint BEFORE UPDATE ON job_runs FOR EACH ROW EXECUTE FUNCTION refuse_checkpoint()`); err != nil {
		b.T.Fatal(err)
	}
}

// A write that fails takes the write staged behind it down with it: nothing lands out of
// order, so a checkpoint never passes results that were lost.
func TestWriteBehindFailureStopsTheWriteBehind(t *testing.T) {
	b := setup(t)
	refuseCheckpoint(b, "x09")
	var syncErr error
	job := writeBehindJob(b, "behind-failing", func(ctx context.Context, run *runner.Run, lock pgx.Tx) error {
		for _, prefix := range []string{"x", "y"} {
			if err := run.ProcessBatch(ctx, batchOf(prefix, 0, 10), 4, func(context.Context, runner.Item, *runner.Attempt) error { return nil }); err != nil {
				return err
			}
		}
		if err := lock.Rollback(ctx); err != nil {
			return err
		}
		syncErr = run.Sync(ctx)
		return syncErr
	})
	r := b.runner(nil, job)
	rec := b.finish(r, mustStart(t, r, runner.StartParams{Job: "behind-failing"}))
	if syncErr == nil || !strings.Contains(syncErr.Error(), "refused by the test") {
		t.Fatalf("Sync returned %v, want the first write's failure", syncErr)
	}
	if rec.Status != bt.StatusFailed {
		t.Fatalf("run %s, want FAILED", rec.Status)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'behind-failing'`); n != 0 {
		t.Fatalf("%d ledger rows landed though the write before them failed", n)
	}
	if n := b.count(`SELECT processed FROM job_runs WHERE id = $1`, rec.ID); n != 0 {
		t.Fatalf("processed = %d, want 0", n)
	}
}

// The end of a run waits for the writes still in flight and reports their failure: a job that
// returns nil right after its last batch, whose write then fails, does not end SUCCEEDED.
func TestRunEndWaitsForTheWritesBehind(t *testing.T) {
	b := setup(t)
	refuseCheckpoint(b, "x09")
	job := runner.NewJob(runner.JobInfo{Name: "ends-early", Lease: time.Minute}, func(ctx context.Context, run *runner.Run) error {
		return run.ProcessBatch(ctx, batchOf("x", 0, 10), 4, func(context.Context, runner.Item, *runner.Attempt) error { return nil })
	})
	r := b.runner(nil, job)
	rec := b.finish(r, mustStart(t, r, runner.StartParams{Job: "ends-early"}))
	// The write's failure is the database's: clients see its reference, the log its text.
	if rec.Status != bt.StatusFailed || !strings.HasPrefix(rec.Message, "internal error (ref ") {
		t.Fatalf("run %s (%q), want FAILED with the write's failure as an internal error", rec.Status, rec.Message)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'ends-early'`); n != 0 {
		t.Fatalf("%d ledger rows, want none", n)
	}
}

// A write holds a connection while it waits only behind a write that holds one too: behind a
// write that still needs a connection (here one that updates a known row in place, which is not
// staged) a batch of new rows is not staged, so it cannot take the last connection from it.
func TestWriteBehindStagesOnlyBehindAHeldWrite(t *testing.T) {
	b := setup(t)
	pool := testenv.Pool(t, b.URL) // the runner's own, to count its connections
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	job := runner.NewJob(runner.JobInfo{Name: "held", Lease: time.Minute, Retry: runner.RetryPolicy{MaxAttempts: 1}},
		func(ctx context.Context, run *runner.Run) error {
			noop := func(context.Context, runner.Item, *runner.Attempt) error { return nil }
			if err := run.ProcessBatch(ctx, batchOf("t", 0, 2), 2, func(_ context.Context, item runner.Item, _ *runner.Attempt) error {
				if item.Target == "t00" {
					return runner.Transient(errors.New("503"))
				}
				return nil
			}); err != nil {
				return err
			}
			if err := run.Sync(ctx); err != nil {
				return err
			}
			lock, err := b.Pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer lock.Rollback(context.Background()) //nolint:errcheck
			var lockPID int
			if err := lock.QueryRow(ctx, `SELECT pg_backend_pid() FROM job_runs WHERE id = $1 FOR UPDATE`, run.ID()).Scan(&lockPID); err != nil {
				return err
			}
			// t00 is retried over its TRANSIENT row: updated in place, not staged.
			if err := run.ProcessBatch(ctx, append(batchOf("t", 0, 1), batchOf("u", 0, 1)...), 2, noop); err != nil {
				return err
			}
			testenv.Eventually(t, 10*time.Second, "the second write to wait for the row lock", func() bool {
				return b.count(`SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, lockPID) == 1
			})
			if err := run.ProcessBatch(ctx, batchOf("v", 0, 10), 4, noop); err != nil {
				return err
			}
			// One connection, the waiting write's. Other parts of the runner take one for a
			// moment now and then, so the count is read until it settles; a third write
			// staged behind the waiting one would hold its connection until the lock goes.
			if !testenv.Within(5*time.Second, func() bool { return pool.Stat().AcquiredConns() == 1 }) {
				problem("%d connections held with the second write waiting, want 1: the third was staged behind a write without a connection",
					pool.Stat().AcquiredConns())
			}
			if err := lock.Rollback(ctx); err != nil {
				return err
			}
			return run.Sync(ctx)
		})
	r := b.runner(func(c *runner.Config) { c.DB = pool }, job)
	rec := b.finish(r, mustStart(t, r, runner.StartParams{Job: "held"}))
	if len(problems) > 0 {
		t.Fatalf("%d problems: %v", len(problems), problems)
	}
	if rec.Status != bt.StatusSucceeded || rec.Checkpoint != "v09" {
		t.Fatalf("run %s checkpoint %q (%s), want SUCCEEDED at v09", rec.Status, rec.Checkpoint, rec.Message)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'held' AND state = 'CONFIRMED'`); n != 13 {
		t.Fatalf("%d CONFIRMED rows, want 13 (t00, t01, u00, v00..v09)", n)
	}
}

// However small the database pool, writes in flight never wait on each other for a
// connection: three runs of many batches each finish on a pool of one connection.
func TestWriteBehindOnOneConnection(t *testing.T) {
	b := setup(t)
	cfg, err := pgxpool.ParseConfig(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var jobs []runner.Job
	for j := range 3 {
		jobs = append(jobs, runner.NewJob(runner.JobInfo{Name: fmt.Sprintf("narrow-%d", j), Lease: time.Minute},
			func(ctx context.Context, run *runner.Run) error {
				for k := range 20 {
					if err := run.ProcessBatch(ctx, batchOf(fmt.Sprintf("b%02d-", k), 0, 10), 4,
						func(context.Context, runner.Item, *runner.Attempt) error { return nil }); err != nil {
						return err
					}
				}
				return nil
			}))
	}
	r := b.runner(func(c *runner.Config) { c.DB = pool }, jobs...)
	var ids []int64
	for _, j := range jobs {
		ids = append(ids, mustStart(t, r, runner.StartParams{Job: j.Info().Name}))
	}
	for _, id := range ids {
		if rec := b.finish(r, id); rec.Status != bt.StatusSucceeded || rec.Processed != 200 {
			t.Fatalf("run %d %s with %d items (%s), want SUCCEEDED with 200", id, rec.Status, rec.Processed, rec.Message)
		}
	}
}

// A commit left in flight is fenced like any other: when the lease ends before it lands it
// writes nothing, nor does the write staged behind it, and the run, whose job returned nil,
// does not end SUCCEEDED.
func TestWriteBehindIsFenced(t *testing.T) {
	b := setup(t)
	job := writeBehindJob(b, "behind-fenced", func(ctx context.Context, run *runner.Run, lock pgx.Tx) error {
		// Two writes in flight: the second's rows are staged behind the first.
		for _, prefix := range []string{"x", "y"} {
			if err := run.ProcessBatch(ctx, batchOf(prefix, 0, 10), 4, func(context.Context, runner.Item, *runner.Attempt) error { return nil }); err != nil {
				return err
			}
		}
		// The lease ends (by the database clock) before the held commits can land.
		if _, err := lock.Exec(ctx, `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, run.ID()); err != nil {
			return err
		}
		if err := lock.Commit(ctx); err != nil {
			return err
		}
		return nil // the run's end waits for the commit and learns it was refused
	})
	r := b.runner(func(c *runner.Config) { c.Scheduler = true; c.PollInterval = 100 * time.Millisecond }, job)
	id := mustStart(t, r, runner.StartParams{Job: "behind-fenced"})
	rec := b.finish(r, id)
	if rec.Status != bt.StatusFailed || rec.StopReason != bt.StopLeaseExpired {
		t.Fatalf("run %s (%s: %s), want FAILED with LEASE_EXPIRED", rec.Status, rec.StopReason, rec.Message)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'behind-fenced'`); n != 0 {
		t.Fatalf("%d ledger rows landed after the lease ended", n)
	}
	if rec.Processed != 0 || rec.Checkpoint != "" {
		t.Fatalf("processed %d checkpoint %q after the refused commit, want 0 and none", rec.Processed, rec.Checkpoint)
	}
}

// A batch of external items some of which fail transiently: the run retries just those, each
// with a new intent over the TRANSIENT row it recorded (the batch writes update the rows in
// place, relying on the state the run knows), with the same idempotency key, and every write
// relies only on states that are so (finish checks RedoneWrites).
func TestProcessBatchRetriesExternalInPlace(t *testing.T) {
	b := setup(t)
	var (
		mu   sync.Mutex
		keys = map[string][]string{}
	)
	job := runner.NewJob(runner.JobInfo{Name: "retrying", Lease: time.Minute, StopConditions: []runner.StopCondition{},
		Retry: runner.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}},
		func(ctx context.Context, run *runner.Run) error {
			items := batchOf("p", 0, 6)
			for i := range items {
				items[i].External = true
			}
			return run.ProcessBatch(ctx, items, 3, func(ctx context.Context, item runner.Item, a *runner.Attempt) error {
				mu.Lock()
				keys[item.Target] = append(keys[item.Target], a.IdempotencyKey)
				n := len(keys[item.Target])
				mu.Unlock()
				// p00 and p01 fail twice, p02 once; the rest succeed at once.
				if (item.Target == "p00" || item.Target == "p01") && n <= 2 || item.Target == "p02" && n == 1 {
					return runner.Transient(errors.New("503 from the provider"))
				}
				a.SetEffectRef("eff-" + item.Target)
				return nil
			})
		})
	r := b.runner(nil, job)
	rec := b.finish(r, mustStart(t, r, runner.StartParams{Job: "retrying"}))
	if rec.Status != bt.StatusSucceeded || rec.Processed != 6 || rec.Succeeded != 6 {
		t.Fatalf("run %s processed %d succeeded %d (%s), want SUCCEEDED 6/6", rec.Status, rec.Processed, rec.Succeeded, rec.Message)
	}
	want := map[string]int{"p00": 3, "p01": 3, "p02": 2, "p03": 1, "p04": 1, "p05": 1}
	for target, n := range want {
		ks := keys[target]
		if len(ks) != n {
			t.Fatalf("%s called %d times, want %d", target, len(ks), n)
		}
		for _, k := range ks {
			if k != ks[0] {
				t.Fatalf("%s got keys %v: one key for every attempt", target, ks)
			}
		}
		var state string
		var attempt int
		if err := b.Pool.QueryRow(context.Background(), `SELECT state, attempt FROM job_ledger WHERE job_name = 'retrying' AND target_key = $1`, target).Scan(&state, &attempt); err != nil {
			t.Fatal(err)
		}
		if state != string(bt.LedgerConfirmed) || attempt != n {
			t.Fatalf("%s is %s at attempt %d, want CONFIRMED at %d", target, state, attempt, n)
		}
	}
	b.checkCounts(r, "retrying", rec.Generation, rec.ID)
}
