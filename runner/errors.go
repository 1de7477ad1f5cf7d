package runner

import (
	"strconv"
	"strings"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/pipeline"
)

// The error helpers: how a job classifies the failure of an item, and what a client of the
// API may read of an error.

// Transient marks err as passing: no effect happened and a retry may succeed (a 429 or 503
// returned before the outside system applied anything).
func Transient(err error) error { return pipeline.Transient(err) }

// Throttled marks err as the item's downstream pushing back (a 429, or a 503 with
// Retry-After) before it applied anything: TRANSIENT, and it slows that downstream for every
// caller in the cluster (Item.Downstream). retryAfter is the wait the downstream asked for,
// 0 when it gave none; RetryAfter parses the header.
func Throttled(err error, retryAfter time.Duration) error { return pipeline.Throttled(err, retryAfter) }

// RetryAfter parses an HTTP Retry-After header, in seconds or as a date; 0 when it is empty or
// unreadable, or names a time already past.
func RetryAfter(header string, now time.Time) time.Duration {
	header = strings.TrimSpace(header)
	if header == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(header, 64); err == nil {
		if s <= 0 || s > 86400 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	// An HTTP date (RFC 9110): IMF-fixdate, or the obsolete RFC 850 and asctime forms.
	for _, layout := range []string{"Mon, 02 Jan 2006 15:04:05 GMT", "Monday, 02-Jan-06 15:04:05 GMT", time.ANSIC} {
		if t, err := time.Parse(layout, header); err == nil {
			if t.After(now) {
				return t.Sub(now)
			}
			return 0
		}
	}
	return 0
}

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
