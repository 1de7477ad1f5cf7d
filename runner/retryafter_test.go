package runner_test

import (
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
)

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for header, want := range map[string]time.Duration{
		"":                                0,
		"3":                               3 * time.Second,
		" 1.5 ":                           1500 * time.Millisecond,
		"0":                               0,
		"-4":                              0,
		"soon":                            0,
		"999999":                          0, // over a day: not a wait anyone means
		"Tue, 01 Dec 2026 12:00:30 GMT":   30 * time.Second,
		"Tue, 01 Dec 2026 11:59:00 GMT":   0, // already past
		"Tuesday, 01-Dec-26 12:00:10 GMT": 10 * time.Second,
		"Tue Dec  1 12:00:05 2026":        5 * time.Second,
	} {
		if got := runner.RetryAfter(header, now); got != want {
			t.Errorf("RetryAfter(%q) = %s; want %s", header, got, want)
		}
	}
}
