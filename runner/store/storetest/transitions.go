package storetest

import (
	"context"
	"fmt"
	"testing"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// testLedgerTransitionTable walks every cell of the ledger transition table — each state a
// row can be in (and none) × each kind of write, with a replay scope naming the state or not,
// and for IN_FLIGHT with the row the intent of the writing attempt or not — through every statement a
// write can take (single upsert, batch upsert, batch compare-and-set on a known state, a row
// wrongly taken for new and redone as an upsert), against the store. An allowed write moves
// the row; a refused one returns LEDGER_TRANSITION_REFUSED (CONFLICT for resolution, which
// is not an item write) and leaves the row, and everything else the write carried, untouched.
// The counters stay equal to the ledger throughout.
func testLedgerTransitionTable(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s, f, gen := itemsFixture(t, open)
	pool := s.Pool
	const otherRun = 1 << 40 // a run that is not the writer's
	// What each kind of write writes.
	writes := map[store.WriteKind]bt.LedgerState{
		store.WriteIntent: bt.LedgerInFlight, store.WriteResult: bt.LedgerConfirmed, store.WriteSkip: bt.LedgerSkipped,
		store.WriteFail: bt.LedgerValidationRejected, store.WriteQuarantine: bt.LedgerAmbiguous, store.WriteResolve: bt.LedgerConfirmed,
	}
	seed := func(target string, state bt.LedgerState, runID int64) {
		t.Helper()
		if _, err := pool.Exec(ctx, `WITH l AS (
				INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, external, run_id, last_error)
				VALUES ('j', $1, $2, 'pay', $3, 1, 'k' || $2, true, $4, 'seeded')
			)
			INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n) VALUES ('j', $1, 0, $3, 1)
			ON CONFLICT (job_name, generation, run_id, state) DO UPDATE SET n = job_ledger_counts.n + 1`, gen, target, string(state), runID); err != nil {
			t.Fatal(err)
		}
	}
	row := func(target string) string {
		t.Helper()
		var out string
		err := pool.QueryRow(ctx, `SELECT COALESCE((SELECT format('%s attempt %s run %s error %s effect %s evidence %s updated %s', state, attempt, run_id,
			last_error, effect_ref, evidence_ref, updated_at) FROM job_ledger WHERE job_name = 'j' AND generation = $1 AND target_key = $2), 'none')`,
			gen, target).Scan(&out)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The promise the table keeps: out of CONFIRMED, AMBIGUOUS_EFFECT and IN_FLIGHT a job's
	// writes move a target only by settling its own intent, quarantine, resolution, or a
	// replay whose scope names the state.
	for _, from := range []bt.LedgerState{bt.LedgerConfirmed, bt.LedgerAmbiguous, bt.LedgerInFlight} {
		for _, kind := range store.WriteKinds {
			r := store.Transition(from, kind)
			exempt := from == bt.LedgerAmbiguous && kind == store.WriteResolve || from == bt.LedgerInFlight && kind == store.WriteQuarantine
			if !exempt && r != store.Refused && r != store.InScope && !(r == store.OwnIntent && from == bt.LedgerInFlight) {
				t.Errorf("the table lets a %s write move a %s target (%s)", kind, from, r)
			}
		}
	}
	states := append([]bt.LedgerState{""}, store.LedgerStates...)
	cells, allowed := 0, 0
	for _, from := range states {
		for _, kind := range store.WriteKinds {
			for _, own := range []bool{true, false} {
				if !own && from != bt.LedgerInFlight {
					continue // whose row it is matters only to an intent
				}
				for _, scoped := range []bool{true, false} {
					paths := []string{"single", "batch", "known", "fresh"}
					if kind == store.WriteResolve {
						paths = []string{"resolve"}
					}
					if from == "" {
						if kind == store.WriteResolve {
							continue // nothing to resolve
						}
						paths = []string{"single", "batch", "fresh"}
					}
					rule := store.Transition(from, kind)
					want := from == "" || rule == store.Allowed || rule == store.OwnIntent && own || rule == store.InScope && scoped
					for _, path := range paths {
						cells++
						name := fmt.Sprintf("%s/%s/own=%v/scoped=%v/%s", from, kind, own, scoped, path)
						target := fmt.Sprintf("t%d", cells)
						companion := "c" + target
						runID := f.RunID
						if !own {
							runID = otherRun
						}
						if from != "" {
							seed(target, from, runID)
						}
						before := row(target)
						var err error
						if kind == store.WriteResolve {
							var id int64
							if err := pool.QueryRow(ctx, `SELECT id FROM job_ledger WHERE job_name = 'j' AND target_key = $1`, target).Scan(&id); err != nil {
								t.Fatal(err)
							}
							ev := "ev"
							_, err = s.ResolveAmbiguous(ctx, id, bt.LedgerConfirmed, nil, &ev, "checked", store.AuditRecord{Actor: "t", Action: "resolve", Target: target})
						} else {
							l := store.LedgerWrite{Target: target, Step: "pay", State: writes[kind], Kind: kind, Attempt: 1,
								IdempotencyKey: "k" + target, External: true, CountInRun: kind != store.WriteIntent}
							w := &store.ItemsWrite{JobName: "j", Generation: gen, Ledger: []store.LedgerWrite{l}}
							switch path {
							case "batch":
								w.Ledger = append(w.Ledger, store.LedgerWrite{Target: companion, Step: "pay", State: bt.LedgerConfirmed,
									Attempt: 1, IdempotencyKey: "k" + companion, External: true, CountInRun: true, Fresh: true})
							case "known":
								w.Ledger[0].Prior = from
								w.Ledger = append(w.Ledger, store.LedgerWrite{Target: companion, Step: "pay", State: bt.LedgerConfirmed,
									Attempt: 1, IdempotencyKey: "k" + companion, External: true, CountInRun: true, Fresh: true})
							case "fresh":
								w.Ledger[0].Fresh = true
							}
							if scoped && from != "" {
								w.Scope = []bt.LedgerState{from}
							}
							_, _, err = s.WriteItems(ctx, f, w, nil)
						}
						after := row(target)
						switch {
						case want && err != nil:
							t.Errorf("%s: allowed by the table, refused: %v", name, err)
						case want && !startsWith(after, string(writes[kind])+" "):
							t.Errorf("%s: allowed, but the row is %s, want %s", name, after, writes[kind])
						case !want && err == nil:
							t.Errorf("%s: refused by the table, but the write landed: %s → %s", name, before, after)
						case !want && kind != store.WriteResolve && bt.CodeOf(err) != bt.CodeLedgerTransition:
							t.Errorf("%s: refused with %v, want %s", name, err, bt.CodeLedgerTransition)
						case !want && kind == store.WriteResolve && bt.CodeOf(err) != bt.CodeConflict:
							t.Errorf("%s: resolution refused with %v, want %s", name, err, bt.CodeConflict)
						case !want && after != before:
							t.Errorf("%s: refused, but the row moved: %s → %s", name, before, after)
						case !want && row(companion) != "none":
							t.Errorf("%s: refused, but the rest of the write landed: %s", name, row(companion))
						}
						if want {
							allowed++
						}
					}
				}
			}
		}
	}
	if allowed == 0 || allowed == cells {
		t.Fatalf("%d of %d cells allowed: the walk judged nothing", allowed, cells)
	}
	// Every allowed write kept the counters with the rows; no refused one moved them.
	got, err := s.LedgerCounts(ctx, "j", gen, 0)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT state, count(*) FROM job_ledger WHERE job_name = 'j' AND generation = $1 GROUP BY state`, gen)
	if err != nil {
		t.Fatal(err)
	}
	actual := map[bt.LedgerState]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			t.Fatal(err)
		}
		actual[bt.LedgerState(st)] = n
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for st, n := range actual {
		if got[st] != n {
			t.Errorf("generation counts %v, ledger rows by state %v", got, actual)
			break
		}
	}
	if len(got) != len(actual) {
		t.Errorf("generation counts %v, ledger rows by state %v", got, actual)
	}
	// Under a lost lease a write is refused by its fence, whatever the table says of its rows.
	seed("stale", bt.LedgerConfirmed, f.RunID)
	stale := store.Fence{RunID: f.RunID, Token: "other"}
	for _, batch := range []bool{false, true} {
		ls := []store.LedgerWrite{{Target: "stale", Step: "pay", State: bt.LedgerSkipped, Kind: store.WriteSkip, IdempotencyKey: "kstale"}}
		if batch {
			ls = append(ls, store.LedgerWrite{Target: "stale2", Step: "pay", State: bt.LedgerSkipped, Kind: store.WriteSkip, IdempotencyKey: "kstale2"})
		}
		w := &store.ItemsWrite{JobName: "j", Generation: gen, Ledger: ls}
		if _, _, err := s.WriteItems(ctx, stale, w, nil); bt.CodeOf(err) != bt.CodeLeaseLost {
			t.Errorf("a refused transition under a lost lease (batch %v) returned %v, want %s", batch, err, bt.CodeLeaseLost)
		}
	}
	t.Logf("%d cells walked, %d allowed", cells, allowed)
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// testWriteKindMustFitState checks that an item write whose kind does not fit the state it
// writes (an intent that is not IN_FLIGHT, a skip that is not SKIPPED, a result that is, a
// resolution, which is no item write) is refused as INVALID_INPUT before anything is sent.
func testWriteKindMustFitState(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s, f, gen := itemsFixture(t, open)
	for _, l := range []store.LedgerWrite{
		{Target: "a", Kind: store.WriteIntent, State: bt.LedgerConfirmed},
		{Target: "b", Kind: store.WriteSkip, State: bt.LedgerTransient},
		{Target: "c", Kind: store.WriteQuarantine, State: bt.LedgerConfirmed},
		{Target: "d", Kind: store.WriteResult, State: bt.LedgerInFlight},
		{Target: "e", Kind: store.WriteFail, State: bt.LedgerSkipped},
		{Target: "f", Kind: store.WriteResolve, State: bt.LedgerConfirmed},
		{Target: "g", Kind: "REDO", State: bt.LedgerConfirmed},
	} {
		l.IdempotencyKey = "k" + l.Target
		w := &store.ItemsWrite{JobName: "j", Generation: gen, Ledger: []store.LedgerWrite{l}}
		if _, _, err := s.WriteItems(ctx, f, w, nil); bt.CodeOf(err) != bt.CodeInvalidInput {
			t.Errorf("%s write of %s returned %v, want %s", l.Kind, l.State, err, bt.CodeInvalidInput)
		}
	}
	var n int
	if err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM job_ledger`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("refused writes left %d ledger rows", n)
	}
}
