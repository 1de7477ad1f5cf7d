package tracing

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// The log fields that name a line's trace and span.
const (
	TraceIDKey = "trace_id"
	SpanIDKey  = "span_id"
)

// LogHandler returns h adding trace_id and span_id to every record logged with a context
// that holds a valid span (slog's InfoContext and the like), so a log line leads to its trace.
// A logger that already carries trace_id (a run's logger does) is left as it is.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{inner: h} }

type logHandler struct {
	inner slog.Handler
	// tagged says the logger's own attributes already name the trace.
	tagged bool
}

func (h logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.tagged && ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r = r.Clone()
			r.AddAttrs(slog.String(TraceIDKey, sc.TraceID().String()), slog.String(SpanIDKey, sc.SpanID().String()))
		}
	}
	return h.inner.Handle(ctx, r)
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	tagged := h.tagged
	for _, a := range attrs {
		tagged = tagged || a.Key == TraceIDKey
	}
	return logHandler{inner: h.inner.WithAttrs(attrs), tagged: tagged}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{inner: h.inner.WithGroup(name), tagged: h.tagged}
}
