package outbox_test

import (
	"testing"
	"time"

	"github.com/baton-run/baton/runner/internal/outbox"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	base, maxWait := time.Second, 10*time.Second
	for _, tc := range []struct {
		attempt  int
		jitter   float64
		min, max time.Duration
	}{
		{1, 0, 500 * time.Millisecond, 500 * time.Millisecond},
		{1, 0.999, 500 * time.Millisecond, time.Second},
		{2, 0, time.Second, time.Second},
		{3, 0.5, 3 * time.Second, 3 * time.Second},
		{4, 0.999, 4 * time.Second, 8 * time.Second},
		{5, 0, 5 * time.Second, 5 * time.Second}, // capped at 10s, half of it at least
		{50, 0.999, 5 * time.Second, 10 * time.Second},
	} {
		if got := outbox.Backoff(tc.attempt, base, maxWait, tc.jitter); got < tc.min || got > tc.max {
			t.Errorf("Backoff(%d, jitter %g) = %s, want %s to %s", tc.attempt, tc.jitter, got, tc.min, tc.max)
		}
	}
}
