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

// TestEngineUsesTheStoreInterfaces keeps the engine parts on the store that runner declares:
// they take runner/store's interfaces and values, and runner hands them the implementation
// (runner/postgres unless Config.Store names another). No package of runner/internal imports
// runner/postgres, in its code or its tests, or depends on it however indirectly.
func TestEngineUsesTheStoreInterfaces(t *testing.T) {
	t.Parallel()
	drivers := []string{"github.com/baton-run/baton/runner/postgres"}
	testenv.ForbidPackageImports(t, "./internal/...", "the engine (it uses runner/store)", drivers)
	testenv.ForbidDeps(t, "./internal/...", "the engine (it uses runner/store)", drivers)
}
