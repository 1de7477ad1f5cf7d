package live

import (
	"sync"
	"time"

	"github.com/baton-run/baton/pubsub"
)

// Feed delivers live events by topic to subscribers: from the pubsub Hub when the instance
// has one (HubFeed), else from a poller that asks every subscriber to re-read the database
// (NewPollFeed).
type Feed interface {
	Subscribe(topics ...string) Subscription
}

// Subscription is what a subscriber reads. A closed channel means the feed stopped (the
// instance is shutting down).
type Subscription interface {
	C() <-chan pubsub.Message
	Close()
}

// HubFeed returns the feed over the process's pubsub Hub: one Redis subscription for the
// process.
func HubFeed(hub *pubsub.Hub) Feed { return hubFeed{hub: hub} }

type hubFeed struct{ hub *pubsub.Hub }

func (f hubFeed) Subscribe(topics ...string) Subscription { return f.hub.Subscribe(topics...) }

// NewPollFeed returns the feed of an instance without a Hub. Every interval it sends each of
// its subscriptions a Resync message, upon which the subscriber re-reads the state from the
// database (reads of one run are shared by all its subscribers; see Flight). A subscription
// that has not consumed the last Resync is not sent another: ticks coalesce. The ticker runs
// only while someone is subscribed.
func NewPollFeed(interval time.Duration) Feed {
	return &pollFeed{interval: interval, subs: map[*pollSubscription]struct{}{}}
}

type pollFeed struct {
	interval time.Duration

	mu   sync.Mutex
	subs map[*pollSubscription]struct{}
	stop chan struct{} // closes to stop the ticker; nil while it is not running
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

func (f *pollFeed) Subscribe(...string) Subscription {
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
