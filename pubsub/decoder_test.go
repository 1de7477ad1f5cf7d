package pubsub_test

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/pubsub"
)

// TestDecoderDecodesOncePerMessage fans one message out to several subscriptions, which read
// it concurrently: the payload is decoded once per Decoder, and every subscriber gets the same
// value.
func TestDecoderDecodesOncePerMessage(t *testing.T) {
	t.Parallel()
	tb := setup(t, pubsub.PublisherOptions{MinInterval: -1}, pubsub.HubOptions{})
	var calls, otherCalls atomic.Int64
	dec := pubsub.NewDecoder(func(payload json.RawMessage) (*progress, error) {
		calls.Add(1)
		p := new(progress)
		return p, json.Unmarshal(payload, p)
	})
	other := pubsub.NewDecoder(func(payload json.RawMessage) (int, error) {
		otherCalls.Add(1)
		var p progress
		err := json.Unmarshal(payload, &p)
		return p.N, err
	})

	const subscribers = 8
	subs := make([]*pubsub.Subscription, subscribers)
	for i := range subs {
		subs[i] = tb.hub.Subscribe("run:1", "runs") // both topics: still one delivery each
		t.Cleanup(subs[i].Close)
	}
	publish(t, tb.pub, []string{"run:1", "runs"}, "run:1", progress{N: 7}, false)

	got := make([]*progress, subscribers)
	var wg sync.WaitGroup
	for i, sub := range subs {
		msgs := recvUntil(t, sub, func(m pubsub.Message) bool { return !m.Resync })
		last := msgs[len(msgs)-1]
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := dec.Decode(last)
			if err != nil {
				t.Errorf("subscriber %d: %v", i, err)
				return
			}
			got[i] = v
			if n, err := other.Decode(last); err != nil || n != 7 {
				t.Errorf("subscriber %d: other decoder gave %d, %v; want 7", i, n, err)
			}
		}()
	}
	wg.Wait()
	if c := calls.Load(); c != 1 {
		t.Errorf("payload decoded %d times for %d subscribers, want once", c, subscribers)
	}
	if c := otherCalls.Load(); c != 1 {
		t.Errorf("second decoder ran %d times, want once", c)
	}
	for i, v := range got {
		if v == nil || v.N != 7 || v != got[0] {
			t.Fatalf("subscriber %d got %+v (%p), subscriber 0 %p: want one shared value with n=7", i, v, v, got[0])
		}
	}
}

// TestDecoderSharesErrors checks that a payload the decoder refuses fails for every
// subscriber, without decoding it again.
func TestDecoderSharesErrors(t *testing.T) {
	t.Parallel()
	tb := setup(t, pubsub.PublisherOptions{MinInterval: -1}, pubsub.HubOptions{})
	errRefused := errors.New("refused")
	var calls atomic.Int64
	dec := pubsub.NewDecoder(func(json.RawMessage) (string, error) {
		calls.Add(1)
		return "", errRefused
	})
	a, b := tb.hub.Subscribe("t"), tb.hub.Subscribe("t")
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	publish(t, tb.pub, []string{"t"}, "k", progress{N: 1}, false)
	for _, sub := range []*pubsub.Subscription{a, b} {
		msgs := recvUntil(t, sub, func(m pubsub.Message) bool { return !m.Resync })
		if _, err := dec.Decode(msgs[len(msgs)-1]); !errors.Is(err, errRefused) {
			t.Errorf("Decode: %v, want %v", err, errRefused)
		}
	}
	if c := calls.Load(); c != 1 {
		t.Errorf("decoder ran %d times, want once", c)
	}
}

// TestDecoderWithoutHub checks that a message made by hand is decoded on every call.
func TestDecoderWithoutHub(t *testing.T) {
	t.Parallel()
	var calls int
	dec := pubsub.NewDecoder(func(payload json.RawMessage) (int, error) {
		calls++
		var p progress
		err := json.Unmarshal(payload, &p)
		return p.N, err
	})
	m := pubsub.Message{Key: "k", Payload: json.RawMessage(`{"n":3}`)}
	for range 2 {
		if n, err := dec.Decode(m); err != nil || n != 3 {
			t.Fatalf("Decode = %d, %v; want 3", n, err)
		}
	}
	if calls != 2 {
		t.Errorf("decoder ran %d times, want 2", calls)
	}
}
