package main

import (
	"strings"
	"testing"
)

func TestParseBench(t *testing.T) {
	out := `goos: linux
BenchmarkHASentinelEventGap-2   	       1	5382486404 ns/op	         2.220 s/event-gap	         1.450 s/promotion
BenchmarkHAPgBouncerBatch   	       1	3852629691 ns/op	     30940 items/s-direct	         0.9800 ratio-pgbouncer/direct
--- FAIL: BenchmarkHAKillToResumed
PASS
`
	got := map[string]float64{}
	parseBench(strings.NewReader(out), func(bench, unit string, v float64) { got[bench+" "+unit] = v })
	want := map[string]float64{
		"BenchmarkHASentinelEventGap s/event-gap":          2.22,
		"BenchmarkHASentinelEventGap s/promotion":          1.45,
		"BenchmarkHAPgBouncerBatch items/s-direct":         30940,
		"BenchmarkHAPgBouncerBatch ratio-pgbouncer/direct": 0.98,
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %v; want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v; want %v", k, got[k], v)
		}
	}
}

func TestKillToRunning(t *testing.T) {
	const b = "BenchmarkHAKillToResumed"
	for _, tc := range []struct {
		name    string
		kills   []float64
		verdict string
		rounds  string
	}{
		{"met", []float64{5.5, 5.9, 7.9}, "**MET**", "2 of 3"},
		{"not met", []float64{6.5, 6.1, 5.9}, "**NOT MET**", "1 of 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{}
			for i, k := range tc.kills {
				r.add(i+1, b, "s/kill-to-running", k)
				r.add(i+1, b, "s/lease", 5)
				r.add(i+1, b, "s/poll", 1)
			}
			v := killToRunning(r)
			if !strings.HasPrefix(v.Verdict, tc.verdict) || v.Rounds != tc.rounds {
				t.Fatalf("verdict %q, rounds %q; want %s, %s", v.Verdict, v.Rounds, tc.verdict, tc.rounds)
			}
		})
	}
	if v := killToRunning(&Run{}); !strings.HasPrefix(v.Verdict, "not measured") {
		t.Fatalf("no figures: verdict %q", v.Verdict)
	}
}
