package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// itemsFixture is a fresh store with one RUNNING run of job "j".
func itemsFixture(t *testing.T, open Open) (DB, store.Fence, int64) {
	t.Helper()
	s := open(t)
	f, gen := RunningRun(t, s.Store, 60)
	return s, f, gen
}

func ledgerWrites(state bt.LedgerState, countInRun bool, targets ...string) []store.LedgerWrite {
	out := make([]store.LedgerWrite, len(targets))
	for i, tg := range targets {
		out[i] = store.LedgerWrite{Target: tg, State: state, Attempt: 1, IdempotencyKey: "k" + tg, External: true, CountInRun: countInRun}
		switch state {
		case bt.LedgerInFlight:
			out[i].Kind = store.WriteIntent
		case bt.LedgerSkipped:
			out[i].Kind = store.WriteSkip
		}
	}
	return out
}

// testWriteItemsCounts checks that the single-item and the batch statement keep the
// generation's and the run's per-state counts equal to the ledger rows, also when a write
// moves targets that already had a row (intent → result) and mixes them with new ones.
func testWriteItemsCounts(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s, f, gen := itemsFixture(t, open)
	write := func(d store.RunDelta, ls []store.LedgerWrite) {
		t.Helper()
		w := &store.ItemsWrite{JobName: "j", Generation: gen, Delta: d, Ledger: ls}
		if _, _, err := s.WriteItems(ctx, f, w, nil); err != nil {
			t.Fatal(err)
		}
	}
	write(store.RunDelta{}, ledgerWrites(bt.LedgerInFlight, false, "a"))                                     // single, new
	write(store.RunDelta{}, ledgerWrites(bt.LedgerInFlight, false, "b", "c", "d"))                           // batch, new
	write(store.RunDelta{Processed: 1, Succeeded: 1}, ledgerWrites(bt.LedgerConfirmed, true, "a"))           // single, update
	write(store.RunDelta{Processed: 3, Succeeded: 3}, ledgerWrites(bt.LedgerConfirmed, true, "b", "c", "e")) // batch, mixed
	write(store.RunDelta{Processed: 1, Failed: 1}, ledgerWrites(bt.LedgerTransient, true, "d"))              // single, update
	write(store.RunDelta{Processed: 1, Skipped: 1}, ledgerWrites(bt.LedgerSkipped, true, "d"))               // single, update

	wantLedgerCounts(t, s, f, gen, map[bt.LedgerState]int64{bt.LedgerConfirmed: 4, bt.LedgerSkipped: 1},
		map[bt.LedgerState]int64{bt.LedgerConfirmed: 4, bt.LedgerTransient: 1, bt.LedgerSkipped: 1})
	ls, _, err := s.Poll(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Processed != 6 || ls.Succeeded != 4 || ls.Failed != 1 || ls.Skipped != 1 {
		t.Fatalf("run counters = %+v", ls)
	}
}

// wantLedgerCounts checks the generation's counts against want and against the ledger rows
// themselves, and the run's own counts against wantRun.
func wantLedgerCounts(t *testing.T, s DB, f store.Fence, gen int64, want, wantRun map[bt.LedgerState]int64) {
	t.Helper()
	ctx := context.Background()
	got, err := s.LedgerCounts(ctx, "j", gen, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("generation counts = %v, want %v", got, want)
	}
	actual := LedgerRows(t, s.Pool, gen)
	if !maps.Equal(actual, want) {
		t.Fatalf("ledger rows by state = %v, want %v", actual, want)
	}
	// The run's own counts are of results only (CountInRun), added per write.
	runCounts, err := s.LedgerCounts(ctx, "j", gen, f.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(runCounts, wantRun) {
		t.Fatalf("run counts = %v, want %v", runCounts, wantRun)
	}
}

func fresh(ls []store.LedgerWrite) []store.LedgerWrite {
	for i := range ls {
		ls[i].Fresh = true
	}
	return ls
}

// testWriteItemsKnowledge checks the statements for rows whose state the caller knows: fresh
// rows inserted (single and batch), fresh and known rows mixed (inserted and updated in place
// by compare-and-set on the state), counters computed from the rows, error rows, the checkpoint —
// and that a write relying on a state that is not so (a row taken for new that
// exists, a row not in its known prior state) is made again as an upsert, the counters still right.
func testWriteItemsKnowledge(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s, f, gen := itemsFixture(t, open)
	write := func(d store.RunDelta, ls []store.LedgerWrite) {
		t.Helper()
		cp := "cp-" + ls[len(ls)-1].Target
		// As a FAILED replay writes: rejected rows may be confirmed.
		w := &store.ItemsWrite{JobName: "j", Generation: gen, Delta: d, Ledger: ls, Checkpoint: &cp, Scope: bt.ScopeFailed.States()}
		if _, _, err := s.WriteItems(ctx, f, w, nil); err != nil {
			t.Fatal(err)
		}
	}
	failed := func(ls []store.LedgerWrite) []store.LedgerWrite {
		for i := range ls {
			ls[i].ErrorClass, ls[i].ErrorMessage = "VALIDATION_REJECTED", "bad "+ls[i].Target
		}
		return ls
	}
	prior := func(p bt.LedgerState, ls []store.LedgerWrite) []store.LedgerWrite {
		for i := range ls {
			ls[i].Prior = p
		}
		return ls
	}
	confirmed := func(targets ...string) []store.LedgerWrite {
		return ledgerWrites(bt.LedgerConfirmed, true, targets...)
	}
	redone := func(want int64) {
		t.Helper()
		if got := s.RedoneWrites(); got != want {
			t.Fatalf("%d writes redone as upserts, want %d", got, want)
		}
	}
	write(store.RunDelta{}, fresh(ledgerWrites(bt.LedgerInFlight, false, "a")))                                         // single
	write(store.RunDelta{}, fresh(ledgerWrites(bt.LedgerInFlight, false, "b", "c", "d")))                               // batch
	write(store.RunDelta{Processed: 2, Succeeded: 2}, fresh(confirmed("e", "f")))                                       // batch
	write(store.RunDelta{Processed: 1, Failed: 1}, fresh(failed(ledgerWrites(bt.LedgerValidationRejected, true, "g")))) // single, error
	write(store.RunDelta{Processed: 2, Failed: 2}, fresh(failed(ledgerWrites(bt.LedgerValidationRejected, true, "h", "i"))))
	redone(0)
	// Known and fresh together: b and c move IN_FLIGHT → CONFIRMED in place, k is new.
	write(store.RunDelta{Processed: 3, Succeeded: 3}, append(prior(bt.LedgerInFlight, confirmed("b", "c")), fresh(confirmed("k"))...))
	redone(0)
	// A known state that is not so: d is IN_FLIGHT, not TRANSIENT (h is as known).
	write(store.RunDelta{Processed: 2, Succeeded: 2}, append(prior(bt.LedgerTransient, confirmed("d")),
		prior(bt.LedgerValidationRejected, confirmed("h"))...))
	redone(1)
	// Wrongly taken for new: a exists (single); i exists beside the new j (batch).
	write(store.RunDelta{Processed: 1, Succeeded: 1}, fresh(confirmed("a")))
	write(store.RunDelta{Processed: 2, Succeeded: 2}, fresh(confirmed("j", "i")))
	redone(3)

	wantLedgerCounts(t, s, f, gen, map[bt.LedgerState]int64{bt.LedgerConfirmed: 10, bt.LedgerValidationRejected: 1},
		map[bt.LedgerState]int64{bt.LedgerConfirmed: 10, bt.LedgerValidationRejected: 3})
	var errs int
	if err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM job_run_errors WHERE run_id = $1 AND message LIKE 'bad %'`, f.RunID).Scan(&errs); err != nil {
		t.Fatal(err)
	}
	if errs != 3 {
		t.Fatalf("%d error rows; want 3", errs)
	}
	ls, _, err := s.Poll(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Processed != 13 || ls.Succeeded != 10 || ls.Failed != 3 || ls.Checkpoint != "cp-i" {
		t.Fatalf("run counters = %+v", ls)
	}
	// Under a lost lease the known statement is refused by its fence like every other, not
	// taken for a changed row.
	stale := store.Fence{RunID: f.RunID, Token: "other"}
	w := &store.ItemsWrite{JobName: "j", Generation: gen, Ledger: append(prior(bt.LedgerValidationRejected, confirmed("g", "i")), fresh(confirmed("z"))...)}
	if _, _, err := s.WriteItems(ctx, stale, w, nil); !errors.Is(err, bt.ErrLeaseLost) {
		t.Fatalf("stale known write returned %v, want a lost lease", err)
	}
	redone(3)
}

// testWriteItemsFenced checks that a write under a wrong lease token writes nothing — neither
// the ledger row nor the job's own writes — on every path, and that the job's writes land
// with the item under a valid lease, also when the transaction is bounded by the lease.
func testWriteItemsFenced(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s, f, gen := itemsFixture(t, open)
	if _, err := s.Pool.Exec(ctx, `CREATE TABLE job_side (target text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	side := func(target string) store.TxFunc {
		return func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO job_side VALUES ($1)`, target)
			return err
		}
	}
	stale := store.Fence{RunID: f.RunID, Token: "other"}
	for i, tc := range []struct {
		targets []string
		lease   time.Duration
		writes  bool
	}{
		{[]string{"s1"}, 0, false},
		{[]string{"b1", "b2"}, 0, false},
		{[]string{"t1"}, 0, true},
		{[]string{"l1"}, 30 * time.Second, true},
		{[]string{"l2", "l3"}, 30 * time.Second, true},
	} {
		var writes []store.TxFunc
		if tc.writes {
			for _, tg := range tc.targets {
				writes = append(writes, side(tg))
			}
		}
		w := &store.ItemsWrite{JobName: "j", Generation: gen, Lease: tc.lease, Delta: store.RunDelta{Processed: len(tc.targets)},
			Ledger: ledgerWrites(bt.LedgerConfirmed, true, tc.targets...)}
		if _, _, err := s.WriteItems(ctx, stale, w, writes); !errors.Is(err, bt.ErrLeaseLost) {
			t.Fatalf("case %d: stale write returned %v, want a lost lease", i, err)
		}
		var n int
		if err := s.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM job_ledger WHERE target_key = ANY($1)) +
			(SELECT count(*) FROM job_side WHERE target = ANY($1))`, tc.targets).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("case %d: a fenced-off write left %d rows", i, n)
		}
		if _, _, err := s.WriteItems(ctx, f, w, writes); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want := len(tc.targets)
		if tc.writes {
			want *= 2
		}
		if err := s.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM job_ledger WHERE target_key = ANY($1)) +
			(SELECT count(*) FROM job_side WHERE target = ANY($1))`, tc.targets).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("case %d: %d rows after the write, want %d", i, n, want)
		}
	}
	// A job write that fails rolls the item back with it.
	w := &store.ItemsWrite{JobName: "j", Generation: gen, Lease: time.Minute, Ledger: ledgerWrites(bt.LedgerConfirmed, true, "x")}
	boom := func(context.Context, pgx.Tx) error { return fmt.Errorf("boom") }
	if _, _, err := s.WriteItems(ctx, f, w, []store.TxFunc{boom}); err == nil {
		t.Fatal("a failing job write was committed")
	}
	rows, err := s.LedgerRows(ctx, "j", gen, []store.TargetStep{{Target: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 {
		t.Fatalf("the item of a failed job write was committed: %v", rows)
	}
}

// testStagedWrite checks the two halves of a staged write: rows inserted by Stage are seen by
// no one until Commit; Commit lands them with the counters, error rows and checkpoint; under a
// lease lost meanwhile Commit refuses and nothing lands; a row taken for new that exists is
// made again as an upsert on the write's own connection; Abort leaves nothing.
func testStagedWrite(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s, f, gen := itemsFixture(t, open)
	st := stagedWrites{t: t, ctx: ctx, s: s, f: f, gen: gen}
	staged, rows := st.stage, st.rows

	rejected := fresh(ledgerWrites(bt.LedgerValidationRejected, true, "c"))
	rejected[0].ErrorClass, rejected[0].ErrorMessage = "VALIDATION_REJECTED", "bad c"
	sw := staged(store.RunDelta{Processed: 3, Succeeded: 2, Failed: 1}, append(fresh(ledgerWrites(bt.LedgerConfirmed, true, "a", "b")), rejected...))
	if n := rows(); n != 0 {
		t.Fatalf("%d rows seen before the staged write commits", n)
	}
	ls, _, err := sw.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Processed != 3 || ls.Succeeded != 2 || ls.Failed != 1 || ls.Checkpoint != "cp-c" || rows() != 3 {
		t.Fatalf("after commit: run %+v, %d rows; want 3/2/1 at cp-c and 3 rows", ls, rows())
	}

	// Committed without being staged: refused, nothing written.
	unstaged, err := s.HoldStaged(ctx, f, &store.ItemsWrite{JobName: "j", Generation: gen, Delta: store.RunDelta{Processed: 2, Succeeded: 2},
		Ledger: fresh(ledgerWrites(bt.LedgerConfirmed, true, "x", "y"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := unstaged.Commit(ctx); err == nil || rows() != 3 {
		t.Fatalf("commit of a write never staged returned %v with %d rows, want an error and 3 rows", err, rows())
	}

	// Aborted: nothing.
	staged(store.RunDelta{Processed: 2, Succeeded: 2}, fresh(ledgerWrites(bt.LedgerConfirmed, true, "d", "e"))).Abort(ctx)
	if n := rows(); n != 3 {
		t.Fatalf("%d rows after an abort, want 3", n)
	}

	// A row taken for new exists (c): redone as an upsert, counted as such.
	sw = staged(store.RunDelta{Processed: 2, Succeeded: 2}, fresh(ledgerWrites(bt.LedgerConfirmed, true, "f", "c")))
	if _, _, err := sw.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.RedoneWrites(); got != 1 || rows() != 4 {
		t.Fatalf("%d redone, %d rows; want 1 and 4", got, rows())
	}

	// The lease ends between the halves: refused, and the staged rows go.
	sw = staged(store.RunDelta{Processed: 2, Succeeded: 2}, fresh(ledgerWrites(bt.LedgerConfirmed, true, "g", "h")))
	if _, err := s.Pool.Exec(ctx, `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, f.RunID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sw.Commit(ctx); !errors.Is(err, bt.ErrLeaseLost) {
		t.Fatalf("commit after the lease ended returned %v, want a lost lease", err)
	}
	if n := rows(); n != 4 {
		t.Fatalf("%d rows after a refused commit, want 4", n)
	}
	// c was rejected, then confirmed by this run: confirmed in the generation, both in the run's counts.
	wantLedgerCounts(t, s, f, gen, map[bt.LedgerState]int64{bt.LedgerConfirmed: 4},
		map[bt.LedgerState]int64{bt.LedgerConfirmed: 4, bt.LedgerValidationRejected: 1})
	if s.Pool.Stat().AcquiredConns() != 0 {
		t.Fatalf("%d connections still held", s.Pool.Stat().AcquiredConns())
	}
}

// stagedWrites stages item writes for one run in one job generation.
type stagedWrites struct {
	t   *testing.T
	ctx context.Context
	s   DB
	f   store.Fence
	gen int64
}

// stage holds and stages a write of d and ls with a checkpoint at the last target.
func (st stagedWrites) stage(d store.RunDelta, ls []store.LedgerWrite) *store.StagedWrite {
	st.t.Helper()
	cp := "cp-" + ls[len(ls)-1].Target
	// As a FAILED replay writes: rejected rows may be confirmed.
	w := &store.ItemsWrite{JobName: "j", Generation: st.gen, Delta: d, Ledger: ls, Checkpoint: &cp, Lease: time.Minute, Scope: bt.ScopeFailed.States()}
	sw, err := st.s.HoldStaged(st.ctx, st.f, w)
	if err != nil {
		st.t.Fatal(err)
	}
	sw.Stage(st.ctx)
	return sw
}

// rows counts the job's ledger rows, as anyone outside the staged write sees them.
func (st stagedWrites) rows() int {
	st.t.Helper()
	var n int
	if err := st.s.Pool.QueryRow(st.ctx, `SELECT count(*) FROM job_ledger WHERE job_name = 'j'`).Scan(&n); err != nil {
		st.t.Fatal(err)
	}
	return n
}

// testStagedCommitJudgesTheLeaseAtCommit stages a write under a short lease, lets the lease
// run out by the database clock, and commits: the commit must be refused, judged by the moment
// it runs, not by the moment its transaction was opened when the rows were staged.
func testStagedCommitJudgesTheLeaseAtCommit(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	f, gen := RunningRun(t, s.Store, 1)
	cp := "cp-b"
	w := &store.ItemsWrite{JobName: "j", Generation: gen, Delta: store.RunDelta{Processed: 2, Succeeded: 2},
		Ledger: fresh(ledgerWrites(bt.LedgerConfirmed, true, "a", "b")), Checkpoint: &cp, Lease: time.Minute}
	sw, err := s.HoldStaged(ctx, f, w)
	if err != nil {
		t.Fatal(err)
	}
	sw.Stage(ctx)
	testenv.Eventually(t, 10*time.Second, "the lease to end by the database clock", func() bool {
		var over bool
		err := s.Pool.QueryRow(ctx, `SELECT clock_timestamp() > lease_until FROM job_runs WHERE id = $1`, f.RunID).Scan(&over)
		return err == nil && over
	})
	if _, _, err := sw.Commit(ctx); !errors.Is(err, bt.ErrLeaseLost) {
		t.Fatalf("commit after the lease ran out returned %v, want a lost lease", err)
	}
	var rows, processed int
	if err := s.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM job_ledger), (SELECT processed FROM job_runs WHERE id = $1)`, f.RunID).
		Scan(&rows, &processed); err != nil {
		t.Fatal(err)
	}
	if rows != 0 || processed != 0 {
		t.Fatalf("a commit past the lease left %d ledger rows and %d processed", rows, processed)
	}
}
