package live

import (
	"context"
	"sync"
	"time"
)

// Flight shares reads of one key: concurrent callers wait for one fetch, and its result
// serves every caller for ttl after it completes. It turns a thousand subscribers re-reading
// one run after a Redis reconnection (or on every poll) into one query.
type Flight[K comparable, V any] struct {
	ttl   time.Duration
	fetch func(ctx context.Context, key K) (V, error)

	mu      sync.Mutex
	entries map[K]*flightEntry[V]
}

type flightEntry[V any] struct {
	done chan struct{}
	at   time.Time // when the fetch completed
	val  V
	err  error
}

// NewFlight returns a Flight over fetch whose results serve for ttl.
func NewFlight[K comparable, V any](ttl time.Duration, fetch func(ctx context.Context, key K) (V, error)) *Flight[K, V] {
	return &Flight[K, V]{ttl: ttl, fetch: fetch, entries: map[K]*flightEntry[V]{}}
}

// fetchTimeout bounds a shared fetch, which runs detached from any one caller's context.
const fetchTimeout = 10 * time.Second

// Get returns the value of key: the result of a fetch completed less than ttl ago, or of the
// one in flight, or of a new one. It returns early with ctx's error when ctx ends first.
func (f *Flight[K, V]) Get(ctx context.Context, key K) (V, error) {
	now := time.Now()
	f.mu.Lock()
	e, ok := f.entries[key]
	if ok {
		select {
		case <-e.done:
			if now.Sub(e.at) >= f.ttl {
				ok = false // stale: fetch again
			}
		default: // in flight: wait for it
		}
	}
	if !ok {
		if len(f.entries) > 1024 {
			f.sweep(now)
		}
		e = &flightEntry[V]{done: make(chan struct{})}
		f.entries[key] = e
		go func() {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
			defer cancel()
			e.val, e.err = f.fetch(fctx, key)
			e.at = time.Now()
			close(e.done)
		}()
	}
	f.mu.Unlock()
	select {
	case <-e.done:
		return e.val, e.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// sweep forgets completed entries older than ttl. f.mu must be held.
func (f *Flight[K, V]) sweep(now time.Time) {
	for k, e := range f.entries {
		select {
		case <-e.done:
			if now.Sub(e.at) >= f.ttl {
				delete(f.entries, k)
			}
		default:
		}
	}
}
