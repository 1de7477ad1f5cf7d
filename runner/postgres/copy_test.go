package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
	"github.com/baton-run/baton/runner/store/storetest"
)

// copyCounter counts the COPY operations made on a pool: the statements starting one that
// its connections send (copySniffer).
type copyCounter struct{ n atomic.Int64 }

// copySniffer is a connection to PostgreSQL that counts the COPYs into job_ledger it sends.
// The store sends its COPY below pgx's tracer (pgconn), so the wire is where it shows.
type copySniffer struct {
	net.Conn
	copies *copyCounter
}

func (c copySniffer) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("COPY job_ledger (")) {
		c.copies.n.Add(1)
	}
	return c.Conn.Write(b)
}

// countingCopies returns a pool on a schema of its own whose COPY operations it counts.
func countingCopies(t *testing.T) (*pgxpool.Pool, *copyCounter) {
	cfg, err := pgxpool.ParseConfig(testenv.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	copies := &copyCounter{}
	cfg.ConnConfig.AfterNetConnect = func(_ context.Context, _ *pgconn.Config, conn net.Conn) (net.Conn, error) {
		return copySniffer{Conn: conn, copies: copies}, nil
	}
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

// TestCopiedRowsKeepEveryColumn: the rows a COPY writes (encoded by the store in COPY's binary
// format) read back column for column as they were given: texts (non-ASCII too), NULLs and
// set optional texts, each boolean on its own, the attempt and the error count.
func TestCopiedRowsKeepEveryColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, copies := countingCopies(t)
	s := postgres.New(pool)
	f, gen := storetest.RunningRun(t, s, 60)
	ls := freshBatch("é", 100)
	effect, evidence, lastErr, sig := "pay_1", "receipt:1", "provider said 422 — ünïcode", "sig:1"
	ls[7].Step, ls[7].InputHash, ls[7].InputChanged, ls[8].External = "charge", "h7", true, true
	ls[7].EffectRef, ls[7].EvidenceRef, ls[7].LastError, ls[7].ErrorSig = &effect, &evidence, &lastErr, &sig
	ls[7].State, ls[7].Attempt, ls[7].SameErrorCount = bt.LedgerTransient, 3, 2
	w := &store.ItemsWrite{JobName: "j", Generation: gen, Delta: store.RunDelta{Processed: len(ls), Succeeded: len(ls)}, Ledger: ls}
	if _, _, err := s.WriteItems(ctx, f, w, nil); err != nil {
		t.Fatal(err)
	}
	if copies.n.Load() != 1 {
		t.Fatalf("%d COPYs, want 1", copies.n.Load())
	}
	type row struct {
		step, state, key, hash        string
		attempt, same                 int
		changed, external             bool
		effect, evidence, err, errSig *string
		run, gen                      int64
	}
	read := func(target string) row {
		t.Helper()
		var r row
		if err := pool.QueryRow(ctx, `SELECT step, state, idempotency_key, input_hash, attempt, same_error_count, input_changed, external,
				effect_ref, evidence_ref, last_error, last_error_sig, run_id, generation
			FROM job_ledger WHERE job_name = 'j' AND target_key = $1`, target).Scan(&r.step, &r.state, &r.key, &r.hash, &r.attempt, &r.same,
			&r.changed, &r.external, &r.effect, &r.evidence, &r.err, &r.errSig, &r.run, &r.gen); err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := read(ls[0].Target)
	if plain.step != "" || plain.state != "CONFIRMED" || plain.key != ls[0].IdempotencyKey || plain.hash != "" || plain.attempt != 1 ||
		plain.same != 0 || plain.changed || plain.external || plain.effect != nil || plain.evidence != nil || plain.err != nil ||
		plain.errSig != nil || plain.run != f.RunID || plain.gen != gen {
		t.Fatalf("row %s read back as %+v", ls[0].Target, plain)
	}
	full := read(ls[7].Target)
	if full.step != "charge" || full.state != "TRANSIENT" || full.hash != "h7" || full.attempt != 3 || full.same != 2 ||
		!full.changed || full.external || !read(ls[8].Target).external || deref(full.effect) != effect || deref(full.evidence) != evidence ||
		deref(full.err) != lastErr || deref(full.errSig) != sig || full.run != f.RunID {
		t.Fatalf("row %s read back as %+v", ls[7].Target, full)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
