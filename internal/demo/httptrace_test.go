package demo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestHTTPProviderCarriesTheTrace: a call of the demo's HTTP provider made within a span goes
// through tracing.Transport: the provider receives the span's traceparent, and the call has a
// client span ("HTTP POST") of its own in the same trace.
func TestHTTPProviderCarriesTheTrace(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id": 1}`))
	}))
	defer srv.Close()
	c, err := NewHTTPProvider(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	ctx, span := tp.Tracer("test").Start(context.Background(), "item")
	_, _ = c.Apply(ctx, Payment{IdempotencyKey: "k", Target: "t", Amount: 1})
	span.End()
	traceID := span.SpanContext().TraceID().String()
	if tp := <-got; !strings.Contains(tp, traceID) {
		t.Errorf("the provider got traceparent %q; want one of trace %s", tp, traceID)
	}
	var client bool
	for _, s := range spans.Ended() {
		if s.SpanContext().TraceID().String() == traceID && strings.HasPrefix(s.Name(), "HTTP POST") {
			client = true
		}
	}
	if !client {
		t.Errorf("no HTTP POST client span in the item's trace; spans: %d", len(spans.Ended()))
	}
}
