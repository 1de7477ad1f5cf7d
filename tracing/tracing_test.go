package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/baton-run/baton/tracing"
)

// Setup makes a provider only when asked for one, and refuses a value it cannot use with an
// error naming its setting, rather than falling back to a default.
func TestSetupFromEnvironment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		exporter string
		env      map[string]string
		on       bool
		err      string // a part of the error, "" for none
	}{
		{name: "off by default", exporter: "", on: false},
		{name: "none", exporter: "none", on: false},
		{name: "otlp over HTTP by default", exporter: "otlp", on: true},
		{name: "otlp over gRPC", exporter: "otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true},
		{name: "traces protocol wins", exporter: "otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "bogus",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, on: true},
		{name: "SDK disabled", exporter: "otlp", env: map[string]string{"OTEL_SDK_DISABLED": "true"}, on: false},
		{name: "unknown exporter", exporter: "jaeger", err: "OTEL_TRACES_EXPORTER"},
		{name: "unknown protocol", exporter: "otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			err: "OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or grpc"},
		{name: "endpoint no URL", exporter: "otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
			err: "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL"},
		{name: "traces endpoint no URL", exporter: "otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "::"},
			err: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{name: "SDK disabled not a bool", exporter: "otlp", env: map[string]string{"OTEL_SDK_DISABLED": "maybe"}, err: "OTEL_SDK_DISABLED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp, err := tracing.Setup(context.Background(), tracing.Config{Exporter: c.exporter,
				LookupEnv: func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }})
			if tp != nil {
				defer tp.Shutdown(context.Background()) //nolint:errcheck
			}
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one saying %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case (tp != nil) != c.on:
				t.Fatalf("provider %v, want one: %v", tp, c.on)
			}
		})
	}
}

// A line logged with a context that holds a span names the span's trace and span; a logger
// that names its trace already (a run's) is left as it is; a line without a span has neither.
func TestLogHandlerAddsTheTrace(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil)))
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "op")
	defer span.End()
	log.InfoContext(ctx, "with span")
	log.Info("without")
	log.With("trace_id", "mine").InfoContext(ctx, "tagged")
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	sc := span.SpanContext()
	if lines[0]["trace_id"] != sc.TraceID().String() || lines[0]["span_id"] != sc.SpanID().String() {
		t.Errorf("line with a span: %v, want trace_id %s span_id %s", lines[0], sc.TraceID(), sc.SpanID())
	}
	if _, ok := lines[1]["trace_id"]; ok {
		t.Errorf("line without a span: %v, want no trace_id", lines[1])
	}
	if lines[2]["trace_id"] != "mine" || lines[2]["span_id"] != nil {
		t.Errorf("line of a tagged logger: %v, want its own trace_id only", lines[2])
	}
}
