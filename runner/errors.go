package runner

import (
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/pipeline"
)

// The error helpers: how a job classifies the failure of an item, and what a client of the
// API may read of an error.

// Transient marks err as passing: no effect happened and a retry may succeed (a 429 or 503
// returned before the outside system applied anything).
func Transient(err error) error { return pipeline.Transient(err) }

// Rejected marks err as the outside system refusing the input; retrying the same input fails
// the same way.
func Rejected(err error) error { return pipeline.Rejected(err) }

// Conflict marks err as a state conflict (already changed by someone else).
func Conflict(err error) error { return pipeline.Conflict(err) }

// Ambiguous marks err as "the effect may or may not have happened" (a timeout after the
// request was sent). The target is quarantined until reconciled.
func Ambiguous(err error) error { return pipeline.Ambiguous(err) }

// Policy marks err as a refusal by policy (a limit, a block list).
func Policy(err error) error { return pipeline.Policy(err) }

// ClassOf returns the ledger state an item error leaves its target in, applying the default
// rules: an explicit class wins; otherwise an error (or a deadline) from an external-effect
// step is AMBIGUOUS_EFFECT — the call may have landed — and anything else TRANSIENT.
func ClassOf(err error, external bool) bt.LedgerState { return pipeline.ClassOf(err, external) }

// What a client of the API may read of an error: the job's own message, never the text of
// the runner's machinery (SQL, connection strings, driver internals, panic values), which is
// logged under a short random reference instead. The rules are pipeline.PublicErrorText's.

// InternalMessage is the text that stands for an internal error logged under ref.
func InternalMessage(ref string) string { return pipeline.InternalMessage(ref) }

// NewErrorRef returns a short random reference for an internal error: eight hex digits, enough
// to find one log line among a day's.
func NewErrorRef() string { return pipeline.NewErrorRef() }
