package graph_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/testenv"
)

// TestGraphDependencies keeps graph GraphQL only: the HTTP transport (server/httpapi, its
// WebSocket adapter, authentication and the HTTP limits) depends on graph, never the reverse.
// No file of graph or its subpackages imports net/http, a WebSocket library, gqlgen's
// transports, the server or the store (every read goes through the runner's services), and
// nothing graph depends on, however indirectly, is the server or gorilla/websocket.
func TestGraphDependencies(t *testing.T) {
	t.Parallel()
	forbidden := []string{"net/http", "github.com/gorilla/websocket", "github.com/coder/websocket",
		"github.com/99designs/gqlgen/graphql/handler/transport", "github.com/baton-run/baton/server",
		"github.com/baton-run/baton/cmd", "github.com/baton-run/baton/runner/postgres"}
	testenv.ForbidImports(t, ".", "graph", forbidden)

	// Indirect dependencies: gqlgen's own handler brings net/http and its transports, which is
	// why those are checked above on graph's files only.
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages:\n%s", len(deps), out)
	}
	for _, p := range deps {
		for _, bad := range []string{"github.com/gorilla/websocket", "github.com/baton-run/baton/server"} {
			if p == bad || strings.HasPrefix(p, bad+"/") {
				t.Errorf("graph depends on %s, indirectly: the transport must depend on graph, not the reverse", p)
			}
		}
	}
}
