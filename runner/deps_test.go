package runner_test

import (
	"testing"

	"github.com/baton-run/baton/internal/testenv"
)

// TestRunnerDependencies keeps the dependency direction: the runner and its adapters know
// nothing of HTTP, GraphQL, the API server or live-event transport.
func TestRunnerDependencies(t *testing.T) {
	t.Parallel()
	forbidden := []string{"net/http", "github.com/99designs/gqlgen", "github.com/vektah/gqlparser",
		"github.com/gorilla/websocket", "github.com/baton-run/baton/graph", "github.com/baton-run/baton/server",
		"github.com/baton-run/baton/pubsub", "github.com/baton-run/baton/cmd", "github.com/baton-run/baton/internal/demo"}
	testenv.ForbidImports(t, ".", "the runner", forbidden)
}
