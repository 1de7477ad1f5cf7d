package pubsub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of HubOptions.
const (
	DefaultBufferSize          = 64
	DefaultHealthCheckInterval = 5 * time.Second
	DefaultKeyMemory           = 10 * time.Minute
)

// HubOptions configures a Hub. The zero value is usable.
type HubOptions struct {
	// BufferSize is how many messages a subscription holds for its consumer before it
	// starts coalescing them per key. Zero means DefaultBufferSize. Final messages may
	// exceed it up to eight times, after which the buffer is replaced by a Resync.
	BufferSize int
	// HealthCheckInterval is how long the Redis connection may stay silent before the Hub
	// pings it; without a reply within another interval the Hub reconnects. Zero means
	// DefaultHealthCheckInterval.
	HealthCheckInterval time.Duration
	// MaxBackoff caps the wait between reconnection attempts. Zero means DefaultMaxBackoff.
	MaxBackoff time.Duration
	// KeyMemory is how long the Hub remembers a key's last Seq after its last message, to
	// drop stale and after-final messages. Zero means DefaultKeyMemory.
	KeyMemory time.Duration
	// Logger receives connection losses and undecodable messages. Nil discards them.
	Logger *slog.Logger
}

// HubStats counts what a Hub did.
type HubStats struct {
	// Received counts envelopes read from Redis.
	Received uint64
	// Invalid counts messages on the channel that were not envelopes.
	Invalid uint64
	// Stale counts messages dropped because a newer (or a final) message of their key had
	// been received.
	Stale uint64
	// Delivered counts messages handed to consumers (each subscription's channel holds
	// one), Resync messages included.
	Delivered uint64
	// Dropped counts messages a slow subscription discarded or coalesced away.
	Dropped uint64
	// Connects counts confirmed subscriptions to the Redis channel, the first included.
	Connects uint64
	// Resyncs counts reconnections, each of which sent a Resync to every subscription.
	Resyncs uint64
	// Subscriptions is the number of open subscriptions.
	Subscriptions int
}

// Hub keeps one Redis subscription to the events of an environment and fans the messages
// out to in-process subscriptions by topic. It drops messages older than the last one
// received for their key, so subscribers see each key's messages in Seq order. When the
// connection to Redis is lost, go-redis or the Hub reconnects; after each reconnection every
// subscription receives a Message with Resync set, because messages published meanwhile are
// lost.
//
// Subscribe may be called before, during or after Run. Subscriptions made before the Hub's
// first connection also receive a Resync when it connects. Run may be called once.
type Hub struct {
	client  redis.UniversalClient
	channel string
	opts    HubOptions
	log     *slog.Logger

	running   atomic.Bool
	ready     chan struct{}
	readyOnce sync.Once

	mu      sync.RWMutex
	topics  map[string]map[*Subscription]struct{}
	subs    map[*Subscription]struct{}
	stopped bool

	// Used only by the goroutine that reads from Redis.
	// lastWarn is when a read failure was last logged, and held how many were not since: the
	// first failure of an outage is logged, then one a minute (the package stays a leaf, so
	// this is not internal/logthrottle).
	lastWarn time.Time
	held     int

	keys      map[string]keyMark
	dispatchN uint64
	lastSweep time.Time

	received, invalid, stale, delivered, dropped, connects, resyncs atomic.Uint64
}

// keyMark is what the Hub remembers of a key.
type keyMark struct {
	seq      Seq  // the newest Seq received
	final    bool // a final message was received
	finalSeq Seq  // the Seq of the last final message
	seen     time.Time
}

// NewHub returns a Hub for the events of env. Call Run to connect it.
func NewHub(client redis.UniversalClient, env string, opts HubOptions) *Hub {
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultBufferSize
	}
	if opts.HealthCheckInterval <= 0 {
		opts.HealthCheckInterval = DefaultHealthCheckInterval
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.KeyMemory <= 0 {
		opts.KeyMemory = DefaultKeyMemory
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{
		client:    client,
		channel:   Channel(env),
		opts:      opts,
		log:       opts.Logger.With("component", "pubsub.hub", "channel", Channel(env)),
		ready:     make(chan struct{}),
		topics:    make(map[string]map[*Subscription]struct{}),
		subs:      make(map[*Subscription]struct{}),
		keys:      make(map[string]keyMark),
		lastSweep: time.Now(),
	}
}

// Ready returns a channel that is closed once the Hub's first subscription to Redis is
// confirmed: messages published after that reach its subscribers.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// Stats returns the Hub's counters.
func (h *Hub) Stats() HubStats {
	h.mu.RLock()
	n := len(h.subs)
	h.mu.RUnlock()
	return HubStats{
		Received:      h.received.Load(),
		Invalid:       h.invalid.Load(),
		Stale:         h.stale.Load(),
		Delivered:     h.delivered.Load(),
		Dropped:       h.dropped.Load(),
		Connects:      h.connects.Load(),
		Resyncs:       h.resyncs.Load(),
		Subscriptions: n,
	}
}

// Subscribe returns a subscription to the messages of topics. With no topics it receives
// only Resync messages. After the Hub has stopped, the subscription's channel is closed.
func (h *Hub) Subscribe(topics ...string) *Subscription {
	s := newSubscription(h, append([]string(nil), topics...), h.opts.BufferSize)
	go s.deliver()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		s.stop()
		return s
	}
	h.subs[s] = struct{}{}
	for _, t := range topics {
		set := h.topics[t]
		if set == nil {
			set = make(map[*Subscription]struct{})
			h.topics[t] = set
		}
		set[s] = struct{}{}
	}
	return s
}

