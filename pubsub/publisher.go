package pubsub

import (
	"container/heap"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultMinInterval is the default PublisherOptions.MinInterval: about ten sends per second
// per key.
const DefaultMinInterval = 100 * time.Millisecond

// DefaultMaxBackoff is the default cap on the wait between retries after a Redis error.
const DefaultMaxBackoff = 5 * time.Second

// maxBatch bounds how many messages go to Redis in one pipeline.
const maxBatch = 256

// PublisherOptions configures a Publisher. The zero value is usable.
type PublisherOptions struct {
	// MinInterval is the least time between two sends for one key. A publish that comes
	// sooner is held, replacing any held one, and the latest is sent when the interval has
	// passed. Final publishes are never held. Zero means DefaultMinInterval; a negative value
	// disables the interval (messages are still coalesced while a send to Redis is slow).
	MinInterval time.Duration
	// InstanceID identifies this publisher in every message's Seq. Empty means a random id.
	InstanceID string
	// MaxBackoff caps the wait between retries when Redis fails. Zero means
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Logger receives Redis errors. Nil discards them.
	Logger *slog.Logger
}

// PublisherStats counts what a Publisher did.
type PublisherStats struct {
	// Published counts messages Redis accepted.
	Published uint64
	// Coalesced counts messages superseded by a later one for the same key before they
	// were sent.
	Coalesced uint64
	// Errors counts failed attempts to send a batch; its messages are retried.
	Errors uint64
}

// Publisher publishes events to the Redis channel of one environment. Publish never waits
// for Redis: a background goroutine sends, retrying with backoff while Redis is unreachable,
// and coalesces per key so that a key is sent at most once per MinInterval (latest wins).
// Its memory is bounded by the number of keys published in the last MinInterval plus those
// waiting to be sent. A Publisher is safe for concurrent use; call Close when done.
type Publisher struct {
	client     redis.UniversalClient
	channel    string
	instance   string
	epoch      int64
	interval   time.Duration
	maxBackoff time.Duration
	log        *slog.Logger

	// sendCtx bounds Redis calls; cancelling it abandons unsent messages.
	sendCtx    context.Context
	cancelSend context.CancelFunc
	wake       chan struct{}
	done       chan struct{}

	mu        sync.Mutex
	closed    bool
	seq       uint64
	keys      map[string]*keyRate
	due       dueHeap
	ready     []string             // keys with a message to send now, in arrival order
	readyMsg  map[string]*envelope // the message to send for each key in ready
	lastPrune time.Time

	published, coalesced, sendErrors atomic.Uint64
}

// keyRate is the rate-limiting state of one key.
type keyRate struct {
	last      time.Time // when the last message of the key was released for sending
	pending   *envelope // held until last+interval
	scheduled bool      // the key has an entry in due
}

// NewPublisher returns a Publisher on the channel of env and starts its sending goroutine.
func NewPublisher(client redis.UniversalClient, env string, opts PublisherOptions) *Publisher {
	if opts.MinInterval == 0 {
		opts.MinInterval = DefaultMinInterval
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.InstanceID == "" {
		opts.InstanceID = crand.Text()[:12]
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Publisher{
		client:     client,
		channel:    Channel(env),
		instance:   opts.InstanceID,
		epoch:      time.Now().UnixNano(),
		interval:   opts.MinInterval,
		maxBackoff: opts.MaxBackoff,
		log:        opts.Logger.With("component", "pubsub.publisher", "channel", Channel(env)),
		sendCtx:    ctx,
		cancelSend: cancel,
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		keys:       make(map[string]*keyRate),
		readyMsg:   make(map[string]*envelope),
		lastPrune:  time.Now(),
	}
	go p.loop()
	return p
}

// Publish queues payload, a JSON document describing key, for the subscribers of topics. It
// returns without waiting for Redis. A non-final message may be coalesced with later ones
// for the same key; a final one is sent as soon as possible and replaces any held message
// for the key. Publish copies topics and payload; an empty payload is sent as null.
func (p *Publisher) Publish(ctx context.Context, topics []string, key string, payload []byte, final bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" {
		return errors.New("pubsub: publish with an empty key")
	}
	if len(topics) == 0 {
		return fmt.Errorf("pubsub: publish %q to no topic", key)
	}
	if len(payload) == 0 {
		payload = []byte("null")
	} else if !json.Valid(payload) {
		return fmt.Errorf("pubsub: publish %q: payload is not valid JSON", key)
	}
	e := &envelope{
		Topics:  append([]string(nil), topics...),
		Key:     key,
		Src:     p.instance,
		Epoch:   p.epoch,
		Final:   final,
		Payload: append(json.RawMessage(nil), payload...),
	}
	now := time.Now()

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.seq++
	e.Seq = p.seq
	k := p.keys[key]
	if k == nil {
		k = &keyRate{}
		p.keys[key] = k
	}
	switch {
	case final || p.interval < 0 || (k.pending == nil && now.Sub(k.last) >= p.interval):
		if k.pending != nil {
			k.pending = nil
			p.coalesced.Add(1)
		}
		k.last = now
		p.enqueueReady(e)
	default:
		if k.pending != nil {
			p.coalesced.Add(1)
		}
		k.pending = e
		if !k.scheduled {
			k.scheduled = true
			heap.Push(&p.due, dueKey{at: k.last.Add(p.interval), key: key})
		}
	}
	p.mu.Unlock()

	p.poke()
	return nil
}

// poke wakes the sending goroutine, unless a wake-up is already pending.
func (p *Publisher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Close sends every held message and waits until all are sent or ctx ends, then stops the
// sending goroutine. Messages still unsent when ctx ends are dropped and ctx's error is
// returned. Publish fails with ErrClosed once Close has been called.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		for key, k := range p.keys {
			if k.pending != nil {
				p.enqueueReady(k.pending)
				k.pending = nil
			}
			delete(p.keys, key)
		}
		p.due = nil
	}
	p.mu.Unlock()
	p.poke()

	select {
	case <-p.done:
		p.cancelSend()
		return nil
	case <-ctx.Done():
		p.cancelSend()
		<-p.done
		return fmt.Errorf("pubsub: close publisher: %w", ctx.Err())
	}
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{
		Published: p.published.Load(),
		Coalesced: p.coalesced.Load(),
		Errors:    p.sendErrors.Load(),
	}
}

