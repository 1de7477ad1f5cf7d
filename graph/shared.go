package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/graph/model"
)

// Shared execution of subscriptions (ADR 0030). Subscribers of one distinct operation — the
// same document, operation name, variables and role — share one execution: the operation's
// stream runs once, each of its events is resolved and serialised once, and every subscriber
// gets the same response, hence the same bytes. Only streams of states are shared (sharedRoots):
// each event is the whole state of one thing, so a subscriber that joins late starts from the
// latest event, and one that falls behind skips to the latest (the final state is never
// replaced, since nothing follows it).

// sharedRoots are the subscription fields whose operations are shared.
var sharedRoots = map[string]bool{"runProgress": true, "reconcileRequest": true}

// LiveStats counts the work of shared subscription executions. Its counters only grow.
type LiveStats struct {
	// Executions is how many shared executions started: one per distinct operation while it
	// has subscribers.
	Executions atomic.Int64
	// Events is how many events those executions resolved and serialised.
	Events atomic.Int64
	// Subscribers is how many subscriptions joined a shared execution.
	Subscribers atomic.Int64
	// Frames is how many messages were framed for subscribers' connections to write
	// themselves: one per event and subscription id, however many subscribers share them.
	Frames atomic.Int64
}

// shareKey is what makes two subscriptions the same operation. The role is part of it
// because @hasRole decides per role; no resolver reachable from a subscription reads
// anything else of the caller (the execution's Caller carries the role alone).
type shareKey struct {
	query, operation, variables string
	role                        model.Role
}

// sharedSubscriptions holds the shared executions of one server.
type sharedSubscriptions struct {
	stats *LiveStats

	mu     sync.Mutex
	groups map[shareKey]*shareGroup
}

func newSharedSubscriptions(stats *LiveStats) *sharedSubscriptions {
	if stats == nil {
		stats = new(LiveStats)
	}
	return &sharedSubscriptions{stats: stats, groups: map[shareKey]*shareGroup{}}
}

// intercept is the operation middleware: a shareable subscription joins its operation's
// shared execution (starting it if there is none); anything else runs as it came.
func (s *sharedSubscriptions) intercept(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	key, ok := shareKeyOf(ctx)
	if !ok {
		return next(ctx)
	}
	m := s.join(ctx, key, next)
	if m.writer != nil {
		return m.write
	}
	return m.next
}

// shareKeyOf returns the operation's key, false when it is not shared: not a subscription,
// no caller, a root other than a field of sharedRoots.
func shareKeyOf(ctx context.Context) (shareKey, bool) {
	if !graphql.HasOperationContext(ctx) {
		return shareKey{}, false
	}
	oc := graphql.GetOperationContext(ctx)
	v := CallerFrom(ctx)
	if v == nil || !sharedOperation(oc) {
		return shareKey{}, false
	}
	vars, err := json.Marshal(oc.Variables) // map keys sorted: one spelling per value
	if err != nil {
		return shareKey{}, false
	}
	return shareKey{query: oc.RawQuery, operation: oc.OperationName, variables: string(vars), role: v.Role}, true
}

// sharedOperation reports whether oc is a subscription of one root field of sharedRoots.
func sharedOperation(oc *graphql.OperationContext) bool {
	if oc.Operation == nil || oc.Operation.Operation != ast.Subscription || len(oc.Operation.SelectionSet) != 1 {
		return false
	}
	f, ok := oc.Operation.SelectionSet[0].(*ast.Field)
	return ok && sharedRoots[f.Name]
}

// join adds a subscriber, with its context ctx, to key's execution, starting one with next
// when there is none. The subscriber leaves when ctx ends.
func (s *sharedSubscriptions) join(ctx context.Context, key shareKey, next graphql.OperationHandler) *shareMember {
	m := &shareMember{ctx: ctx, wake: make(chan struct{}, 1)}
	if w := subscriptionWriterFrom(ctx); w != nil {
		if id, ok := graphql.GetOperationContext(ctx).Stats.GetExtension(subscriptionIDKey).(string); ok {
			m.writer, m.id = w, id
		}
	}
	s.mu.Lock()
	g := s.groups[key]
	fresh := g == nil
	var gctx context.Context
	if fresh {
		g = &shareGroup{s: s, key: key, members: map[*shareMember]struct{}{}}
		gctx, g.cancel = context.WithCancel(executionContext(ctx, key.role))
		s.groups[key] = g
	}
	m.g = g
	g.mu.Lock()
	g.members[m] = struct{}{}
	if g.last != nil {
		m.offer(g.last) // the latest state is the late subscriber's snapshot
	}
	g.mu.Unlock()
	s.mu.Unlock()
	s.stats.Subscribers.Add(1)
	context.AfterFunc(ctx, m.leave)
	if fresh {
		s.stats.Executions.Add(1)
		// gqlgen expects the operation handler to be called before the middleware returns;
		// the events are then taken in the group's goroutine.
		go g.run(gctx, next(gctx))
	}
	return m
}

