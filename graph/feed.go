package graph

import (
	"context"
	"sync"
	"time"

	"github.com/baton-run/baton/pubsub"
)

// feed delivers live events by topic to subscription resolvers: from the pubsub Hub when the
// instance has one, else from a poller that asks every subscriber to re-read the database.
type feed interface {
	subscribe(topics ...string) feedSubscription
}

// feedSubscription is what a subscription resolver reads. A closed channel means the feed
// stopped (the instance is shutting down).
type feedSubscription interface {
	C() <-chan pubsub.Message
	Close()
}

// hubFeed is a feed over the process's pubsub Hub: one Redis subscription for the process.
type hubFeed struct{ hub *pubsub.Hub }

func (f hubFeed) subscribe(topics ...string) feedSubscription { return f.hub.Subscribe(topics...) }

// pollFeed is the feed of an instance without a Hub. Every interval it sends each of its
// subscriptions a Resync message, upon which the resolver re-reads the state from the
// database (reads of one run are shared by all its subscribers; see flight). A subscription
// that has not consumed the last Resync is not sent another: ticks coalesce. The ticker runs
// only while someone is subscribed.
type pollFeed struct {
	interval time.Duration

	mu   sync.Mutex
	subs map[*pollSubscription]struct{}
	stop chan struct{} // closes to stop the ticker; nil while it is not running
}

func newPollFeed(interval time.Duration) *pollFeed {
	return &pollFeed{interval: interval, subs: map[*pollSubscription]struct{}{}}
}

type pollSubscription struct {
	f *pollFeed
	c chan pubsub.Message
}

func (s *pollSubscription) C() <-chan pubsub.Message { return s.c }

func (s *pollSubscription) Close() {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	delete(s.f.subs, s)
	if len(s.f.subs) == 0 && s.f.stop != nil {
		close(s.f.stop)
		s.f.stop = nil
	}
}

func (f *pollFeed) subscribe(...string) feedSubscription {
	s := &pollSubscription{f: f, c: make(chan pubsub.Message, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[s] = struct{}{}
	if f.stop == nil {
		f.stop = make(chan struct{})
		go f.tick(f.stop)
	}
	return s
}

func (f *pollFeed) tick(stop <-chan struct{}) {
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		f.mu.Lock()
		for s := range f.subs {
			select {
			case s.c <- pubsub.Message{Resync: true}:
			default: // the last one is still unread
			}
		}
		f.mu.Unlock()
	}
}

// flight shares reads of one key: concurrent callers wait for one fetch, and its result
// serves every caller for ttl after it completes. It turns a thousand subscribers re-reading
// one run after a Redis reconnection (or on every poll) into one query.
type flight[K comparable, V any] struct {
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

func newFlight[K comparable, V any](ttl time.Duration, fetch func(ctx context.Context, key K) (V, error)) *flight[K, V] {
	return &flight[K, V]{ttl: ttl, fetch: fetch, entries: map[K]*flightEntry[V]{}}
}

// fetchTimeout bounds a shared fetch, which runs detached from any one caller's context.
const fetchTimeout = 10 * time.Second

func (f *flight[K, V]) get(ctx context.Context, key K) (V, error) {
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
func (f *flight[K, V]) sweep(now time.Time) {
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