// enqueueReady makes e the message to send next for its key. p.mu must be held.
func (p *Publisher) enqueueReady(e *envelope) {
	old, ok := p.readyMsg[e.Key]
	if !ok {
		p.ready = append(p.ready, e.Key)
		p.readyMsg[e.Key] = e
		return
	}
	p.coalesced.Add(1)
	p.readyMsg[e.Key] = newest(old, e)
}

// newest returns which of older and newer, two messages of one key, should be sent: the
// newer, unless only the older is final — a final state is never replaced by progress.
func newest(older, newer *envelope) *envelope {
	if older.Final && !newer.Final {
		return older
	}
	return newer
}

// loop is the sending goroutine.
func (p *Publisher) loop() {
	defer close(p.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	failures := 0
	for {
		p.mu.Lock()
		now := time.Now()
		p.releaseDue(now)
		batch := p.takeReady()
		closed := p.closed
		next, hasNext := p.nextDue()
		if now.Sub(p.lastPrune) >= time.Second {
			p.pruneIdle(now)
		}
		p.mu.Unlock()

		if len(batch) > 0 {
			if p.send(batch) {
				failures = 0
				continue
			}
			failures++
			timer.Reset(backoff(failures, p.maxBackoff))
			select {
			case <-timer.C:
			case <-p.sendCtx.Done():
				return
			}
			continue
		}
		if closed {
			return
		}
		var fire <-chan time.Time
		if hasNext {
			timer.Reset(time.Until(next))
			fire = timer.C
		}
		select {
		case <-p.wake:
		case <-fire:
		case <-p.sendCtx.Done():
			return
		}
		timer.Stop()
	}
}

// releaseDue moves held messages whose interval has passed to the ready queue. p.mu must
// be held.
func (p *Publisher) releaseDue(now time.Time) {
	for len(p.due) > 0 && !p.due[0].at.After(now) {
		d := heap.Pop(&p.due).(dueKey)
		k := p.keys[d.key]
		if k == nil {
			continue
		}
		if k.pending == nil { // superseded by a final
			k.scheduled = false
			continue
		}
		if at := k.last.Add(p.interval); at.After(now) { // a final was sent meanwhile
			heap.Push(&p.due, dueKey{at: at, key: d.key})
			continue
		}
		k.scheduled = false
		k.last = now
		p.enqueueReady(k.pending)
		k.pending = nil
	}
}

func (p *Publisher) nextDue() (time.Time, bool) {
	if len(p.due) == 0 {
		return time.Time{}, false
	}
	return p.due[0].at, true
}

// pruneIdle forgets keys that are not rate-limited any more. p.mu must be held.
func (p *Publisher) pruneIdle(now time.Time) {
	p.lastPrune = now
	for key, k := range p.keys {
		if k.pending == nil && !k.scheduled && now.Sub(k.last) >= p.interval {
			delete(p.keys, key)
		}
	}
}

// takeReady removes up to maxBatch messages from the ready queue. p.mu must be held.
func (p *Publisher) takeReady() []*envelope {
	n := min(len(p.ready), maxBatch)
	if n == 0 {
		return nil
	}
	batch := make([]*envelope, n)
	for i, key := range p.ready[:n] {
		batch[i] = p.readyMsg[key]
		delete(p.readyMsg, key)
	}
	p.ready = append(p.ready[:0], p.ready[n:]...)
	return batch
}

// send publishes batch in one pipeline and puts back what failed. It reports whether
// everything was sent.
func (p *Publisher) send(batch []*envelope) bool {
	encoded := batch[:0]
	data := make([][]byte, 0, len(batch))
	for _, e := range batch {
		b, err := json.Marshal(e)
		if err != nil { // not expected: Publish validated the payload
			p.log.Error("encode event", "key", e.Key, "err", err)
			continue
		}
		encoded = append(encoded, e)
		data = append(data, b)
	}
	batch = encoded
	if len(batch) == 0 {
		return true
	}
	cmds, err := p.client.Pipelined(p.sendCtx, func(pipe redis.Pipeliner) error {
		for _, b := range data {
			publish(p.sendCtx, p.client, pipe, p.channel, b)
		}
		return nil
	})
	if err == nil {
		p.published.Add(uint64(len(batch)))
		return true
	}
	p.sendErrors.Add(1)
	var failed []*envelope
	if len(cmds) != len(batch) {
		failed = batch
	} else {
		for i, cmd := range cmds {
			if cmd.Err() != nil {
				failed = append(failed, batch[i])
			} else {
				p.published.Add(1)
			}
		}
	}
	p.log.Warn("publish events", "err", err, "failed", len(failed), "batch", len(batch))

	p.mu.Lock()
	for _, e := range failed {
		if newer, ok := p.readyMsg[e.Key]; ok {
			p.readyMsg[e.Key] = newest(e, newer)
			p.coalesced.Add(1)
			continue
		}
		p.ready = append(p.ready, e.Key)
		p.readyMsg[e.Key] = e
	}
	p.mu.Unlock()
	return false
}

// backoff returns how long to wait before retry number attempt (from 1): exponential from
// 50ms, capped at limit, with the upper half jittered so that many processes don't retry in
// step.
func backoff(attempt int, limit time.Duration) time.Duration {
	d := limit
	if attempt < 20 {
		d = min(limit, 50*time.Millisecond<<(attempt-1))
	}
	return d/2 + rand.N(d/2+1)
}

type dueKey struct {
	at  time.Time
	key string
}

// dueHeap orders held keys by when they may be sent.
type dueHeap []dueKey

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueKey)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
