package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
	"github.com/baton-run/baton/runner/store/storetest"
)

// copyCounter counts the COPY operations made on a pool.
type copyCounter struct{ n atomic.Int64 }

func (c *copyCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *copyCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *copyCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *copyCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// countingCopies returns a pool on a schema of its own whose COPY operations it counts.
func countingCopies(t *testing.T) (*pgxpool.Pool, *copyCounter) {
	cfg, err := pgxpool.ParseConfig(testenv.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	copies := &copyCounter{}
	cfg.ConnConfig.Tracer = copies
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, copies
}

// freshBatch is n fresh CONFIRMED rows, targets prefix-0 … prefix-(n-1).
func freshBatch(prefix string, n int) []store.LedgerWrite {
	out := make([]store.LedgerWrite, n)
	for i := range out {
		tg := fmt.Sprintf("%s-%d", prefix, i)
		out[i] = store.LedgerWrite{Target: tg, State: bt.LedgerConfirmed, Attempt: 1, IdempotencyKey: "k" + tg, CountInRun: true, Fresh: true}
	}
	return out
}

// TestFreshBatchGoesByCopyUnderItsFence: a batch of fresh rows goes into the ledger by the COPY
// protocol, with its counters and checkpoint in the same transaction; under a lost lease the
// fence refuses it before any COPY and nothing lands; a job write that fails rolls the copied
// rows back; a row wrongly taken for new fails the COPY and the write is made again as an
// upsert, its counters exact.
func TestFreshBatchGoesByCopyUnderItsFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, copies := countingCopies(t)
	s := postgres.New(pool)
	f, gen := storetest.RunningRun(t, s, 60)
	rows := func() (n, counted int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM job_ledger WHERE job_name = 'j'),
			(SELECT coalesce(sum(n), 0) FROM job_ledger_counts WHERE job_name = 'j' AND run_id = 0)`).Scan(&n, &counted); err != nil {
			t.Fatal(err)
		}
		return n, counted
	}
	write := func(f store.Fence, ls []store.LedgerWrite, lease time.Duration, jobWrites ...store.TxFunc) error {
		cp := "cp-" + ls[len(ls)-1].Target
		w := &store.ItemsWrite{JobName: "j", Generation: gen, Lease: lease, Delta: store.RunDelta{Processed: len(ls), Succeeded: len(ls)},
			Ledger: ls, Checkpoint: &cp}
		_, _, err := s.WriteItems(ctx, f, w, jobWrites)
		return err
	}

	// Under a lost lease: refused by the fence, no COPY made, nothing written.
	if err := write(store.Fence{RunID: f.RunID, Token: "other"}, freshBatch("a", 200), 0); !errors.Is(err, bt.ErrLeaseLost) {
		t.Fatalf("stale batch returned %v, want a lost lease", err)
	}
	if n, counted := rows(); n != 0 || counted != 0 || copies.n.Load() != 0 {
		t.Fatalf("a fenced-off batch left %d rows, %d counted, after %d COPYs", n, counted, copies.n.Load())
	}
	// Under the lease: one COPY, rows, counters and checkpoint together.
	if err := write(f, freshBatch("a", 200), 0); err != nil {
		t.Fatal(err)
	}
	if n, counted := rows(); n != 200 || counted != 200 || copies.n.Load() != 1 {
		t.Fatalf("%d rows, %d counted after %d COPYs; want 200, 200 after 1", n, counted, copies.n.Load())
	}
	ls, _, err := s.Poll(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Processed != 200 || ls.Checkpoint != "cp-a-199" {
		t.Fatalf("run after the COPY: processed %d, checkpoint %q", ls.Processed, ls.Checkpoint)
	}
	// A job write that fails takes the copied rows with it.
	boom := func(context.Context, pgx.Tx) error { return errors.New("boom") }
	if err := write(f, freshBatch("b", 100), time.Minute, boom); err == nil {
		t.Fatal("a failing job write was committed")
	}
	if n, counted := rows(); n != 200 || counted != 200 {
		t.Fatalf("after a failed job write: %d rows, %d counted; want 200, 200", n, counted)
	}
	// One row of the batch exists (an intent): the COPY fails on the unique key, the write is
	// redone as an upsert, the counters stay equal to the rows.
	intent := freshBatch("e", 1)
	intent[0].State, intent[0].Kind, intent[0].External, intent[0].CountInRun = bt.LedgerInFlight, store.WriteIntent, true, false
	if err := write(f, intent, 0); err != nil {
		t.Fatal(err)
	}
	batch := append(freshBatch("c", 99), freshBatch("e", 1)...)
	batch[99].External = true
	if err := write(f, batch, 0); err != nil {
		t.Fatal(err)
	}
	if n, counted := rows(); n != 300 || counted != 300 || s.RedoneWrites() != 1 {
		t.Fatalf("after a stale fresh batch: %d rows, %d counted, %d redone; want 300, 300, 1", n, counted, s.RedoneWrites())
	}
	// A small batch is one statement, no COPY.
	before := copies.n.Load()
	if err := write(f, freshBatch("d", 3), 0); err != nil {
		t.Fatal(err)
	}
	if copies.n.Load() != before {
		t.Fatalf("a batch of 3 went by COPY")
	}
}

// TestStagedBatchGoesByCopy: a staged batch of fresh rows is inserted by COPY in its open
// transaction, seen by no one until its fenced commit; a commit after the lease ended is
// refused and the copied rows go with the transaction; a row wrongly taken for new fails the
// COPY and the write is made again as an upsert at commit.
func TestStagedBatchGoesByCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, copies := countingCopies(t)
	s := postgres.New(pool)
	f, gen := storetest.RunningRun(t, s, 60)
	rows := func() (n int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_ledger WHERE job_name = 'j'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	stage := func(ls []store.LedgerWrite) *store.StagedWrite {
		t.Helper()
		w := &store.ItemsWrite{JobName: "j", Generation: gen, Lease: time.Minute, Delta: store.RunDelta{Processed: len(ls), Succeeded: len(ls)}, Ledger: ls}
		sw, err := s.HoldStaged(ctx, f, w)
		if err != nil {
			t.Fatal(err)
		}
		sw.Stage(ctx)
		return sw
	}

	sw := stage(freshBatch("a", 150))
	if n := rows(); n != 0 || copies.n.Load() != 1 {
		t.Fatalf("staged by %d COPYs, %d rows seen before commit; want 1 and 0", copies.n.Load(), n)
	}
	if _, _, err := sw.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 150 {
		t.Fatalf("%d rows after the commit, want 150", n)
	}
	// A row taken for new exists: the COPY fails, the commit makes the write as an upsert.
	intent := freshBatch("i", 1)
	intent[0].State, intent[0].Kind, intent[0].External = bt.LedgerInFlight, store.WriteIntent, true
	if _, _, err := s.WriteItems(ctx, f, &store.ItemsWrite{JobName: "j", Generation: gen, Ledger: intent}, nil); err != nil {
		t.Fatal(err)
	}
	batch := append(freshBatch("b", 99), freshBatch("i", 1)...)
	batch[99].External = true
	if _, _, err := stage(batch).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 250 || s.RedoneWrites() != 1 {
		t.Fatalf("%d rows, %d redone; want 250 and 1", n, s.RedoneWrites())
	}
	// The lease ends between the halves: the commit is refused, the copied rows go.
	sw = stage(freshBatch("c", 100))
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, f.RunID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sw.Commit(ctx); !errors.Is(err, bt.ErrLeaseLost) {
		t.Fatalf("commit after the lease ended returned %v, want a lost lease", err)
	}
	if n := rows(); n != 250 {
		t.Fatalf("%d rows after a refused commit, want 250", n)
	}
}
