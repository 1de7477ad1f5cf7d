package pubsub_test

import (
	"testing"

	"github.com/baton-run/baton/internal/testenv"
)

// TestPubsubIsALeaf keeps pubsub a leaf: it carries opaque payloads over Redis and depends on
// nothing of Baton's, so that everything above it (the live delivery, the runner's sinks) can
// use it without a cycle.
func TestPubsubIsALeaf(t *testing.T) {
	t.Parallel()
	testenv.ForbidDeps(t, "./...", "pubsub", []string{"github.com/baton-run/baton"})
}
