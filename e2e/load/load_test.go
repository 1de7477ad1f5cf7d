package load

import (
	"testing"
	"time"
)

// TestLoadSmoke is the load test's short form, run by `go test`: two instances, 20 clients,
// 100 subscribers and one run of 10s. It checks what the soak checks (no 5xx, no internal
// error, no lost final event) at a size every machine manages in about half a minute.
func TestLoadSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts instances and a run of 10s")
	}
	t.Parallel()
	runLoad(t, config{
		name:        "smoke",
		nodes:       2,
		clients:     20,
		subscribers: 100,
		runs:        1,
		duration:    10 * time.Second,
		think:       20 * time.Millisecond,
		batch:       500,
		parallelism: 8,
	})
}
