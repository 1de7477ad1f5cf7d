package runner_test

import (
	"testing"

	"github.com/baton-run/baton/internal/testenv"
)

// TestRunnerDependencies keeps the dependency direction: the runner and every package below
// it (the engine parts in runner/internal, the store and its driver, the Redis lock) know
// nothing of HTTP, GraphQL, the API server or live-event transport. No file of runner or of a
// package below it imports one of them, and no package of runner/... depends on one however
// indirectly, net/http aside: the Prometheus client brings it.
func TestRunnerDependencies(t *testing.T) {
	t.Parallel()
	transports := []string{"github.com/99designs/gqlgen", "github.com/vektah/gqlparser",
		"github.com/gorilla/websocket", "github.com/baton-run/baton/graph", "github.com/baton-run/baton/server",
		"github.com/baton-run/baton/pubsub", "github.com/baton-run/baton/live", "github.com/baton-run/baton/cmd",
		"github.com/baton-run/baton/internal/demo"}
	testenv.ForbidImports(t, ".", "the runner", append([]string{"net/http"}, transports...))
	testenv.ForbidDeps(t, "./...", "the runner", transports)
	// Spans: the runner speaks the OpenTelemetry API only; which SDK and exporter (if any)
	// receive them is the program's choice (package tracing for baton serve).
	testenv.ForbidDeps(t, "./...", "the runner, which uses the OpenTelemetry API only", []string{
		"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "github.com/baton-run/baton/tracing"})
}
