package demo

import (
	"fmt"
	"math"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// ProviderLimit is a fake outside system's own limit, the one it enforces whatever its callers
// do: a token bucket of Rate calls per second holding Burst tokens, and at most Concurrency
// calls in flight. A zero field sets no limit of its kind; Burst 0 means 1 when Rate is set.
type ProviderLimit struct {
	Rate        float64 `json:"rate,omitempty"`
	Burst       int     `json:"burst,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
}

// maxRecordedCalls bounds the arrival times a limit keeps: over 10 minutes at 1000 calls/s.
// Past it the oldest half is dropped.
const maxRecordedCalls = 1 << 20

// validate refuses a limit that is negative, not a number or infinite.
func (l ProviderLimit) validate() error {
	switch {
	case math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate < 0:
		return &bt.Error{Code: bt.CodeInvalidInput, Field: "rate", Message: fmt.Sprintf("rate must be a finite number of calls per second, 0 or more, not %v", l.Rate)}
	case l.Burst < 0:
		return &bt.Error{Code: bt.CodeInvalidInput, Field: "burst", Message: fmt.Sprintf("burst must be 0 or more, not %d", l.Burst)}
	case l.Concurrency < 0:
		return &bt.Error{Code: bt.CodeInvalidInput, Field: "concurrency", Message: fmt.Sprintf("concurrency must be 0 or more, not %d", l.Concurrency)}
	}
	return nil
}

// trueLimit enforces a ProviderLimit and records what callers did: when every call arrived,
// how many were in flight at most, and how many the limit refused. Its methods are safe for
// concurrent use.
type trueLimit struct {
	mu       sync.Mutex
	lim      ProviderLimit
	tokens   float64   // the bucket's content when last refilled
	refilled time.Time // when tokens was last brought up to date
	admitted int       // calls let through and not yet answered
	inFlight int       // every call arrived and not yet answered, refused ones included
	peak     int       // the most inFlight has been since the last reset
	limited  int64     // calls answered 429 by the limit
	calls    []time.Time
	refused  []time.Time
}

// set replaces the limit, for calls that arrive afterwards. A new or raised bucket starts full.
func (t *trueLimit) set(l ProviderLimit) error {
	if err := l.validate(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lim = l
	t.tokens = float64(l.burst())
	t.refilled = time.Time{}
	return nil
}

func (l ProviderLimit) burst() int {
	if l.Rate > 0 && l.Burst <= 0 {
		return 1
	}
	return l.Burst
}

func (t *trueLimit) limit() ProviderLimit {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lim
}

// admit records a call arriving at now and judges it. A call the limit lets through holds a
// place until done is called; a refused one gets retryAfter, the wait before the limit could
// let a call through, in whole seconds (at least 1) as Retry-After has it, and must call done
// too once it has been answered.
func (t *trueLimit) admit(now time.Time) (ok bool, retryAfter time.Duration, done func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls = appendBounded(t.calls, now)
	t.inFlight++
	t.peak = max(t.peak, t.inFlight)
	ok, retryAfter = t.take(now)
	if !ok {
		t.limited++
		t.refused = appendBounded(t.refused, now)
		return false, retryAfter, sync.OnceFunc(t.leave)
	}
	t.admitted++
	return true, 0, sync.OnceFunc(func() {
		t.mu.Lock()
		t.admitted--
		t.mu.Unlock()
		t.leave()
	})
}

// take spends a token and a place in flight for a call at now, or reports how long until the
// limit lets one through. The caller holds t.mu.
func (t *trueLimit) take(now time.Time) (bool, time.Duration) {
	if t.lim.Concurrency > 0 && t.admitted >= t.lim.Concurrency {
		return false, time.Second // a place frees when a call ends; when is unknown
	}
	if t.lim.Rate <= 0 {
		return true, 0
	}
	capacity := float64(t.lim.burst())
	switch {
	case t.refilled.IsZero():
		t.refilled = now
	case now.After(t.refilled):
		t.tokens = min(capacity, t.tokens+now.Sub(t.refilled).Seconds()*t.lim.Rate)
		t.refilled = now
	}
	if t.tokens < 1 {
		wait := (1 - t.tokens) / t.lim.Rate
		return false, time.Duration(max(math.Ceil(wait), 1)) * time.Second
	}
	t.tokens--
	return true, 0
}

// appendBounded appends at to times, first dropping the oldest half of a full record.
func appendBounded(times []time.Time, at time.Time) []time.Time {
	if len(times) >= maxRecordedCalls {
		times = append(times[:0], times[len(times)/2:]...)
	}
	return append(times, at)
}

func (t *trueLimit) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
}

// LimitRecord is what a fake outside system saw of its callers since its records were last
// reset.
type LimitRecord struct {
	// Calls is the arrival time of every call, refused ones included, oldest first (the most
	// recent million at most).
	Calls []time.Time `json:"calls"`
	// Refused is the arrival time of every call the limit answered 429, oldest first (the
	// most recent million at most).
	Refused []time.Time `json:"refused"`
	// PeakInFlight is the most calls that were in flight at once, counted from arrival to
	// answer, refused ones included: it measures the callers, not the limit.
	PeakInFlight int `json:"peakInFlight"`
	// InFlight is the calls in flight now.
	InFlight int `json:"inFlight"`
	// Limited counts the calls the limit answered 429.
	Limited int64 `json:"limited"`
}

func (t *trueLimit) record() LimitRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	return LimitRecord{Calls: append([]time.Time(nil), t.calls...), Refused: append([]time.Time(nil), t.refused...),
		PeakInFlight: t.peak, InFlight: t.inFlight, Limited: t.limited}
}

// reset forgets the recorded calls and 429s and starts the peak over from the calls in flight.
func (t *trueLimit) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls, t.refused = nil, nil
	t.peak = t.inFlight
	t.limited = 0
}
