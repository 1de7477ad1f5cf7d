package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	bt "github.com/baton-run/baton/runner/batontype"
)

// classified wraps an error with the ledger state it should leave its target in.
type classified struct {
	state bt.LedgerState
	err   error
}

func (c *classified) Error() string { return c.err.Error() }
func (c *classified) Unwrap() error { return c.err }

// classify wraps err with the ledger state it should leave its target in; a nil err becomes
// the state's name.
func classify(state bt.LedgerState, err error) error {
	if err == nil {
		err = errors.New(strings.ToLower(string(state)))
	}
	return &classified{state: state, err: err}
}

// Transient marks err as passing: no effect happened and a retry may succeed (a 429 or 503
// returned before the outside system applied anything).
func Transient(err error) error { return classify(bt.LedgerTransient, err) }

// throttled is a pushback from a downstream: a 429 or 503 answered before anything was
// applied, with the Retry-After it gave (0 when none).
type throttled struct {
	retryAfter time.Duration
	err        error
}

func (t *throttled) Error() string { return t.err.Error() }
func (t *throttled) Unwrap() error { return t.err }

// Throttled marks err as the item's downstream pushing back (a 429, or a 503 with
// Retry-After) before it applied anything: TRANSIENT, and it slows the downstream for every
// caller in the cluster. retryAfter is the wait the downstream asked for; 0 when it gave none.
func Throttled(err error, retryAfter time.Duration) error {
	if err == nil {
		err = errors.New("throttled by the downstream")
	}
	return Transient(&throttled{retryAfter: max(retryAfter, 0), err: err})
}

// ThrottledBy reports whether err is a pushback (Throttled), and the Retry-After it carries.
func ThrottledBy(err error) (retryAfter time.Duration, ok bool) {
	var t *throttled
	if errors.As(err, &t) {
		return t.retryAfter, true
	}
	return 0, false
}

// notCalled is an item whose call was never made: its downstream gave it no turn before the
// lease's end, or held it. TRANSIENT, retried without counting as an attempt, and no call for
// the stop conditions.
type notCalled struct{ err error }

func (n *notCalled) Error() string { return n.err.Error() }
func (n *notCalled) Unwrap() error { return n.err }

// NotCalled marks err as the reason an item's call was not made at all.
func NotCalled(err error) error { return Transient(&notCalled{err}) }

func isNotCalled(err error) bool {
	var n *notCalled
	return errors.As(err, &n)
}

// Rejected marks err as the outside system refusing the input; retrying the same input fails
// the same way.
func Rejected(err error) error { return classify(bt.LedgerValidationRejected, err) }

// Conflict marks err as a state conflict (already changed by someone else).
func Conflict(err error) error { return classify(bt.LedgerConflict, err) }

// Ambiguous marks err as "the effect may or may not have happened" (a timeout after the
// request was sent). The target is quarantined until reconciled.
func Ambiguous(err error) error { return classify(bt.LedgerAmbiguous, err) }

// Policy marks err as a refusal by policy (a limit, a block list).
func Policy(err error) error { return classify(bt.LedgerPolicyBlocked, err) }

// ClassOf returns the ledger state an item error leaves its target in, applying the default
// rules: an explicit class wins; otherwise an error (or a deadline) from an external-effect
// step is AMBIGUOUS_EFFECT — the call may have landed — and anything else TRANSIENT.
func ClassOf(err error, external bool) bt.LedgerState {
	var c *classified
	if errors.As(err, &c) {
		return c.state
	}
	if external {
		return bt.LedgerAmbiguous
	}
	return bt.LedgerTransient
}

// panicError is what a panicking job or item function becomes.
type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// errorSignature normalises an error message (digits and hex runs folded) so "the same
// failure" is recognised across attempts whose messages differ only in ids or timings.
func errorSignature(state bt.LedgerState, err error) string {
	msg := err.Error()
	var b strings.Builder
	lastFolded := false
	for _, r := range msg {
		if unicode.IsDigit(r) {
			if !lastFolded {
				b.WriteRune('#')
			}
			lastFolded = true
			continue
		}
		lastFolded = false
		b.WriteRune(r)
	}
	sum := sha256.Sum256([]byte(string(state) + "|" + b.String()))
	return hex.EncodeToString(sum[:8])
}

func isDeadline(ctx context.Context, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil
}

// isClassified reports whether err carries an explicit class from Transient, Rejected, ...
func isClassified(err error) bool {
	var c *classified
	return errors.As(err, &c)
}
