package pubsub

import (
	"container/list"
	"sync"
)

// Subscription receives the messages of a set of topics from a Hub, each message once even
// when it was published to several of the topics. Messages wait in a bounded buffer: when
// the buffer is full the subscription keeps the latest message per key (a final message is
// never replaced by a non-final one), and if that is not enough it discards the oldest state
// and queues a Resync, so a slow consumer costs memory in proportion to the buffer, never
// time of the Hub or of other subscribers.
type Subscription struct {
	hub    *Hub
	topics []string
	out    chan Message
	wake   chan struct{}
	done   chan struct{}
	stop   func()

	mu       sync.Mutex
	queue    list.List                // of *Message, oldest first
	latest   map[string]*list.Element // the newest queued message of each key
	resync   *list.Element            // the queued Resync message, if any
	n        int                      // queued messages other than the Resync
	capacity int                      // messages kept before coalescing starts
	hardCap  int                      // messages kept when all are final
	inflight bool                     // deliver holds a message taken from the queue
	closed   bool                     // out is closed (or about to be): nothing may be sent on it

	// mark is the Hub's dispatch number that last reached this subscription; only the
	// dispatching goroutine touches it.
	mark uint64
}

func newSubscription(h *Hub, topics []string, capacity int) *Subscription {
	s := &Subscription{
		hub:      h,
		topics:   topics,
		out:      make(chan Message, 1),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		latest:   make(map[string]*list.Element),
		capacity: capacity,
		hardCap:  8 * capacity,
	}
	s.stop = sync.OnceFunc(func() { close(s.done) })
	return s
}

// C returns the channel on which messages arrive. It is closed after Close, or when the
// Hub stops.
func (s *Subscription) C() <-chan Message { return s.out }

// Topics returns the topics the subscription was made with.
func (s *Subscription) Topics() []string { return append([]string(nil), s.topics...) }

// Close stops the subscription and closes C. Messages still buffered are discarded. Close
// may be called more than once.
func (s *Subscription) Close() {
	s.hub.remove(s)
	s.stop()
}

// deliver hands queued messages to the consumer, one at a time. It has work only when the
// consumer falls behind: while the queue is empty, enqueue puts messages straight into out.
func (s *Subscription) deliver() {
	defer func() {
		s.mu.Lock()
		s.closed = true
		select {
		case <-s.out: // discarded, like the rest of the buffer
		default:
		}
		close(s.out)
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		e := s.queue.Front()
		if e == nil {
			s.inflight = false
			s.mu.Unlock()
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			}
		}
		m := s.remove(e)
		s.inflight = true
		s.mu.Unlock()

		select {
		case s.out <- *m:
			s.hub.delivered.Add(1)
		case <-s.done:
			return
		}
	}
}

// enqueue adds m to the buffer without ever blocking on the consumer. When nothing is
// waiting before m, it hands m to the consumer directly: one goroutine fewer to wake per
// message, which matters when one message goes to thousands of subscriptions.
func (s *Subscription) enqueue(m *Message) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if !s.inflight && s.queue.Len() == 0 {
		select {
		case s.out <- *m:
			s.hub.delivered.Add(1)
			s.mu.Unlock()
			return
		default: // the consumer has not read the previous one yet
		}
	}
	s.add(m)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// add applies the buffering rules. s.mu must be held.
func (s *Subscription) add(m *Message) {
	if m.Resync {
		s.queueResync()
		return
	}
	if s.n < s.capacity {
		s.push(m)
		return
	}

	// Full. Latest wins: replace the key's newest message in place, unless that one is final.
	if e, ok := s.latest[m.Key]; ok && !e.Value.(*Message).Final {
		e.Value = m
		s.hub.dropped.Add(1)
		return
	}

	// Make room by discarding a non-final message, preferably one that a newer message of its
	// key supersedes anyway. Discarding a key's newest state instead loses information: the
	// consumer must resync.
	var victim, lossy *list.Element
	for e := s.queue.Front(); e != nil; e = e.Next() {
		q := e.Value.(*Message)
		if q.Resync || q.Final {
			continue
		}
		if s.latest[q.Key] != e {
			victim = e
			break
		}
		if lossy == nil {
			lossy = e
		}
	}
	switch {
	case victim != nil:
		s.remove(victim)
		s.push(m)
		s.hub.dropped.Add(1)
	case lossy != nil:
		s.remove(lossy)
		s.push(m)
		s.hub.dropped.Add(1)
		s.queueResync()
	case m.Final && s.n < s.hardCap:
		// Only finals are queued: keep this one too, within the hard cap.
		s.push(m)
	case !m.Final:
		s.hub.dropped.Add(1)
		s.queueResync()
	default:
		// hardCap finals are waiting: the consumer is stuck. Keep memory bounded; the
		// snapshot it takes on Resync reflects every state discarded here.
		s.hub.dropped.Add(uint64(s.n) + 1)
		s.queue.Init()
		clear(s.latest)
		s.resync, s.n = nil, 0
		s.queueResync()
	}
}

// push appends m. s.mu must be held.
func (s *Subscription) push(m *Message) {
	s.latest[m.Key] = s.queue.PushBack(m)
	s.n++
}

// remove takes e out of the queue and returns its message. s.mu must be held.
func (s *Subscription) remove(e *list.Element) *Message {
	m := s.queue.Remove(e).(*Message)
	switch {
	case e == s.resync:
		s.resync = nil
	default:
		s.n--
		if s.latest[m.Key] == e {
			delete(s.latest, m.Key)
		}
	}
	return m
}

// queueResync puts the one Resync message at the end of the queue, so that the snapshot the
// consumer takes on reading it is newer than every message before it. s.mu must be held.
func (s *Subscription) queueResync() {
	if s.resync != nil {
		s.queue.MoveToBack(s.resync)
		return
	}
	s.resync = s.queue.PushBack(&Message{Resync: true})
}
