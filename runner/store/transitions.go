package store

import bt "github.com/baton-run/baton/runner/batontype"

// The ledger state machine. A target's ledger row only moves forward: once CONFIRMED,
// AMBIGUOUS_EFFECT or IN_FLIGHT, no write of a job moves it, except the one that settles the
// intent it wrote itself (IN_FLIGHT → its call's result), quarantine (IN_FLIGHT →
// AMBIGUOUS_EFFECT), reconcile and manual resolution (AMBIGUOUS_EFFECT → CONFIRMED or
// NOT_APPLIED), and a replay whose approved scope names that state. The table below is the
// one place this is written down in code: every implementation judges the rows its item
// writes would change by it, storetest walks every cell of it against the implementation, and
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
	// to the run's own intents.
	WriteQuarantine WriteKind = "QUARANTINE"
	// WriteResolve is reconcile or manual resolution (Ledger.ResolveAmbiguous): AMBIGUOUS_EFFECT
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
