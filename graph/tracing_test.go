package graph_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// With a tracer provider, each operation is a span named by its type and name: a mutation's
// ends with its response, a failed query's says which codes it failed with, and a
// subscription's lasts until the subscription completes. The run a mutation starts is a span
// of the same trace, its child.
func TestOperationSpans(t *testing.T) {
	b := setup(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	i := b.instance(instanceOpts{
		jobs:   []runner.Job{&gatedJob{name: "spanned", n: 1}},
		graph:  func(c *httpapi.Config) { c.GraphQL.TracerProvider = tp; c.GraphQL.PollInterval = 20 * time.Millisecond },
		runner: func(c *runner.Config) { c.TracerProvider = tp },
	})
	operator := b.token(model.RoleOperator)
	ended := func(name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		return out
	}

	var started struct {
		StartJob struct{ Run *struct{ ID string } }
	}
	i.post(t, operator, `mutation Go($n: String!) { startJob(input: {name: $n}) { run { id } } }`, map[string]any{"n": "spanned"}).decode(t, &started)
	if started.StartJob.Run == nil {
		t.Fatal("startJob started no run")
	}
	id := started.StartJob.Run.ID
	i.waitRunStatus(t, operator, id, "SUCCEEDED")
	ops := ended("mutation Go")
	if len(ops) != 1 || ops[0].SpanKind().String() != "server" || ops[0].Status().Code == codes.Error {
		t.Fatalf("mutation spans %v, want one server span without error", ops)
	}
	var run []sdktrace.ReadOnlySpan
	testenv.Eventually(t, 10*time.Second, "the run's span", func() bool { run = ended("run spanned"); return len(run) == 1 })
	if run[0].Parent().SpanID() != ops[0].SpanContext().SpanID() || run[0].SpanContext().TraceID() != ops[0].SpanContext().TraceID() {
		t.Errorf("run span's parent %s, want the mutation's span %s", run[0].Parent().SpanID(), ops[0].SpanContext().SpanID())
	}

	i.post(t, operator, `query Bad($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": "not-an-id"})
	if q := ended("query Bad"); len(q) != 1 || q[0].Status().Code != codes.Error || len(q[0].Attributes()) < 3 {
		t.Errorf("spans of a query that failed: %v, want one in error naming its codes", q)
	}

	w, _, err := i.dialWS(t, protoTransportWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.init(map[string]any{"authorization": "Bearer " + operator}); err != nil {
		t.Fatal(err)
	}
	w.subscribe("1", `subscription Follow($id: ID!) { runProgress(runId: $id) { id status } }`, map[string]any{"id": id})
	if ev := w.next("1", 10*time.Second); ev.done || len(ev.errors) > 0 {
		t.Fatalf("subscription's first message %+v, want the finished run", ev)
	}
	if end := w.next("1", 10*time.Second); !end.done {
		t.Fatalf("after a finished run's snapshot: %+v, want complete", end)
	}
	testenv.Eventually(t, 10*time.Second, "the subscription's span to end", func() bool { return len(ended("subscription Follow")) == 1 })

	// A subscription whose event is an error: the span names its code, also when the
	// connection wrote the event itself (a shared frame).
	w.subscribe("2", `subscription FollowMissing($id: ID!) { runProgress(runId: $id) { id status } }`, map[string]any{"id": "not-an-id"})
	if ev := w.next("2", 10*time.Second); len(ev.errors) == 0 {
		t.Fatalf("subscription to a malformed run id: %+v, want an error", ev)
	}
	testenv.Eventually(t, 10*time.Second, "the failed subscription's span to end", func() bool {
		return len(ended("subscription FollowMissing")) == 1
	})
	if s := ended("subscription FollowMissing")[0]; s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "BAD_USER_INPUT") {
		t.Fatalf("span of a subscription whose event was an error: status %+v, want an error naming BAD_USER_INPUT", s.Status())
	}
}
