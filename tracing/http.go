package tracing

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
)

// Transport returns base (http.DefaultTransport when nil) wrapped so that every request made
// with a context that holds a span — the context Baton gives an item's function holds the
// call's span — goes out in a client span of its own, child of that span, and carries its
// traceparent header: the system called continues the run's trace. Without a span in the
// context (tracing off) the request goes out as it came, with no header and no span.
//
//	client := &http.Client{Transport: tracing.Transport(nil)}
//	req, _ := http.NewRequestWithContext(ctx, "POST", url, body) // ctx: the item function's
//	req.Header.Set("Idempotency-Key", a.IdempotencyKey)
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	// No tracer provider is given: otelhttp takes the one of the span in the request's
	// context, so the client span goes wherever the run's spans go.
	return otelhttp.NewTransport(base, otelhttp.WithPropagators(propagator))
}

// Extract returns h reading the caller's trace context (traceparent, tracestate, baggage) from
// each request into its context, so that the spans made for the request — a GraphQL
// operation's, a run it starts — are children of the caller's span. It makes no span itself.
func Extract(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") == "" {
			h.ServeHTTP(w, r)
			return
		}
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
