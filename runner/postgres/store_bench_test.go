package postgres_test

import (
	"context"
	"fmt"
	"strconv"
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

// BenchmarkWriteItem measures one fenced single-item write: the strict path's commit, as an
// upsert (the form a write takes when the run does not know the target is new).
func BenchmarkWriteItem(b *testing.B) { writeItemBench(b, false) }

// BenchmarkWriteFreshItem is the strict path's per-item write with no runner around it: the
// store's WriteItems of one fresh CONFIRMED item counted in the run, with its checkpoint —
// the fresh single-item statement a first run makes, the one BenchmarkPgbenchItemStatement
// runs from pgbench — made from Go through pgx, one after another on one run. Against pgbench
// it is what the Go client costs; against it, BenchmarkProcessStrict is what the runner adds.
func BenchmarkWriteFreshItem(b *testing.B) { writeItemBench(b, true) }

// writeItemBench makes single-item fenced writes of new CONFIRMED targets, each counted in the
// run with its checkpoint, one after another on one run, marked Fresh or not, and checks that
// every write left its ledger row.
func writeItemBench(b *testing.B, fresh bool) {
	ctx := context.Background()
	pool := testenv.Postgres(b)
	s := postgres.New(pool)
	f, gen := storetest.RunningRun(b, s, 3600)
	i := 0
	for b.Loop() {
		i++
		cp := strconv.Itoa(i)
		w := &store.ItemsWrite{JobName: "j", Generation: gen, Delta: store.RunDelta{Processed: 1, Succeeded: 1},
			Ledger: []store.LedgerWrite{{Target: cp, State: bt.LedgerConfirmed, Attempt: 1, IdempotencyKey: "bt_" + cp,
				CountInRun: true, Fresh: fresh}}, Checkpoint: &cp}
		if _, _, err := s.WriteItems(ctx, f, w, nil); err != nil {
			b.Fatal(err)
		}
	}
	var written int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_ledger WHERE run_id = $1`, f.RunID).Scan(&written); err != nil {
		b.Fatal(err)
	}
	if written != int64(i) {
		b.Fatalf("%d writes left %d ledger rows", i, written)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkPgxInsert is pgbench's single-row INSERT+COMMIT (the same table shape) made from Go
// through a pgx pool, as the runner makes its writes: the floor of a per-item commit as a Go
// client sees it, so that the report can tell the client's share of the gap to pgbench from
// the statement's.
func BenchmarkPgxInsert(b *testing.B) {
	ctx := context.Background()
	pool := testenv.Postgres(b)
	if _, err := pool.Exec(ctx, `CREATE TABLE pgx_insert (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := pool.Exec(ctx, `INSERT INTO pgx_insert (v) VALUES (1)`); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tps")
}

// BenchmarkPgxLedgerInsert is the least a strict item can be: only its ledger row (job_ledger
// and its indexes), one INSERT+COMMIT each, from Go through a pgx pool — no fence, no counters,
// no checkpoint. Against pgbench's INSERT+COMMIT it bounds what any per-item ledger commit made
// from Go can reach on this database.
func BenchmarkPgxLedgerInsert(b *testing.B) {
	ctx := context.Background()
	pool := testenv.Postgres(b)
	i := 0
	for b.Loop() {
		i++
		if _, err := pool.Exec(ctx, `INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, run_id)
			VALUES ('j', 1, $1, '', 'CONFIRMED', 1, $1, 1)`, strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tps")
}

// BenchmarkCopyLedger is PostgreSQL's own bulk-load ceiling for the batch path's rows: a COPY
// of the 20,000 CONFIRMED rows one BenchmarkProcessBatch run writes (same job, keys and
// columns), into job_ledger with all its indexes, on one connection, one new generation per
// iteration. Against it the report judges the batch path, which writes the same rows with
// their fence, counters and checkpoint.
func BenchmarkCopyLedger(b *testing.B) { copyLedgerBench(b, 20000, 1, false) }

// BenchmarkCopyLedgerChunked is the same rows COPYed as the batch path commits them — 40
// COPYs of 500 rows, each its own transaction — on two connections at once, as the batch path
// has two writes in flight, with no fence, counters or checkpoint, each committing as soon as
// its rows are in. Against the bare COPY it is what committing every 500 rows costs the
// database when no commit waits for another.
func BenchmarkCopyLedgerChunked(b *testing.B) { copyLedgerBench(b, 500, 2, false) }

// BenchmarkCopyLedgerOrdered is BenchmarkCopyLedgerChunked with its commits in order: a
// chunk's COPY runs beside the one before it, but its COMMIT waits until that one has
// committed — the order in which the batch path's writes land, so that a checkpoint never
// passes results that were lost (ADR 5). Nothing else is in the transaction. Against the
// bare COPY it is the ceiling of any batch path that commits every 500 rows in order.
func BenchmarkCopyLedgerOrdered(b *testing.B) { copyLedgerBench(b, 500, 2, true) }

// copyLedgerBench COPYs the 20,000 rows of a BenchmarkProcessBatch run into job_ledger as
// COPYs of per rows, each its own transaction, over conns connections at once (connection c
// takes the chunks c, c+conns, …), one new generation per iteration, and reports rows/s.
// ordered makes each chunk commit only after the chunk before it has.
func copyLedgerBench(b *testing.B, per, conns int, ordered bool) {
	ctx := context.Background()
	pool := testenv.Postgres(b)
	const n = 20000
	rows, cols := ledgerCopyRows("items", n), ledgerCopyColumns
	cs := make([]*pgxpool.Conn, conns)
	for c := range cs {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Release()
		cs[c] = conn
	}
	chunks := (n + per - 1) / per
	// copyChunk COPYs chunk k in a transaction of its own on conn and commits it once after
	// (closed) says the chunk before it has committed, when there is one to wait for.
	copyChunk := func(conn *pgxpool.Conn, k int, after chan struct{}) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"job_ledger"}, cols, pgx.CopyFromRows(rows[k*per:min((k+1)*per, n)])); err != nil {
			return err
		}
		if after != nil {
			<-after
		}
		return tx.Commit(ctx)
	}
	gen := int64(0)
	var total time.Duration
	for b.Loop() {
		gen++
		for _, r := range rows {
			r[1] = gen
		}
		committed := make([]chan struct{}, chunks)
		for k := range committed {
			committed[k] = make(chan struct{})
		}
		t0 := time.Now()
		errs := make(chan error, conns)
		for c, conn := range cs {
			go func() {
				for k := c; k < chunks; k += conns {
					var after chan struct{}
					if ordered && k > 0 {
						after = committed[k-1]
					}
					err := copyChunk(conn, k, after)
					close(committed[k]) // failed or not: the next chunk's wait ends, the benchmark with it
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range cs {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(t0)
	}
	var copied int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_ledger`).Scan(&copied); err != nil {
		b.Fatal(err)
	}
	if copied != gen*n {
		b.Fatalf("%d rounds of %d rows left %d rows", gen, n, copied)
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "rows/s")
}

// ledgerCopyRows returns n fresh CONFIRMED ledger rows of job for a COPY in ledgerCopyColumns,
// the rows a BenchmarkProcessBatch run writes (targets "0"…, one key each), of generation 0:
// set each row's [1] to the generation before copying.
func ledgerCopyRows(job string, n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{job, int64(0), strconv.Itoa(i), "", "CONFIRMED", int32(1), fmt.Sprintf("bt_%032x", i), "", false, false,
			(*string)(nil), (*string)(nil), (*string)(nil), (*string)(nil), int32(0), int64(1)}
	}
	return rows
}

// ledgerCopyColumns are the columns of ledgerCopyRows.
var ledgerCopyColumns = []string{"job_name", "generation", "target_key", "step", "state", "attempt", "idempotency_key",
	"input_hash", "input_changed", "external", "effect_ref", "evidence_ref", "last_error", "last_error_sig",
	"same_error_count", "run_id"}

// BenchmarkWriteItemsBatches is the batch path's own store writes with no runner around them:
// the 20,000 rows of a BenchmarkProcessBatch run as 40 fenced writes of 500 fresh CONFIRMED
// rows (WriteItems: fence, counters and checkpoint, the rows by COPY, one transaction each),
// made one after another on one run. Against BenchmarkCopyLedger, one bare COPY of the same
// rows, it is the ceiling of the batch goal: what the batch path's commits cost the database,
// whatever the runner does around them.
func BenchmarkWriteItemsBatches(b *testing.B) {
	ctx := context.Background()
	s := postgres.New(testenv.Postgres(b))
	f, gen := storetest.RunningRun(b, s, 3600)
	const n, per = 20000, 500
	var total time.Duration
	for k := 0; b.Loop(); k++ {
		writes := make([]*store.ItemsWrite, 0, n/per)
		for i := 0; i < n; i += per {
			w := &store.ItemsWrite{JobName: "j", Generation: gen, Delta: store.RunDelta{Processed: per, Succeeded: per}}
			for j := i; j < i+per; j++ {
				target := fmt.Sprintf("%d-%d", k, j)
				w.Ledger = append(w.Ledger, store.LedgerWrite{Target: target, State: bt.LedgerConfirmed, Attempt: 1,
					IdempotencyKey: fmt.Sprintf("bt_%032x", k*n+j), CountInRun: true, Fresh: true})
			}
			cp := strconv.Itoa(i + per - 1)
			w.Checkpoint = &cp
			writes = append(writes, w)
		}
		t0 := time.Now()
		for _, w := range writes {
			if _, _, err := s.WriteItems(ctx, f, w, nil); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "items/s")
}
