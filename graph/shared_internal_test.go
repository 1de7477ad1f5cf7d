package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/baton-run/baton/graph/model"
)

// TestSharedExecutionAuthorisesPerRole subscribes a VIEWER and an OPERATOR to the same document,
// whose one field needs OPERATOR (@hasRole, as the real directive decides it), and checks that
// they do not share an execution: the VIEWER's payload carries FORBIDDEN and no value, the
// OPERATOR's the value. The execution acts with the role alone, never with the first
// subscriber's identity.
func TestSharedExecutionAuthorisesPerRole(t *testing.T) {
	s := newSharedSubscriptions(nil)
	d := &directives{}
	var seen []*Caller
	exec := func(ctx context.Context) graphql.ResponseHandler {
		seen = append(seen, CallerFrom(ctx))
		v, err := d.hasRole(ctx, nil, func(context.Context) (any, error) { return "secret", nil }, model.RoleOperator)
		resp := &graphql.Response{}
		if err != nil {
			resp.Errors = append(resp.Errors, presentError(slog.Default())(ctx, err))
			resp.Data = json.RawMessage(`{"f":null}`)
		} else {
			resp.Data, _ = json.Marshal(map[string]any{"f": v})
		}
		return graphql.OneShot(resp)
	}
	subscribe := func(c *Caller) *graphql.Response {
		oc := &graphql.OperationContext{
			RawQuery:  `subscription($id: ID!) { runProgress(runId: $id) { id } }`,
			Variables: map[string]any{"id": "x"},
			Operation: &ast.OperationDefinition{Operation: ast.Subscription, SelectionSet: ast.SelectionSet{&ast.Field{Name: "runProgress"}}},
		}
		ctx, cancel := context.WithCancel(graphql.WithOperationContext(WithCaller(context.Background(), c), oc))
		defer cancel()
		return s.intercept(ctx, exec)(ctx)
	}
	viewer := subscribe(&Caller{TokenID: 1, Name: "v", Role: model.RoleViewer})
	operator := subscribe(&Caller{TokenID: 2, Name: "o", Role: model.RoleOperator})

	if got := s.stats.Executions.Load(); got != 2 {
		t.Fatalf("%d executions, want one per role", got)
	}
	if string(viewer.Data) != `{"f":null}` || len(viewer.Errors) != 1 || viewer.Errors[0].Extensions["code"] != CodeForbidden {
		t.Fatalf("VIEWER got %s %v, want no value and FORBIDDEN", viewer.Data, viewer.Errors)
	}
	if string(operator.Data) != `{"f":"secret"}` || len(operator.Errors) != 0 {
		t.Fatalf("OPERATOR got %s %v, want the value", operator.Data, operator.Errors)
	}
	for _, c := range seen {
		if c.Name != "" || c.TokenID != 0 {
			t.Fatalf("a shared execution ran as %+v: it must carry the role alone", c)
		}
	}
	if len(seen) != 2 {
		t.Fatalf("%d executions observed, want 2", len(seen))
	}
}

// TestSharedEventOutlivesTheNextEvent: gqlgen's subscription executor hands each event's data
// in one buffer that it resets and writes again for the next event (generated.go, case
// ast.Subscription). A subscriber that has taken an event can still be serialising it when the
// shared execution resolves the next one, so the event it holds must own its bytes. Before
// they were copied, 3 to 47 of 5,000 subscribers in BenchmarkGraphSubscribers got "internal
// error" (json: unexpected end of JSON input) instead of the run's final state.
func TestSharedEventOutlivesTheNextEvent(t *testing.T) {
	t.Parallel()
	s := newSharedSubscriptions(nil)
	events := make(chan string)
	var buf bytes.Buffer // one buffer for every event, as the generated executor has
	execute := func(context.Context) graphql.ResponseHandler {
		return func(ctx context.Context) *graphql.Response {
			buf.Reset()
			select {
			case v, ok := <-events:
				if !ok {
					return nil
				}
				buf.WriteString(v)
			case <-ctx.Done():
				return nil
			}
			return &graphql.Response{Data: buf.Bytes()}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := s.join(ctx, shareKey{query: "subscription { runProgress }", role: model.RoleViewer}, execute)
	events <- `{"n":1}`
	first := m.next(ctx) // taken, and still being written to its socket…
	events <- `{"n":2}`  // …while the execution resolves the next event
	second := m.next(ctx)
	close(events)
	if string(first.Data) != `{"n":1}` || string(second.Data) != `{"n":2}` {
		t.Fatalf("the subscriber's events read %s and %s; want {\"n\":1} and {\"n\":2}", first.Data, second.Data)
	}
	if m.next(ctx) != nil {
		t.Fatal("an event after the end of the stream")
	}
}
