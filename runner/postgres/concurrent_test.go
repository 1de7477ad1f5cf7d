package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
	"github.com/baton-run/baton/runner/store/storetest"
)

// TestWriteItemsMeetsAConcurrentResolution checks an item upsert that meets a row resolved
// while it ran: the write took its snapshot while the target was AMBIGUOUS_EFFECT, and
// reached the row only after a resolution moved it and committed. The write must be judged,
// and the counters moved, by the state it actually replaces, not the one its snapshot shows:
//
//   - single: a Fail on a target resolved NOT_APPLIED lands (a NOT_APPLIED target may fail),
//     and the counters stay equal to the ledger rows;
//   - batch: a result of a replay whose scope names AMBIGUOUS_EFFECT, on a target resolved
//     CONFIRMED, is refused (CONFIRMED is out of scope) and the row stays CONFIRMED;
//   - known: the same through the compare-and-set on a state the caller knows.
//
// The interleaving is made deterministic by locks: the resolution is held, after its ledger
// update, on a lock of the audit log; the write is started and waits for the row; then the
// audit log is released.
func TestWriteItemsMeetsAConcurrentResolution(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		to      bt.LedgerState
		write   store.LedgerWrite
		batch   bool
		refused bool
		want    bt.LedgerState
		redone  int64 // writes redone that relied on the caller's knowledge
	}{
		{name: "single", to: bt.LedgerNotApplied,
			write: store.LedgerWrite{State: bt.LedgerTransient, Kind: store.WriteFail, Attempt: 0, CountInRun: true},
			want:  bt.LedgerTransient},
		{name: "batch", to: bt.LedgerConfirmed, batch: true, refused: true,
			write: store.LedgerWrite{State: bt.LedgerTransient, Kind: store.WriteResult, Attempt: 2, CountInRun: true},
			want:  bt.LedgerConfirmed},
		{name: "known", to: bt.LedgerConfirmed, batch: true, refused: true,
			write: store.LedgerWrite{State: bt.LedgerTransient, Kind: store.WriteResult, Attempt: 2, CountInRun: true,
				Prior: bt.LedgerAmbiguous},
			want: bt.LedgerConfirmed, redone: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := postgres.New(testenv.Postgres(t))
			f, gen := storetest.RunningRun(t, s, 60)
			pool := s.Pool()
			// The target in doubt: its intent, then the quarantine of it.
			for _, l := range []store.LedgerWrite{
				{State: bt.LedgerInFlight, Kind: store.WriteIntent},
				{State: bt.LedgerAmbiguous, Kind: store.WriteQuarantine, CountInRun: true},
			} {
				l.Target, l.Step, l.Attempt, l.IdempotencyKey, l.External = "acct", "pay", 1, "kacct", true
				if _, _, err := s.WriteItems(ctx, f, &store.ItemsWrite{JobName: "j", Generation: gen, Ledger: []store.LedgerWrite{l}}, nil); err != nil {
					t.Fatal(err)
				}
			}
			var id int64
			if err := pool.QueryRow(ctx, `SELECT id FROM job_ledger WHERE target_key = 'acct'`).Scan(&id); err != nil {
				t.Fatal(err)
			}

			// Hold the resolution after its ledger update: its audit insert waits for this lock.
			hold, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Rollback(ctx) //nolint:errcheck
			var holder int32
			if err := hold.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holder); err != nil {
				t.Fatal(err)
			}
			if _, err := hold.Exec(ctx, `LOCK TABLE audit_log IN SHARE MODE`); err != nil {
				t.Fatal(err)
			}
			resolved := make(chan error, 1)
			go func() {
				_, err := s.ResolveAmbiguous(ctx, id, tc.to, nil, nil, "checked", store.AuditRecord{Actor: "op", Action: "resolve", Target: "acct"})
				resolved <- err
			}()
			resolver := blockedBy(t, pool, holder)

			// The write takes its snapshot now, with the row AMBIGUOUS_EFFECT, and waits for it.
			l := tc.write
			l.Target, l.Step, l.IdempotencyKey, l.External = "acct", "pay", "kacct", true
			w := &store.ItemsWrite{JobName: "j", Generation: gen, Ledger: []store.LedgerWrite{l}}
			if tc.batch {
				w.Scope = []bt.LedgerState{bt.LedgerAmbiguous}
				w.Ledger = append(w.Ledger, store.LedgerWrite{Target: "other", Step: "pay", State: bt.LedgerConfirmed,
					Attempt: 1, IdempotencyKey: "kother", External: true, CountInRun: true, Fresh: l.Prior != ""})
			}
			written := make(chan error, 1)
			go func() {
				_, _, err := s.WriteItems(ctx, f, w, nil)
				written <- err
			}()
			blockedBy(t, pool, resolver)

			if err := hold.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-resolved; err != nil {
				t.Fatalf("resolve: %v", err)
			}
			err = <-written
			switch {
			case tc.refused && bt.CodeOf(err) != bt.CodeLedgerTransition:
				t.Errorf("write over a target resolved %s returned %v, want %s", tc.to, err, bt.CodeLedgerTransition)
			case !tc.refused && err != nil:
				t.Errorf("write over a target resolved %s: %v", tc.to, err)
			}
			var state string
			if err := pool.QueryRow(ctx, `SELECT state FROM job_ledger WHERE id = $1`, id).Scan(&state); err != nil {
				t.Fatal(err)
			}
			if bt.LedgerState(state) != tc.want {
				t.Errorf("target resolved %s, then written over: %s, want %s", tc.to, state, tc.want)
			}
			// An upsert made again because a row moved under it is no bookkeeping error of the
			// caller's, and is not counted as one.
			if n := s.RedoneWrites(); n != tc.redone {
				t.Errorf("%d writes counted as redone for stale knowledge, want %d", n, tc.redone)
			}
			assertCountsEqualLedger(t, s, gen)
		})
	}
}

// blockedBy waits until a backend waits for a lock held by pid, and returns that backend's pid.
func blockedBy(t *testing.T, pool *pgxpool.Pool, pid int32) int32 {
	t.Helper()
	var waiter int32
	testenv.Eventually(t, 10*time.Second, "a backend waiting for a lock of the holder", func() bool {
		err := pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)) LIMIT 1`, pid).Scan(&waiter)
		return err == nil
	})
	return waiter
}

// assertCountsEqualLedger checks that the generation's per-state counters equal its ledger rows.
func assertCountsEqualLedger(t *testing.T, s *postgres.Store, gen int64) {
	t.Helper()
	ctx := context.Background()
	got, err := s.LedgerCounts(ctx, "j", gen, 0)
	if err != nil {
		t.Fatal(err)
	}
	actual := storetest.LedgerRows(t, s.Pool(), gen)
	same := len(got) == len(actual)
	for st, n := range actual {
		same = same && got[st] == n
	}
	if !same {
		t.Errorf("generation counters %v, ledger rows by state %v", got, actual)
	}
}
