package graph

import (
	"sync"
	"time"
)

// rateLimiter is a token bucket per API token: perMinute mutations a minute on average, in
// bursts of up to burst. It lives in memory, so each instance limits on its own.
type rateLimiter struct {
	perSecond float64
	burst     float64
	now       func() time.Time

	mu      sync.Mutex
	buckets map[int64]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(perMinute, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{perSecond: float64(perMinute) / 60, burst: float64(burst), now: now, buckets: map[int64]*bucket{}}
}

// allow takes one token from key's bucket, and reports whether there was one.
func (l *rateLimiter) allow(key int64) bool {
	if l == nil {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute {
		// Forget buckets that have refilled: they are as good as new ones.
		for k, b := range l.buckets {
			if b.tokens+now.Sub(b.at).Seconds()*l.perSecond >= l.burst {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.perSecond)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
