package postgres

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/baton-run/baton/runner/store"
)

// listQuery builds a list query holding only the predicates its filter uses, and runs it with a
// plan made for its parameter values.
//
// A catch-all predicate such as ($1 = ” OR job_name = $1) serves every filter from one
// statement, but pgx prepares and caches every statement, and after five executions PostgreSQL
// may switch a prepared statement to a generic plan: one that must be right for any parameter
// value, so it cannot use the index the filter needs and walks the table instead. Built per
// filter shape, each shape is its own statement text with only index-friendly predicates.
//
// That alone is not enough: a generic plan also guesses the selectivity of "status = $1" or
// "job_name = $1" without the value, and on skewed data (one RUNNING run among 100k, a job
// whose few rows are the newest) it picks the walk of the primary key in id order, filtering
// until it has a page: a scan of the table for a rare value. So list queries run unprepared
// (QueryExecModeExec: one round trip, planned with the actual values each time), which costs a
// fraction of a millisecond of planning and keeps each page O(page).
type listQuery struct {
	conds []string
	args  []any
}

// param adds v as the next positional parameter and returns its placeholder.
func (q *listQuery) param(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// where adds a predicate: each %s of format becomes the placeholder of the next of args.
func (q *listQuery) where(format string, args ...any) {
	ph := make([]any, len(args))
	for i, a := range args {
		ph[i] = q.param(a)
	}
	q.conds = append(q.conds, fmt.Sprintf(format, ph...))
}

// oneOf adds "column is one of values" when values is not empty: an equality for one value
// (so an index on (…, column, id) also yields the order), = ANY for several.
func (q *listQuery) oneOf(column string, values []string) {
	switch len(values) {
	case 0:
	case 1:
		q.where(column+" = %s", values[0])
	default:
		q.where(column+" = ANY(%s::text[])", values)
	}
}

// sql returns selectFrom with the predicates, the order and a LIMIT parameter.
func (q *listQuery) sql(selectFrom, orderBy string, limit int) string {
	var b strings.Builder
	b.WriteString(selectFrom)
	for i, c := range q.conds {
		if i == 0 {
			b.WriteString(" WHERE ")
		} else {
			b.WriteString(" AND ")
		}
		b.WriteString(c)
	}
	b.WriteString(" ORDER BY " + orderBy + " LIMIT " + q.param(limit))
	return b.String()
}

// rows returns the ledger rows as the parallel arrays the batch statements unnest: target,
// step, state, attempt, idempotency key, input hash, input changed, external, effect,
// evidence, error, error signature, same-error count.
func ledgerArrays(w *store.ItemsWrite) []any {
	n := len(w.Ledger)
	var (
		targets, steps, states, keys, hashes = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		attempts, same                       = make([]int32, n), make([]int32, n)
		changed, ext                         = make([]bool, n), make([]bool, n)
		effects, evidences, errs, sigs       = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	)
	for i, l := range w.Ledger {
		targets[i], steps[i], states[i], keys[i], hashes[i] = l.Target, l.Step, string(l.State), l.IdempotencyKey, l.InputHash
		attempts[i], same[i] = int32(l.Attempt), int32(l.SameErrorCount)
		changed[i], ext[i] = l.InputChanged, l.External
		effects[i], evidences[i], errs[i], sigs[i] = l.EffectRef, l.EvidenceRef, l.LastError, l.ErrorSig
	}
	return []any{targets, steps, states, attempts, keys, hashes, changed, ext, effects, evidences, errs, sigs, same}
}

// likePrefix returns the LIKE pattern matching strings that begin with prefix.
func likePrefix(prefix string) string { return likeLiteral(prefix) + "%" }

// likeContaining returns the LIKE pattern matching strings that contain s.
func likeContaining(s string) string { return "%" + likeLiteral(s) + "%" }

// likeLiteral escapes s so that it matches itself in a LIKE pattern (the default escape, \).
func likeLiteral(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// strs converts a slice of string-based values to []string.
func strs[T ~string](in []T) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}
