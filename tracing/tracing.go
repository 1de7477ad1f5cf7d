// Package tracing sets up OpenTelemetry tracing for a Baton instance from the standard OTEL_*
// environment variables, and holds what the HTTP side needs of it: the propagator, the
// middleware that reads a caller's trace context from its request, the http.RoundTripper that
// carries a job's trace to the systems it calls, and the log handler that stamps log lines with
// the trace they belong to.
//
// Tracing is off by default: Setup returns no provider unless the exporter is "otlp", and the
// runner and the API then make no span at all. The runner and package graph use the
// OpenTelemetry API only (go.opentelemetry.io/otel/trace); the SDK and the exporters live here.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// The exporters Config.Exporter names, as OTEL_TRACES_EXPORTER spells them.
const (
	// ExporterNone makes no spans: the default.
	ExporterNone = "none"
	// ExporterOTLP sends spans over OTLP, HTTP/protobuf or gRPC as
	// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL says.
	ExporterOTLP = "otlp"
)

// DefaultServiceName is the service.name of Baton's spans unless OTEL_SERVICE_NAME says
// otherwise.
const DefaultServiceName = "baton"

// Config says whether and where an instance sends its spans.
type Config struct {
	// Exporter is ExporterNone ("" too) or ExporterOTLP (`--traces-exporter`, the standard
	// OTEL_TRACES_EXPORTER).
	Exporter string
	// Instance and Version describe the process in the spans' resource
	// (service.instance.id, service.version).
	Instance, Version string
	// LookupEnv reads the OTEL_* variables Setup interprets itself; nil means os.LookupEnv.
	// Those are OTEL_SDK_DISABLED, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_ENDPOINT,
	// their TRACES_ forms and OTEL_SERVICE_NAME; the SDK and the exporters read the others
	// (headers, timeout, compression, certificates, sampler, batching, resource attributes)
	// from the process environment themselves.
	LookupEnv func(string) (string, bool)
	// Logger receives OpenTelemetry's errors (a batch of spans the receiver did not take) as
	// warnings; nil leaves OpenTelemetry's error handler as it is. The handler is the
	// process's: the last Setup with a Logger wins.
	Logger *slog.Logger
}

// Setup returns the tracer provider c asks for, or nil when tracing is off: Exporter none or
// empty, or OTEL_SDK_DISABLED=true. A value it cannot use (an unknown exporter or protocol,
// an endpoint that is no URL) is an error naming its variable, never a silent default. The
// caller shuts the provider down on exit, which sends the spans still buffered.
func Setup(ctx context.Context, c Config) (*sdktrace.TracerProvider, error) {
	env := c.LookupEnv
	if env == nil {
		env = os.LookupEnv
	}
	if v, ok := env("OTEL_SDK_DISABLED"); ok && v != "" {
		off, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("OTEL_SDK_DISABLED must be true or false, not %q", v)
		}
		if off {
			return nil, nil
		}
	}
	if err := CheckExporter(c.Exporter); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.Exporter) != ExporterOTLP {
		return nil, nil
	}
	if c.Logger != nil {
		SetErrorLogger(c.Logger)
	}
	exp, err := newExporter(ctx, env)
	if err != nil {
		return nil, err
	}
	res, err := newResource(ctx, c, env)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, err
	}
	// The sampler is the SDK's default, which reads OTEL_TRACES_SAMPLER and its argument:
	// parentbased_always_on unless they say otherwise. A caller that sampled its request
	// out is followed, so a run it starts is not traced either.
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// SetErrorLogger sends OpenTelemetry's errors, the failed exports of spans among them, to log
// as warnings ("trace export failed"), instead of OpenTelemetry's default, which writes them
// through the standard library's log.
func SetErrorLogger(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("trace export failed", "err", err)
	}))
}

// CheckExporter refuses an exporter Setup does not know, naming the setting.
func CheckExporter(name string) error {
	switch strings.TrimSpace(name) {
	case "", ExporterNone, ExporterOTLP:
		return nil
	default:
		return fmt.Errorf("traces-exporter (OTEL_TRACES_EXPORTER) must be none or otlp, not %q", name)
	}
}

// newExporter makes the OTLP exporter of the protocol the environment names (http/protobuf by
// default, as the specification says), to the endpoint it names, if any.
func newExporter(ctx context.Context, env func(string) (string, bool)) (sdktrace.SpanExporter, error) {
	name, protocol := first(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	if protocol == "" {
		protocol = "http/protobuf"
	}
	endpoint, err := endpointURL(env, protocol)
	if err != nil {
		return nil, err
	}
	switch protocol {
	case "http/protobuf":
		var opts []otlptracehttp.Option
		if endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
		}
		return otlptracehttp.New(ctx, opts...)
	case "grpc":
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("%s must be http/protobuf or grpc, not %q", name, protocol)
	}
}

// endpointURL returns the URL spans go to, "" for the exporter's default (localhost:4318 or
// :4317). OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is; the generic
// OTEL_EXPORTER_OTLP_ENDPOINT is a base to which HTTP adds /v1/traces, as the specification
// says. Setup checks it here because the exporters keep their default, silently, for a URL
// they cannot parse.
func endpointURL(env func(string) (string, bool), protocol string) (string, error) {
	name, v := first(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s must be an http:// or https:// URL, not %q", name, v)
	}
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" && protocol == "http/protobuf" {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// newResource describes this process: service.name (baton unless OTEL_SERVICE_NAME says
// otherwise), its version and instance, and OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context, c Config, env func(string) (string, bool)) (*resource.Resource, error) {
	attrs := resource.NewSchemaless(semconv.ServiceName(DefaultServiceName))
	fromEnv, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	own := []resource.Option{resource.WithAttributes(semconv.ServiceInstanceID(c.Instance))}
	if c.Version != "" {
		own = append(own, resource.WithAttributes(semconv.ServiceVersion(c.Version)))
	}
	if _, name := first(env, "OTEL_SERVICE_NAME"); name != "" {
		own = append(own, resource.WithAttributes(semconv.ServiceName(name)))
	}
	mine, err := resource.New(ctx, own...)
	if err != nil {
		return nil, err
	}
	// Later wins: the environment's over the default name, this process's over both.
	merged, err := resource.Merge(attrs, fromEnv)
	if err != nil {
		return nil, err
	}
	return resource.Merge(merged, mine)
}

// first returns the first of names that is set and not empty, and its value.
func first(env func(string) (string, bool), names ...string) (name, value string) {
	for _, n := range names {
		if v, ok := env(n); ok && strings.TrimSpace(v) != "" {
			return n, strings.TrimSpace(v)
		}
	}
	return names[len(names)-1], ""
}

// Propagator is how Baton reads and writes trace context on the wire: W3C traceparent and
// tracestate, and baggage. It is fixed, not taken from the process-wide propagator, so that a
// program embedding Baton propagates the same way whatever it set up.
func Propagator() propagation.TextMapPropagator { return propagator }

var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
