package runner_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunnerDependencies keeps the dependency direction: the runner and its adapters know
// nothing of HTTP, GraphQL, the API server or live-event transport.
func TestRunnerDependencies(t *testing.T) {
	t.Parallel()
	forbidden := []string{"net/http", "github.com/99designs/gqlgen", "github.com/vektah/gqlparser",
		"github.com/gorilla/websocket", "github.com/baton-run/baton/graph", "github.com/baton-run/baton/server",
		"github.com/baton-run/baton/pubsub", "github.com/baton-run/baton/cmd", "github.com/baton-run/baton/internal/demo"}
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
					t.Errorf("%s imports %s: the runner must not depend on it", path, p)
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
}
