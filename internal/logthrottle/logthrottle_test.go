package logthrottle

import (
	"testing"
	"time"
)

// TestLimiter: the first occurrence passes, repeats within the interval do not, the first
// after it passes with the count of those held back; keys are apart, and Reset lets the next
// one through at once.
func TestLimiter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(time.Minute, func() time.Time { return now })
	step := func(d time.Duration, key string, wantOK bool, wantN int) {
		t.Helper()
		now = now.Add(d)
		if ok, n := l.Allow(key); ok != wantOK || n != wantN {
			t.Errorf("at %v, Allow(%q) = %v, %d; want %v, %d", now.Format(time.TimeOnly), key, ok, n, wantOK, wantN)
		}
	}
	step(0, "a", true, 0)
	step(time.Second, "a", false, 0)
	step(20*time.Second, "a", false, 0)
	step(0, "b", true, 0) // another key
	step(38*time.Second, "a", false, 0)
	step(time.Second, "a", true, 3) // a minute after the first: the three held back
	step(time.Second, "a", false, 0)
	l.Reset("a")
	step(time.Second, "a", true, 0)
	step(2*time.Minute, "b", true, 0)
}
