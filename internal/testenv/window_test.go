package testenv

import (
	"testing"
	"time"
)

func TestMostWithin(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	for _, c := range []struct {
		ts   []time.Time
		want int
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 999), 2},
		{at(0, 1000), 1},                       // a window is [t, t+1s)
		{at(1500, 0, 400, 900, 2600, 1300), 3}, // 400, 900, 1300
	} {
		got, sorted := MostWithin(c.ts, time.Second)
		if got != c.want {
			t.Errorf("MostWithin(%v) = %d; want %d", c.ts, got, c.want)
		}
		for i := 1; i < len(sorted); i++ {
			if sorted[i].Before(sorted[i-1]) {
				t.Errorf("MostWithin(%v) did not sort: %v", c.ts, sorted)
			}
		}
	}
}