// executionContext is the context of a shared execution: the first subscriber's values (its
// operation, which every member shares) without its cancellation, a Caller that is the role
// alone, no trace span (the execution outlives the first subscriber's), and the stream's
// shards (trackStreams), since the execution takes its events under this context.
func executionContext(ctx context.Context, role model.Role) context.Context {
	ctx = context.WithoutCancel(ctx)
	ctx = withStreamShards(WithCaller(ctx, &Caller{Role: role, WebSocket: true}))
	return trace.ContextWithSpanContext(ctx, trace.SpanContext{})
}

// shareGroup is one shared execution and its subscribers.
type shareGroup struct {
	s      *sharedSubscriptions
	key    shareKey
	cancel context.CancelFunc

	mu      sync.Mutex
	members map[*shareMember]struct{}
	last    *SharedEvent // the latest event, nil before the first
}

// run executes the operation and hands each event to the members, until the stream ends or
// the last member leaves. Each event is copied out of the executor first: gqlgen's
// subscription executor writes every event's data into one buffer, reset for the next event,
// which it resolves while members may still be sending this one.
func (g *shareGroup) run(ctx context.Context, responses graphql.ResponseHandler) {
	defer g.end()
	for {
		r := responses(ctx)
		if r == nil {
			return
		}
		owned := *r
		owned.Data = bytes.Clone(r.Data)
		e := &SharedEvent{Response: &owned, stats: g.s.stats}
		g.s.stats.Events.Add(1)
		g.mu.Lock()
		g.last = e
		for m := range g.members {
			m.offer(e)
		}
		g.mu.Unlock()
	}
}

// end retires the group: later subscribers start a new execution, members get what is
// pending and then the end of the stream.
func (g *shareGroup) end() {
	g.s.mu.Lock()
	if g.s.groups[g.key] == g {
		delete(g.s.groups, g.key)
	}
	g.mu.Lock()
	for m := range g.members {
		m.finish()
	}
	g.mu.Unlock()
	g.s.mu.Unlock()
	g.cancel()
}

// shareMember is one subscriber of a shared execution. Latest wins: an event not yet taken is
// replaced by a newer one.
type shareMember struct {
	g    *shareGroup
	ctx  context.Context // the subscriber's operation
	wake chan struct{}
	// writer and id, when the subscriber's connection writes its events itself (write).
	writer SubscriptionWriter
	id     string

	mu      sync.Mutex
	pending *SharedEvent
	ended   bool
}

func (m *shareMember) offer(r *SharedEvent) {
	m.mu.Lock()
	m.pending = r
	m.mu.Unlock()
	m.signal()
}

func (m *shareMember) finish() {
	m.mu.Lock()
	m.ended = true
	m.mu.Unlock()
	m.signal()
}

func (m *shareMember) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// next is the subscriber's response handler: its next event, nil at the end of the stream
// or once the subscriber's context ends. The context it is called with is not the
// subscriber's for the member that started the execution (gqlgen hands the execution's back),
// so take waits on the subscriber's own.
func (m *shareMember) next(context.Context) *graphql.Response {
	if e := m.take(); e != nil {
		return e.Response
	}
	return nil
}

// write is the response handler of a subscriber whose connection writes its events itself:
// it writes each event as it comes and returns nil, for the transport to complete the
// subscription, at the end of the stream, once the subscriber's context ends, or when a write
// fails (the connection is broken; the transport sees that too).
func (m *shareMember) write(context.Context) *graphql.Response {
	for {
		e := m.take()
		if e == nil {
			return nil
		}
		if err := m.writer.WriteNext(e, m.id); err != nil {
			m.leave()
			return nil
		}
		recordWrittenErrors(m.ctx, e.Response.Errors)
	}
}

// take returns the subscriber's next event, nil at the end of the stream or once its
// context ends.
func (m *shareMember) take() *SharedEvent {
	ctx := m.ctx
	for {
		if ctx.Err() != nil { // stopped: nothing more goes out
			m.leave()
			return nil
		}
		m.mu.Lock()
		r, ended := m.pending, m.ended
		m.pending = nil
		m.mu.Unlock()
		if r != nil {
			return r
		}
		if ended {
			m.leave()
			return nil
		}
		select {
		case <-m.wake:
		case <-ctx.Done():
		}
	}
}

// leave removes the subscriber; the last one to leave stops the execution.
func (m *shareMember) leave() {
	m.finish()
	g := m.g
	g.s.mu.Lock()
	g.mu.Lock()
	_, in := g.members[m]
	delete(g.members, m)
	empty := in && len(g.members) == 0
	if empty && g.s.groups[g.key] == g {
		delete(g.s.groups, g.key)
	}
	g.mu.Unlock()
	g.s.mu.Unlock()
	if empty {
		g.cancel()
	}
}
