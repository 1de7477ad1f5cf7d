package graph_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGraphDependencies keeps graph GraphQL only: the HTTP transport (server/httpapi, its
// WebSocket adapter, authentication and the HTTP limits) depends on graph, never the reverse.
// No file of graph or its subpackages imports net/http, a WebSocket library, gqlgen's
// transports or the server, and nothing graph depends on, however indirectly, is the server
// or gorilla/websocket.
func TestGraphDependencies(t *testing.T) {
	t.Parallel()
	forbidden := []string{"net/http", "github.com/gorilla/websocket", "github.com/coder/websocket",
		"github.com/99designs/gqlgen/graphql/handler/transport", "github.com/baton-run/baton/server",
		"github.com/baton-run/baton/cmd"}
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if p == bad || strings.HasPrefix(p, bad+"/") {
					t.Errorf("%s imports %s: graph must not depend on it", path, p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: is the test in the right directory?", checked)
	}

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
