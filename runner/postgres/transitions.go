package postgres

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	bt "github.com/baton-run/baton/runner/batontype"
)

// The ledger state machine. A target's ledger row only moves forward: once CONFIRMED,
// AMBIGUOUS_EFFECT or IN_FLIGHT, no write of a job moves it, except the one that settles the
// intent it wrote itself (IN_FLIGHT → its call's result), quarantine (IN_FLIGHT →
// AMBIGUOUS_EFFECT), reconcile and manual resolution (AMBIGUOUS_EFFECT → CONFIRMED or
// NOT_APPLIED), and a replay whose approved scope names that state. The table below is the
// one place this is written down in code: the fenced item statements judge every row they
// would change by it (allowedSQL, or knows and ownGuardSQL for a row whose state the caller
// knows), the store-level test walks every cell of it against PostgreSQL, and
// docs/architecture.md ("Ledger state machine") shows it.

// WriteKind says what a ledger write is, which is what the transition table is judged by.
type WriteKind string

// Write kinds.
const (
	// WriteResult records the outcome of a call (CONFIRMED or a failure state): after the
	// call's own intent for an external item, straight away for an internal one. The zero
	// Kind of a LedgerWrite is WriteResult.
	WriteResult WriteKind = "RESULT"
	// WriteIntent records IN_FLIGHT before an external call.
	WriteIntent WriteKind = "INTENT"
	// WriteSkip is Run.Skip: SKIPPED, nothing to do.
	WriteSkip WriteKind = "SKIP"
	// WriteFail is Run.Fail: a failure state without a call.
	WriteFail WriteKind = "FAIL"
	// WriteQuarantine turns an intent found IN_FLIGHT (an earlier attempt's, whose result
	// never landed) into AMBIGUOUS_EFFECT; the end of a run and the recoverer do the same
	// to the run's own intents (markAmbiguous).
	WriteQuarantine WriteKind = "QUARANTINE"
	// WriteResolve is reconcile or manual resolution (ResolveAmbiguous): AMBIGUOUS_EFFECT
	// to CONFIRMED or NOT_APPLIED. Not an item write.
	WriteResolve WriteKind = "RESOLVE"
)

// WriteKinds lists every write kind, in the table's column order.
var WriteKinds = []WriteKind{WriteIntent, WriteResult, WriteSkip, WriteFail, WriteQuarantine, WriteResolve}

// Rule is one cell of the transition table.
type Rule string

// Rules.
const (
	// Allowed: the write moves the row.
	Allowed Rule = "yes"
	// Refused: the write is refused with LEDGER_TRANSITION_REFUSED and the row stays.
	Refused Rule = "no"
	// OwnIntent: allowed only on the intent this very attempt wrote (same run, same attempt
	// number): the result of the call the intent was written for.
	OwnIntent Rule = "own intent"
	// InScope: allowed only in a replay whose approved scope names the row's state.
	InScope Rule = "in scope"
)

// LedgerStates lists every ledger state, in the table's row order.
var LedgerStates = []bt.LedgerState{bt.LedgerInFlight, bt.LedgerConfirmed, bt.LedgerAmbiguous, bt.LedgerSkipped,
	bt.LedgerTransient, bt.LedgerNotApplied, bt.LedgerValidationRejected, bt.LedgerConflict, bt.LedgerPolicyBlocked,
	bt.LedgerBugSuspected}

// transitions is the table: for a row in state (the key), what each kind of write may do.
// A target with no row yet may be written by any item write (it is inserted; nothing moves).
var transitions = func() map[bt.LedgerState]map[WriteKind]Rule {
	row := func(intent, result, skip, fail, quarantine, resolve Rule) map[WriteKind]Rule {
		return map[WriteKind]Rule{WriteIntent: intent, WriteResult: result, WriteSkip: skip, WriteFail: fail,
			WriteQuarantine: quarantine, WriteResolve: resolve}
	}
	open := row(Allowed, Allowed, Allowed, Allowed, Refused, Refused)     // retried by any run
	rejected := row(InScope, InScope, Allowed, Allowed, Refused, Refused) // retried by a replay naming it
	settled := row(InScope, InScope, Refused, Refused, Refused, Refused)  // done: never moved by a job
	return map[bt.LedgerState]map[WriteKind]Rule{
		bt.LedgerInFlight:           row(Refused, OwnIntent, Refused, Refused, Allowed, Refused),
		bt.LedgerConfirmed:          settled,
		bt.LedgerAmbiguous:          row(InScope, InScope, Refused, Refused, Refused, Allowed),
		bt.LedgerSkipped:            rejected,
		bt.LedgerTransient:          open,
		bt.LedgerNotApplied:         open,
		bt.LedgerValidationRejected: rejected,
		bt.LedgerConflict:           rejected,
		bt.LedgerPolicyBlocked:      rejected,
		bt.LedgerBugSuspected:       rejected,
	}
}()

// Transition returns the table's rule for a write of kind on a row in state from.
func Transition(from bt.LedgerState, kind WriteKind) Rule {
	if r, ok := transitions[from][kind]; ok {
		return r
	}
	return Refused
}

