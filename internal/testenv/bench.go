package testenv

import (
	"math"
	"os"
	"slices"
	"strconv"
	"time"
)

// Helpers shared by the benchmarks of several packages.

// FullScale reports whether BATON_BENCH_SCALE=full asks for the issues' full sizes.
func FullScale() bool { return os.Getenv("BATON_BENCH_SCALE") == "full" }

// Scaled returns def, or full under BATON_BENCH_SCALE=full.
func Scaled[T any](def, full T) T {
	if FullScale() {
		return full
	}
	return def
}

// CountLabel writes n the short way for a benchmark name: 200k, 1M.
func CountLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// Millis is d in (fractional) milliseconds, as benchmarks report latencies.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Quantile returns the q-quantile (nearest rank) of samples, which it sorts.
func Quantile(samples []time.Duration, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	i := int(math.Ceil(q*float64(len(samples)))) - 1
	return samples[min(max(i, 0), len(samples)-1)]
}
