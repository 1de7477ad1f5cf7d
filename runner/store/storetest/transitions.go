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
	s, f, gen := itemsFixture(t, open)
	checkTransitionPromise(t)
	walk := &transitionWalk{t: t, ctx: context.Background(), s: s, f: f, gen: gen}
	cells, allowed := 0, 0
	for _, c := range transitionCells() {
		cells++
		if walk.try(c, fmt.Sprintf("t%d", cells)) {
			allowed++
		}
	}
	if allowed == 0 || allowed == cells {
		t.Fatalf("%d of %d cells allowed: the walk judged nothing", allowed, cells)
	}
	walk.checkCounts()
	walk.checkFenceFirst()
	t.Logf("%d cells walked, %d allowed", cells, allowed)
}

// otherRun is a run that is not the writer's.
const otherRun = 1 << 40

// transitionWrites is what each kind of write writes.
var transitionWrites = map[store.WriteKind]bt.LedgerState{
	store.WriteIntent: bt.LedgerInFlight, store.WriteResult: bt.LedgerConfirmed, store.WriteSkip: bt.LedgerSkipped,
	store.WriteFail: bt.LedgerValidationRejected, store.WriteQuarantine: bt.LedgerAmbiguous, store.WriteResolve: bt.LedgerConfirmed,
}

// checkTransitionPromise checks the promise the table keeps: out of CONFIRMED,
// AMBIGUOUS_EFFECT and IN_FLIGHT a job's writes move a target only by settling its own
// intent, quarantine, resolution, or a replay whose scope names the state.
func checkTransitionPromise(t *testing.T) {
	t.Helper()
	for _, from := range []bt.LedgerState{bt.LedgerConfirmed, bt.LedgerAmbiguous, bt.LedgerInFlight} {
		for _, kind := range store.WriteKinds {
			r := store.Transition(from, kind)
			exempt := from == bt.LedgerAmbiguous && kind == store.WriteResolve || from == bt.LedgerInFlight && kind == store.WriteQuarantine
			if !exempt && r != store.Refused && r != store.InScope && !(r == store.OwnIntent && from == bt.LedgerInFlight) {
				t.Errorf("the table lets a %s write move a %s target (%s)", kind, from, r)
			}
		}
	}
}

// transitionCell is one cell of the walk: a row in state from (none when empty), written by
// kind through path, by the run whose intent the row holds (own) or another, with a replay
// scope naming from or not.
type transitionCell struct {
	from   bt.LedgerState
	kind   store.WriteKind
	own    bool
	scoped bool
	path   string // single, batch, known, fresh or resolve
}

func (c transitionCell) name() string {
	return fmt.Sprintf("%s/%s/own=%v/scoped=%v/%s", c.from, c.kind, c.own, c.scoped, c.path)
}

// allowed reports whether the table lets the cell's write land.
func (c transitionCell) allowed() bool {
	rule := store.Transition(c.from, c.kind)
	return c.from == "" || rule == store.Allowed || rule == store.OwnIntent && c.own || rule == store.InScope && c.scoped
}

// transitionCells lists every cell of the walk, in the order it takes them.
func transitionCells() []transitionCell {
	var cells []transitionCell
	for _, from := range append([]bt.LedgerState{""}, store.LedgerStates...) {
		for _, kind := range store.WriteKinds {
			for _, own := range []bool{true, false} {
				if !own && from != bt.LedgerInFlight {
					continue // whose row it is matters only to an intent
				}
				for _, scoped := range []bool{true, false} {
					for _, path := range transitionPaths(from, kind) {
						cells = append(cells, transitionCell{from: from, kind: kind, own: own, scoped: scoped, path: path})
					}
				}
			}
		}
	}
	return cells
}

// transitionPaths lists the statements a write of kind can take to a row in state from:
// none for a resolution of no row, and no compare-and-set on a known state without a row.
func transitionPaths(from bt.LedgerState, kind store.WriteKind) []string {
	switch {
	case from == "" && kind == store.WriteResolve:
		return nil // nothing to resolve
	case from == "":
		return []string{"single", "batch", "fresh"}
	case kind == store.WriteResolve:
		return []string{"resolve"}
	}
	return []string{"single", "batch", "known", "fresh"}
}

// transitionWalk walks the cells against one store, in one job generation.
type transitionWalk struct {
	t   *testing.T
	ctx context.Context
	s   DB
	f   store.Fence
	gen int64
}

// seed gives target a ledger row in state, owned by runID, and counts it.
func (w *transitionWalk) seed(target string, state bt.LedgerState, runID int64) {
	w.t.Helper()
	if _, err := w.s.Pool.Exec(w.ctx, `WITH l AS (
			INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, external, run_id, last_error)
			VALUES ('j', $1, $2, 'pay', $3, 1, 'k' || $2, true, $4, 'seeded')
		)
		INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n) VALUES ('j', $1, 0, $3, 1)
		ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + 1`, w.gen, target, string(state), runID); err != nil {
		w.t.Fatal(err)
	}
}

