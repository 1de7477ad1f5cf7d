// Package pubsub carries Baton's live events over Redis pub/sub: a Publisher that coalesces
// progress per key and a per-process Hub that keeps one Redis subscription and fans events
// out to in-process subscribers.
//
// Every environment has one Redis channel, "baton:{<env>}:events": the braces make the
// environment its hash tag, so in Redis Cluster it shares the slot of the environment's
// keys. On a Cluster client the channel is a sharded one (SPUBLISH and SSUBSCRIBE, served by
// the slot's master alone); on any other client a plain one. A message on it is a small
// JSON envelope:
//
//	{"topics":["run:42","job:demo-collect","runs"],"key":"run:42",
//	 "src":"api-1:3f9c","epoch":1767225600000000000,"seq":17,"final":false,
//	 "payload":{...}}
//
// Topics route a message to subscribers ("run:42", "job:demo-collect", "runs" for all runs);
// the key names the thing whose state the payload is (one run), and is the unit of
// coalescing and ordering. Payloads are opaque JSON to this package.
//
// # Delivery
//
// Redis pub/sub is at-most-once: a message published while a subscriber is disconnected is
// lost. The Hub detects every reconnection and then sends Message{Resync: true} to each
// subscription; the consumer re-reads the state from the database. Consumers therefore take a
// snapshot, then apply events, and re-snapshot on Resync.
//
// Progress is coalesced, latest wins, both when publishing (at most one send per key per
// MinInterval) and when a subscriber is slow (its buffer keeps the latest message per key).
// A message with Final set is never coalesced away by a non-final one: the last state of a
// key always reaches every connected subscriber that keeps reading.
//
// # Ordering
//
// Each message carries a Seq: the publisher's start time (Epoch), its instance id and a
// counter that increases with every Publish call of that publisher. The guarantees are:
//
//   - Messages of one key from one publisher are delivered in Publish order; a subscriber
//     never sees an older one after a newer one.
//   - Messages of one key from different publishers are ordered by the publishers' start
//     times (then instance ids): everything from a publisher started later counts as newer.
//     Start times come from the publishers' clocks, so with skewed clocks or an old process
//     taking over a key from a young one, an older-looking message can be dropped as stale.
//     Finals are exempt: a final message is never dropped as stale, so a run failed by a
//     recovering instance still shows as failed.
//   - After a key's final message, the Hub drops non-final messages for that key (a paused
//     worker waking up after its run was ended elsewhere cannot resurrect it on screens).
//     The Hub remembers keys for HubOptions.KeyMemory.
//   - There is no ordering between different keys beyond what Redis gives one connection.
package pubsub

import (
	"encoding/json"
	"errors"
)

// ErrClosed is returned by Publish after the Publisher was closed.
var ErrClosed = errors.New("pubsub: closed")

// Channel returns the Redis channel that carries the events of env.
func Channel(env string) string { return "baton:{" + env + "}:events" }

// Seq orders the messages of one key; see the package documentation for the guarantees.
type Seq struct {
	// Epoch is the Unix time in nanoseconds at which the publisher started.
	Epoch int64
	// Instance identifies the publisher (PublisherOptions.InstanceID).
	Instance string
	// N increases with every Publish call of the publisher, across all keys; it starts at 1.
	N uint64
}

// Before reports whether s orders before o.
func (s Seq) Before(o Seq) bool {
	if s.Epoch != o.Epoch {
		return s.Epoch < o.Epoch
	}
	if s.Instance != o.Instance {
		return s.Instance < o.Instance
	}
	return s.N < o.N
}

// Message is one event as a subscriber receives it. Subscribers share Topics and Payload
// with each other: treat them as read-only.
type Message struct {
	// Topics are the topics the message was published to.
	Topics []string
	// Key names the thing the payload describes, such as "run:42".
	Key string
	// Seq orders the messages of Key.
	Seq Seq
	// Final marks the last state of Key.
	Final bool
	// Payload is the publisher's JSON document.
	Payload json.RawMessage
	// Resync, when true, means events may have been lost (the Hub reconnected to Redis, or
	// the subscriber fell too far behind): re-read the state from the source of truth. A
	// Resync message carries no other field.
	Resync bool

	// decoded is shared by every copy of a message the Hub fans out, so that a Decoder
	// decodes the payload once for all subscribers.
	decoded *decodedPayload
}

// envelope is the wire form of a message.
type envelope struct {
	Topics  []string        `json:"topics"`
	Key     string          `json:"key"`
	Src     string          `json:"src"`
	Epoch   int64           `json:"epoch"`
	Seq     uint64          `json:"seq"`
	Final   bool            `json:"final,omitempty"`
	Payload json.RawMessage `json:"payload"`
}

func (e *envelope) message() Message {
	return Message{
		Topics:  e.Topics,
		Key:     e.Key,
		Seq:     Seq{Epoch: e.Epoch, Instance: e.Src, N: e.Seq},
		Final:   e.Final,
		Payload: e.Payload,
		decoded: &decodedPayload{},
	}
}
