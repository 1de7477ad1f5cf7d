package pubsub

import (
	"encoding/json"
	"sync"
)

// A Decoder turns message payloads into values of type T, once per message for all the
// subscriptions of a Hub: a message fanned out to a thousand subscribers is decoded by the
// first one that asks, and the others get the same value (and error). Subscribers therefore
// share the decoded value with each other: treat it as read-only.
//
// The cache lives in the message, so it costs nothing once the message is gone. Messages
// that did not come through a Hub (built by hand, or Resync messages) are decoded on every
// call. A Decoder is safe for concurrent use; make one per payload format, typically in a
// package-level variable.
type Decoder[T any] struct {
	decode func(json.RawMessage) (T, error)
}

// NewDecoder returns a Decoder that decodes payloads with decode, which must not keep or
// change its argument.
func NewDecoder[T any](decode func(payload json.RawMessage) (T, error)) *Decoder[T] {
	return &Decoder[T]{decode: decode}
}

// Decode returns m's payload decoded, decoding it only if no subscription has done so with
// d before.
func (d *Decoder[T]) Decode(m Message) (T, error) {
	c := m.decoded
	if c == nil {
		return d.decode(m.Payload)
	}
	// Holding the lock while decoding makes concurrent callers wait for the one decode
	// instead of each doing their own.
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.decoder == d {
			v, _ := e.value.(T)
			return v, e.err
		}
	}
	v, err := d.decode(m.Payload)
	c.entries = append(c.entries, decodedEntry{decoder: d, value: v, err: err})
	return v, err
}

// decodedPayload holds what Decoders made of one message's payload. Every copy of the
// message that the Hub hands out points to the same one.
type decodedPayload struct {
	mu      sync.Mutex
	entries []decodedEntry // one per Decoder used on the message, usually one
}

type decodedEntry struct {
	decoder any // the *Decoder[T]
	value   any
	err     error
}
