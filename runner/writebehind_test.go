package runner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// writeBehindJob runs body with a transaction holding the run's row lock, so the result write
// a batch leaves in flight waits until body lets it go.
func writeBehindJob(b *bundle, name string, body func(ctx context.Context, run *runner.Run, lock pgx.Tx) error) runner.Job {
	return runner.NewJob(runner.JobInfo{Name: name, Lease: time.Minute, Retry: runner.RetryPolicy{MaxAttempts: 1}},
		func(ctx context.Context, run *runner.Run) error {
			lock, err := b.pool.Begin(ctx)
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

// A commit left in flight is fenced like any other: when the lease ends before it lands it
// writes nothing, and the run, whose job returned nil, does not end SUCCEEDED.
func TestWriteBehindIsFenced(t *testing.T) {
	b := setup(t)
	job := writeBehindJob(b, "behind-fenced", func(ctx context.Context, run *runner.Run, lock pgx.Tx) error {
		if err := run.ProcessBatch(ctx, batchOf("x", 0, 10), 4, func(context.Context, runner.Item, *runner.Attempt) error { return nil }); err != nil {
			return err
		}
		// The lease ends (by the database clock) before the held commit can land.
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
		if err := b.pool.QueryRow(context.Background(), `SELECT state, attempt FROM job_ledger WHERE job_name = 'retrying' AND target_key = $1`, target).Scan(&state, &attempt); err != nil {
			t.Fatal(err)
		}
		if state != string(bt.LedgerConfirmed) || attempt != n {
			t.Fatalf("%s is %s at attempt %d, want CONFIRMED at %d", target, state, attempt, n)
		}
	}
	b.checkCounts(r, "retrying", rec.Generation, rec.ID)
}