// row describes target's ledger row, every column a write could change, or "none".
func (w *transitionWalk) row(target string) string {
	w.t.Helper()
	var out string
	err := w.s.Pool.QueryRow(w.ctx, `SELECT COALESCE((SELECT format('%s attempt %s run %s error %s effect %s evidence %s updated %s', state, attempt, run_id,
		last_error, effect_ref, evidence_ref, updated_at) FROM job_ledger WHERE job_name = 'j' AND generation = $1 AND target_key = $2), 'none')`,
		w.gen, target).Scan(&out)
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// try seeds target for cell c, writes it, fails the test unless the store did what the table
// says, and reports whether the table allows the write.
func (w *transitionWalk) try(c transitionCell, target string) bool {
	t := w.t
	name, want := c.name(), c.allowed()
	companion := "c" + target
	runID := w.f.RunID
	if !c.own {
		runID = otherRun
	}
	if c.from != "" {
		w.seed(target, c.from, runID)
	}
	before := w.row(target)
	err := w.write(c, target, companion)
	after := w.row(target)
	switch {
	case want && err != nil:
		t.Errorf("%s: allowed by the table, refused: %v", name, err)
	case want && !startsWith(after, string(transitionWrites[c.kind])+" "):
		t.Errorf("%s: allowed, but the row is %s, want %s", name, after, transitionWrites[c.kind])
	case !want && err == nil:
		t.Errorf("%s: refused by the table, but the write landed: %s → %s", name, before, after)
	case !want && c.kind != store.WriteResolve && bt.CodeOf(err) != bt.CodeLedgerTransition:
		t.Errorf("%s: refused with %v, want %s", name, err, bt.CodeLedgerTransition)
	case !want && c.kind == store.WriteResolve && bt.CodeOf(err) != bt.CodeConflict:
		t.Errorf("%s: resolution refused with %v, want %s", name, err, bt.CodeConflict)
	case !want && after != before:
		t.Errorf("%s: refused, but the row moved: %s → %s", name, before, after)
	case !want && w.row(companion) != "none":
		t.Errorf("%s: refused, but the rest of the write landed: %s", name, w.row(companion))
	}
	return want
}

// write makes cell c's write to target; the batch paths carry a new companion row with it.
func (w *transitionWalk) write(c transitionCell, target, companion string) error {
	if c.kind == store.WriteResolve {
		var id int64
		if err := w.s.Pool.QueryRow(w.ctx, `SELECT id FROM job_ledger WHERE job_name = 'j' AND target_key = $1`, target).Scan(&id); err != nil {
			w.t.Fatal(err)
		}
		ev := "ev"
		_, err := w.s.ResolveAmbiguous(w.ctx, id, bt.LedgerConfirmed, nil, &ev, "checked", store.AuditRecord{Actor: "t", Action: "resolve", Target: target})
		return err
	}
	l := store.LedgerWrite{Target: target, Step: "pay", State: transitionWrites[c.kind], Kind: c.kind, Attempt: 1,
		IdempotencyKey: "k" + target, External: true, CountInRun: c.kind != store.WriteIntent}
	iw := &store.ItemsWrite{JobName: "j", Generation: w.gen, Ledger: []store.LedgerWrite{l}}
	switch c.path {
	case "batch":
		iw.Ledger = append(iw.Ledger, store.LedgerWrite{Target: companion, Step: "pay", State: bt.LedgerConfirmed,
			Attempt: 1, IdempotencyKey: "k" + companion, External: true, CountInRun: true, Fresh: true})
	case "known":
		iw.Ledger[0].Prior = c.from
		iw.Ledger = append(iw.Ledger, store.LedgerWrite{Target: companion, Step: "pay", State: bt.LedgerConfirmed,
			Attempt: 1, IdempotencyKey: "k" + companion, External: true, CountInRun: true, Fresh: true})
	case "fresh":
		iw.Ledger[0].Fresh = true
	}
	if c.scoped && c.from != "" {
		iw.Scope = []bt.LedgerState{c.from}
	}
	_, _, err := w.s.WriteItems(w.ctx, w.f, iw, nil)
	return err
}

// checkCounts checks that every allowed write kept the counters with the rows and no
// refused one moved them.
func (w *transitionWalk) checkCounts() {
	t := w.t
	got, err := w.s.LedgerCounts(w.ctx, "j", w.gen, 0)
	if err != nil {
		t.Fatal(err)
	}
	actual := LedgerRows(t, w.s.Pool, w.gen)
	for st, n := range actual {
		if got[st] != n {
			t.Errorf("generation counts %v, ledger rows by state %v", got, actual)
			break
		}
	}
	if len(got) != len(actual) {
		t.Errorf("generation counts %v, ledger rows by state %v", got, actual)
	}
}

// checkFenceFirst checks that under a lost lease a write is refused by its fence, whatever
// the table says of its rows.
func (w *transitionWalk) checkFenceFirst() {
	w.seed("stale", bt.LedgerConfirmed, w.f.RunID)
	stale := store.Fence{RunID: w.f.RunID, Token: "other"}
	for _, batch := range []bool{false, true} {
		ls := []store.LedgerWrite{{Target: "stale", Step: "pay", State: bt.LedgerSkipped, Kind: store.WriteSkip, IdempotencyKey: "kstale"}}
		if batch {
			ls = append(ls, store.LedgerWrite{Target: "stale2", Step: "pay", State: bt.LedgerSkipped, Kind: store.WriteSkip, IdempotencyKey: "kstale2"})
		}
		iw := &store.ItemsWrite{JobName: "j", Generation: w.gen, Ledger: ls}
		if _, _, err := w.s.WriteItems(w.ctx, stale, iw, nil); bt.CodeOf(err) != bt.CodeLeaseLost {
			w.t.Errorf("a refused transition under a lost lease (batch %v) returned %v, want %s", batch, err, bt.CodeLeaseLost)
		}
	}
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
