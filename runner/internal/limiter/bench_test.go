package limiter_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/runner/internal/limiter"
)

// high is a limit far above what the benchmarks reach, so they measure the limiter's cost.
var high = limiter.Limits{Rate: 100000, Burst: 10000, Concurrency: 10000}

// BenchmarkAcquireUnlimited: Acquire and Release of a downstream with no limits.
func BenchmarkAcquireUnlimited(b *testing.B) {
	ls, _ := instances(b, 1, nil)
	benchAcquire(b, ls[0], limiter.Limits{})
}

// BenchmarkAcquireLimited: Acquire and Release of a downstream with a rate and a concurrency
// limit, one caller: the Redis round trips included.
func BenchmarkAcquireLimited(b *testing.B) {
	ls, _ := instances(b, 1, nil)
	benchAcquire(b, ls[0], high)
}

func benchAcquire(b *testing.B, l *limiter.Limiter, lim limiter.Limits) {
	ctx := context.Background()
	deadline := time.Now().Add(time.Hour)
	b.ResetTimer()
	for range b.N {
		p, err := l.Acquire(ctx, "provider", lim, deadline)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}

// BenchmarkLimitedThroughput3: the most limited calls per second one downstream sustains
// across three instances (three clients, 16 callers each).
func BenchmarkLimitedThroughput3(b *testing.B) {
	ls, _ := instances(b, 3, nil)
	ctx := context.Background()
	deadline := time.Now().Add(time.Hour)
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, l := range ls {
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					p, err := l.Acquire(ctx, "provider", high, deadline)
					if err != nil {
						b.Error(err)
						return
					}
					if p.Degraded {
						b.Error("degraded permit")
						return
					}
					p.Release()
				}
			}()
		}
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkSlotHandoff: callers of one instance sharing a single slot, each taking it and
// giving it back at once: the time from one release to the next holder's start.
func BenchmarkSlotHandoff(b *testing.B) {
	ls, _ := instances(b, 1, nil)
	lim := limiter.Limits{Concurrency: 1}
	ctx := context.Background()
	deadline := time.Now().Add(time.Hour)
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				p, err := ls[0].Acquire(ctx, "provider", lim, deadline)
				if err != nil {
					b.Error(err)
					return
				}
				p.Release()
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/handoff")
}

// BenchmarkRedisRoundTrip: one PING, the floor under a limited call's two commands.
func BenchmarkRedisRoundTrip(b *testing.B) {
	_, c := instances(b, 1, nil)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}
