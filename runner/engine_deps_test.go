package runner_test

import (
	"testing"

	"github.com/baton-run/baton/internal/testenv"
)

// TestEngineIsInternal keeps the engine behind the runner's API: nothing outside runner, its
// tests included, imports runner/internal/... (the compiler refuses most of it; this names
// the rule).
func TestEngineIsInternal(t *testing.T) {
	t.Parallel()
	testenv.ForbidImporters(t, "github.com/baton-run/baton", "github.com/baton-run/baton/runner/internal", "github.com/baton-run/baton/runner")
}