// allowedSQL returns a boolean SQL expression saying whether a write of kind (an SQL text
// expression) may move a row in state from (an SQL text expression), built from the table.
// own is an SQL boolean: the row is the intent this write's attempt wrote; scope an SQL text[]
// of the states the run's replay scope names (empty outside replays). Never NULL. A CASE on
// the kind over lists of constants: a few comparisons per row.
func allowedSQL(from, kind, own, scope string) string {
	var b strings.Builder
	b.WriteString("COALESCE(CASE " + kind)
	for _, k := range WriteKinds {
		var conds []string
		if in := statesWith(k, Allowed); in != "" {
			conds = append(conds, from+" IN ("+in+")")
		}
		if in := statesWith(k, OwnIntent); in != "" {
			conds = append(conds, "("+own+" AND "+from+" IN ("+in+"))")
		}
		if in := statesWith(k, InScope); in != "" {
			conds = append(conds, "("+from+" = ANY ("+scope+") AND "+from+" IN ("+in+"))")
		}
		if len(conds) == 0 {
			conds = []string{"false"}
		}
		fmt.Fprintf(&b, " WHEN '%s' THEN %s", k, strings.Join(conds, " OR "))
	}
	b.WriteString(" ELSE false END, false)")
	return b.String()
}

// ownGuardSQL returns the part of allowedSQL that only the database can judge, for a row whose
// state the caller knows and has judged by the table itself (knows): a cell that needs the
// row to be the writing attempt's own intent holds only if own does. Never NULL.
func ownGuardSQL(from, kind, own string) string {
	var b strings.Builder
	b.WriteString("COALESCE(CASE " + kind)
	for _, k := range WriteKinds {
		if in := statesWith(k, OwnIntent); in != "" {
			fmt.Fprintf(&b, " WHEN '%s' THEN %s NOT IN (%s) OR %s", k, from, in, own)
		}
	}
	b.WriteString(" ELSE true END, false)")
	return b.String()
}

// statesWith lists, quoted for SQL, the states whose cell for kind is rule.
func statesWith(kind WriteKind, rule Rule) string {
	var out []string
	for _, st := range LedgerStates {
		if Transition(st, kind) == rule {
			out = append(out, "'"+string(st)+"'")
		}
	}
	return strings.Join(out, ", ")
}

// knows reports whether the table lets a write of kind move a row the caller knows is in
// state from, under a replay scope naming scope — taking an OwnIntent cell as allowed, which
// the statement then checks (ownGuardSQL).
func knows(from bt.LedgerState, kind WriteKind, scope []bt.LedgerState) bool {
	switch Transition(from, kind) {
	case Allowed, OwnIntent:
		return true
	case InScope:
		for _, s := range scope {
			if s == from {
				return true
			}
		}
	}
	return false
}

// kind returns the write's kind, WriteResult when unset.
func (l *LedgerWrite) kind() WriteKind {
	if l.Kind == "" {
		return WriteResult
	}
	return l.Kind
}

// checkKinds refuses item writes whose kind is not an item write's or does not fit the state
// written: an intent writes IN_FLIGHT, a skip SKIPPED, a quarantine AMBIGUOUS_EFFECT, a result
// or a failure neither IN_FLIGHT nor SKIPPED.
func (w *ItemsWrite) checkKinds() error {
	for i := range w.Ledger {
		l := &w.Ledger[i]
		var ok bool
		switch l.kind() {
		case WriteIntent:
			ok = l.State == bt.LedgerInFlight
		case WriteSkip:
			ok = l.State == bt.LedgerSkipped
		case WriteQuarantine:
			ok = l.State == bt.LedgerAmbiguous
		case WriteResult, WriteFail:
			ok = l.State != bt.LedgerInFlight && l.State != bt.LedgerSkipped
		}
		if !ok {
			return bt.Errorf(bt.CodeInvalidInput, "a %s write of target %q step %q cannot write %s", l.kind(), l.Target, l.Step, l.State)
		}
	}
	return nil
}

// kinds returns the rows' write kinds, for the statements' kind column.
func (w *ItemsWrite) kinds() []string {
	out := make([]string, len(w.Ledger))
	for i := range w.Ledger {
		out[i] = string(w.Ledger[i].kind())
	}
	return out
}

// scopeArg returns the replay scope's states as the statements take them: never NULL.
func (w *ItemsWrite) scopeArg() []string {
	out := make([]string, len(w.Scope))
	for i, s := range w.Scope {
		out[i] = string(s)
	}
	return out
}

// refusal turns the database's refusal of a transition (baton_ledger_refused, BT422) into
// the coded error the job gets; any other error comes back as it is.
func refusal(err error) error {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "BT422" {
		return err
	}
	var how string
	switch bt.LedgerState(pgErr.Detail) {
	case bt.LedgerConfirmed:
		how = "its effect is done and is never undone or redone by a run"
	case bt.LedgerAmbiguous:
		how = "its effect is in doubt: settle it by reconcile or manual resolution first"
	case bt.LedgerInFlight:
		how = "a call for it may be under way or may have landed: the run's end or the recoverer makes it AMBIGUOUS_EFFECT, then reconcile or resolve it"
	default:
		how = "only a replay whose scope names " + pgErr.Detail + " calls it again"
	}
	return &bt.Error{Code: bt.CodeLedgerTransition, Message: pgErr.Message + ": " + how}
}
