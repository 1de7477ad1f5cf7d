package graph

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Shared frames (ADR 30). gqlgen's transport marshals every event twice per subscriber (the
// response, then its message) before the socket write. A connection that can write a
// prepared message itself offers a SubscriptionWriter in the request's context: a member of a
// shared execution then writes each event itself, as one frame built once per event and
// subscription id, and the transport only completes the subscription at the end. Anything
// else — a connection that offers no writer, an operation whose id it does not know, the
// subscriptions that are not shared — goes through gqlgen's transport as before.

// A SubscriptionWriter writes the events of shared subscriptions to one connection.
type SubscriptionWriter interface {
	// SubscribeID returns the id the client gave the subscription being read now, false when
	// it does not know it. gqlgen asks it while it handles the client's subscribe message.
	SubscribeID() (string, bool)
	// WriteNext writes event e as the next message of subscription id; every connection
	// with a subscriber of the same id can write the same frame (SharedEvent.Frame).
	WriteNext(e *SharedEvent, id string) error
}

type subscriptionWriterKey struct{}

// WithSubscriptionWriter returns ctx with w, the writer of the connection ctx is the request
// of.
func WithSubscriptionWriter(ctx context.Context, w SubscriptionWriter) context.Context {
	return context.WithValue(ctx, subscriptionWriterKey{}, w)
}

func subscriptionWriterFrom(ctx context.Context) SubscriptionWriter {
	w, _ := ctx.Value(subscriptionWriterKey{}).(SubscriptionWriter)
	return w
}

// SharedEvent is one event of a shared execution: the response every member gets, its JSON
// marshalled once, and its frames, built once per subscription id.
type SharedEvent struct {
	Response *graphql.Response
	stats    *LiveStats

	payloadOnce sync.Once
	payload     []byte
	payloadErr  error

	mu     sync.Mutex
	frames map[string]any
}

// Payload returns the response as JSON, as gqlgen's transport would marshal it.
func (e *SharedEvent) Payload() ([]byte, error) {
	e.payloadOnce.Do(func() { e.payload, e.payloadErr = json.Marshal(e.Response) })
	return e.payload, e.payloadErr
}

// Frame returns the frame of subscription id, built by build from the payload the first time
// any connection asks for it.
func (e *SharedEvent) Frame(id string, build func(payload []byte, id string) (any, error)) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if f, ok := e.frames[id]; ok {
		return f, nil
	}
	payload, err := e.Payload()
	if err != nil {
		return nil, err
	}
	f, err := build(payload, id)
	if err != nil {
		return nil, err
	}
	if e.frames == nil {
		e.frames = map[string]any{}
	}
	e.frames[id] = f
	if e.stats != nil {
		e.stats.Frames.Add(1)
	}
	return f, nil
}

// subscriptionIDKey is the operation's Stats extension that holds its subscription id.
const subscriptionIDKey = "baton.subscriptionID"

// subscriptionIDs records, on each shared subscription read from a connection that writes
// events itself, the id the client gave it: gqlgen does not hand it to operation middleware.
// It runs while the transport handles the subscribe message, so the writer's SubscribeID is
// that message's.
type subscriptionIDs struct{}

var (
	_ graphql.HandlerExtension        = subscriptionIDs{}
	_ graphql.OperationContextMutator = subscriptionIDs{}
)

func (subscriptionIDs) ExtensionName() string                   { return "SubscriptionIDs" }
func (subscriptionIDs) Validate(graphql.ExecutableSchema) error { return nil }

func (subscriptionIDs) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	w := subscriptionWriterFrom(ctx)
	if w == nil || !sharedOperation(oc) {
		return nil
	}
	if id, ok := w.SubscribeID(); ok {
		oc.Stats.SetExtension(subscriptionIDKey, id)
	}
	return nil
}
