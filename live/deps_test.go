package live_test

import (
	"testing"

	"github.com/baton-run/baton/internal/testenv"
)

// TestLiveDependencies keeps live delivery below the API: graph's subscriptions use it, never
// the reverse, and it knows nothing of GraphQL or the server.
func TestLiveDependencies(t *testing.T) {
	t.Parallel()
	testenv.ForbidDeps(t, ".", "live delivery", []string{"github.com/baton-run/baton/graph",
		"github.com/baton-run/baton/server", "github.com/baton-run/baton/cmd", "github.com/99designs/gqlgen"})
}
