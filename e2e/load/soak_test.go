//go:build soak

package load

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
)

// TestSoakLoad is the full load (`make soak`): 3 instances, 200 GraphQL clients querying
// without pause, 1,000 WebSocket subscribers and 3 runs committing items as fast as they can
// for 2 minutes. It fails on any 5xx, internal error or lost final event, and reports API
// latency and each run's items/s against the goal of 5,000 into .data/soak/report.txt.
//
// The environment resizes it: BATON_SOAK_DURATION (2m), BATON_SOAK_NODES (3),
// BATON_SOAK_CLIENTS (200), BATON_SOAK_SUBSCRIBERS (1000), BATON_SOAK_RUNS (3),
// BATON_SOAK_THINK (0: no pause between a client's requests), BATON_SOAK_BATCH (2000 items per
// commit), BATON_SOAK_MIN_ITEMS_PER_SEC (0: the goal is reported, not enforced; set 5000 to
// fail a run below it).
func TestSoakLoad(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	runLoad(t, config{
		name:            "soak",
		nodes:           envInt(t, "BATON_SOAK_NODES", 3),
		clients:         envInt(t, "BATON_SOAK_CLIENTS", 200),
		subscribers:     envInt(t, "BATON_SOAK_SUBSCRIBERS", 1000),
		runs:            envInt(t, "BATON_SOAK_RUNS", 3),
		duration:        envDuration(t, "BATON_SOAK_DURATION", 2*time.Minute),
		think:           envDuration(t, "BATON_SOAK_THINK", 0),
		batch:           envInt(t, "BATON_SOAK_BATCH", 2000),
		parallelism:     8,
		minItemsPerSec:  float64(envInt(t, "BATON_SOAK_MIN_ITEMS_PER_SEC", 0)),
		goalItemsPerSec: 5000,
		report:          filepath.Join(root, ".data", "soak", "report.txt"),
	})
}

func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s must be a number >= 0, not %q", key, v)
	}
	return n
}

func envDuration(t *testing.T, key string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s must be a duration such as 30s, not %q", key, v)
	}
	return d
}