// remove unregisters s.
func (h *Hub) remove(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
	for _, t := range s.topics {
		if set := h.topics[t]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(h.topics, t)
			}
		}
	}
}

// Run subscribes to Redis and dispatches messages until ctx ends, reconnecting with backoff
// after errors. It then closes every subscription and returns nil.
func (h *Hub) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("pubsub: Hub.Run called twice")
	}
	defer h.stop()
	failures := 0
	for {
		err := h.session(ctx, &failures)
		if ctx.Err() != nil {
			return nil
		}
		failures++
		h.log.Warn("redis subscription lost", "err", err, "attempt", failures)
		if !sleep(ctx, backoff(failures, h.opts.MaxBackoff)) {
			return nil
		}
	}
}

// stop closes every subscription and refuses new ones.
func (h *Hub) stop() {
	h.mu.Lock()
	h.stopped = true
	subs := h.subs
	h.subs = make(map[*Subscription]struct{})
	clear(h.topics)
	h.mu.Unlock()
	for s := range subs {
		s.stop()
	}
}

// session reads from one go-redis PubSub. go-redis reconnects it by itself after a read
// error, and the resubscription it then sends is confirmed by a *redis.Subscription message,
// which is how the Hub learns of reconnections. session returns when ctx ends, when the
// subscription cannot be set up, or when the connection stops answering pings, for which
// go-redis has no remedy of its own.
func (h *Hub) session(ctx context.Context, failures *int) error {
	ps, kind, err := subscribe(ctx, h.client, h.channel)
	defer ps.Close()
	// Unblock a pending read when ctx ends.
	defer context.AfterFunc(ctx, func() { _ = ps.Close() })()

	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	awaitingPong := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, h.opts.HealthCheckInterval)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if isTimeout(err) {
				if awaitingPong {
					return errors.New("no reply to ping")
				}
				awaitingPong = true
				if err := ps.Ping(ctx); err == nil {
					continue
				}
				// A failed ping write has made go-redis reconnect; wait as for any error.
			}
			*failures++
			if *failures == 1 || time.Since(h.lastWarn) >= time.Minute {
				h.log.Warn("redis subscription read failed", "err", err, "attempt", *failures, "repeats_not_logged", h.held)
				h.lastWarn, h.held = time.Now(), 0
			} else {
				h.held++
			}
			if !sleep(ctx, backoff(*failures, h.opts.MaxBackoff)) {
				return ctx.Err()
			}
			continue
		}
		awaitingPong = false
		switch msg := msg.(type) {
		case *redis.Subscription:
			if msg.Kind == kind && msg.Channel == h.channel {
				*failures, h.held = 0, 0
				h.subscribed()
			}
			if msg.Kind == "sunsubscribe" && msg.Channel == h.channel {
				// Cluster moved the channel's slot to another master (resharding or a
				// failover) and dropped the subscription: subscribe again there.
				return errors.New("the channel's slot moved to another node")
			}
		case *redis.Message:
			h.dispatch([]byte(msg.Payload), time.Now())
		}
	}
}

// subscribed handles a confirmed (re)subscription to the channel.
func (h *Hub) subscribed() {
	if h.connects.Add(1) > 1 {
		h.resyncs.Add(1)
		h.log.Info("redis subscription restored; subscribers resync")
	}
	h.mu.RLock()
	for s := range h.subs {
		s.enqueue(&Message{Resync: true})
	}
	h.mu.RUnlock()
	h.readyOnce.Do(func() { close(h.ready) })
}

// dispatch decodes one envelope and hands it to the subscriptions of its topics.
func (h *Hub) dispatch(data []byte, now time.Time) {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil || e.Key == "" {
		h.invalid.Add(1)
		h.log.Warn("undecodable event", "err", err, "size", len(data))
		return
	}
	h.received.Add(1)
	m := e.message()

	mark, seen := h.keys[m.Key]
	if seen {
		switch {
		case m.Final && mark.final && m.Seq == mark.finalSeq, // a duplicate
			!m.Final && (mark.final || !mark.seq.Before(m.Seq)):
			h.stale.Add(1)
			return
		}
	}
	if !seen || mark.seq.Before(m.Seq) {
		mark.seq = m.Seq
	}
	if m.Final {
		mark.final, mark.finalSeq = true, m.Seq
	}
	mark.seen = now
	h.keys[m.Key] = mark
	if now.Sub(h.lastSweep) >= min(h.opts.KeyMemory, time.Minute) {
		h.sweep(now)
	}

	h.dispatchN++
	h.mu.RLock()
	for _, t := range m.Topics {
		for s := range h.topics[t] {
			if s.mark == h.dispatchN {
				continue
			}
			s.mark = h.dispatchN
			s.enqueue(&m)
		}
	}
	h.mu.RUnlock()
}

// sweep forgets keys not heard of for KeyMemory.
func (h *Hub) sweep(now time.Time) {
	h.lastSweep = now
	for k, mark := range h.keys {
		if now.Sub(mark.seen) > h.opts.KeyMemory {
			delete(h.keys, k)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// sleep waits for d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
