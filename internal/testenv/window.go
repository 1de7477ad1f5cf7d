package testenv

import (
	"slices"
	"time"
)

// MostWithin returns the most of ts that fall within any window of length w, and ts sorted (a
// copy): how a test reads "at most N calls in any second" off the arrival times a fake
// outside system recorded.
func MostWithin(ts []time.Time, w time.Duration) (int, []time.Time) {
	at := slices.Clone(ts)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most, at
}
