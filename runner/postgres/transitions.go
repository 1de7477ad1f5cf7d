package postgres

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// allowedSQL returns a boolean SQL expression saying whether a write of kind (an SQL text
// expression) may move a row in state from (an SQL text expression), built from the table.
// own is an SQL boolean: the row is the intent this write's attempt wrote; scope an SQL text[]
// of the states the run's replay scope names (empty outside replays). Never NULL. A CASE on
// the kind over lists of constants: a few comparisons per row.
func allowedSQL(from, kind, own, scope string) string {
	var b strings.Builder
	b.WriteString("COALESCE(CASE " + kind)
	for _, k := range store.WriteKinds {
		var conds []string
		if in := statesWith(k, store.Allowed); in != "" {
			conds = append(conds, from+" IN ("+in+")")
		}
		if in := statesWith(k, store.OwnIntent); in != "" {
			conds = append(conds, "("+own+" AND "+from+" IN ("+in+"))")
		}
		if in := statesWith(k, store.InScope); in != "" {
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
	for _, k := range store.WriteKinds {
		if in := statesWith(k, store.OwnIntent); in != "" {
			fmt.Fprintf(&b, " WHEN '%s' THEN %s NOT IN (%s) OR %s", k, from, in, own)
		}
	}
	b.WriteString(" ELSE true END, false)")
	return b.String()
}

// statesWith lists, quoted for SQL, the states whose cell for kind is rule.
func statesWith(kind store.WriteKind, rule store.Rule) string {
	var out []string
	for _, st := range store.LedgerStates {
		if store.Transition(st, kind) == rule {
			out = append(out, "'"+string(st)+"'")
		}
	}
	return strings.Join(out, ", ")
}

// knows reports whether the table lets a write of kind move a row the caller knows is in
// state from, under a replay scope naming scope — taking an OwnIntent cell as allowed, which
// the statement then checks (ownGuardSQL).
func knows(from bt.LedgerState, kind store.WriteKind, scope []bt.LedgerState) bool {
	switch store.Transition(from, kind) {
	case store.Allowed, store.OwnIntent:
		return true
	case store.InScope:
		for _, s := range scope {
			if s == from {
				return true
			}
		}
	}
	return false
}

// kinds returns the rows' write kinds, for the statements' kind column.
func kindsArg(w *store.ItemsWrite) []string {
	out := make([]string, len(w.Ledger))
	for i := range w.Ledger {
		out[i] = string(w.Ledger[i].WriteKind())
	}
	return out
}

// scopeArg returns the replay scope's states as the statements take them: never NULL.
func scopeArg(w *store.ItemsWrite) []string {
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
