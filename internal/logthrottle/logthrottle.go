// Package logthrottle keeps a warning that repeats while something is down (Redis, the
// database) from flooding the log: the first is logged, then at most one per interval, which
// says how many it stood for.
package logthrottle

import (
	"sync"
	"time"
)

// DefaultEvery is the interval New uses for 0.
const DefaultEvery = time.Minute

// Limiter lets through the first occurrence of each key, then at most one per interval.
// Its zero value is not usable; New makes one.
type Limiter struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	keys map[string]*state
}

type state struct {
	last       time.Time
	suppressed int
}

// New returns a Limiter that lets a key through at most once per every (0: DefaultEvery),
// reading the time from now (nil: time.Now).
func New(every time.Duration, now func() time.Time) *Limiter {
	if every <= 0 {
		every = DefaultEvery
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{every: every, now: now, keys: map[string]*state{}}
}

// Allow says whether key's occurrence now should be logged and, if so, how many occurrences
// since the last one logged were not.
func (l *Limiter) Allow(key string) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	s := l.keys[key]
	if s == nil {
		l.keys[key] = &state{last: now}
		return true, 0
	}
	if now.Sub(s.last) < l.every {
		s.suppressed++
		return false, 0
	}
	n := s.suppressed
	s.last, s.suppressed = now, 0
	return true, n
}

// Reset forgets key: its next occurrence is logged at once. Call it when what failed works
// again, so that the next outage's first warning is not held back.
func (l *Limiter) Reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}
