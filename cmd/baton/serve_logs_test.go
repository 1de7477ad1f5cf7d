package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
)

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// jsonLines parses every line of a JSON log stream, failing the test on one that is not a
// JSON object.
func jsonLines(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(stream, "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("log line %d is not JSON: %q", i+1, line)
			continue
		}
		out = append(out, m)
	}
	return out
}

// withMsg returns the lines whose msg is msg.
func withMsg(lines []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// TestServeLogsStayJSONThroughARedisOutage serves with --log-format json on a private Redis,
// stops that Redis, and then shuts the instance down: every line of the stream is JSON (go-redis'
// own messages included, as "redis client" lines), the warning of the failed waits for start
// requests is not repeated every second, and durations are written as text ("30s"). Not
// parallel: go-redis' logger is the process's, and the parallel tests start after this one.
func TestServeLogsStayJSONThroughARedisOutage(t *testing.T) {
	rs := testenv.PrivateRedis(t)
	db := testenv.Schema(t)
	var stdout, stderr lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--database-url", db, "--redis-url", rs.URL(), "--addr", "127.0.0.1:0",
			"--log-format", "json", "--pool-size", "1"}, &stdout, &stderr)
	}()
	testenv.Eventually(t, time.Minute, "the instance to serve", func() bool {
		return strings.Contains(stdout.String(), "Baton is up.")
	})

	rs.Stop(t)
	outageStart := time.Now()
	testenv.Eventually(t, time.Minute, "go-redis' messages and the start requests' warning", func() bool {
		lines := jsonLines(t, stderr.String())
		return len(withMsg(lines, "redis client")) > 0 && len(withMsg(lines, "take start requests")) > 0
	})
	// More of the outage, for repeats to show: readiness probes that find Redis down, each of
	// which goes through go-redis' dial retries again.
	base := regexp.MustCompile(`http://[0-9.:]+`).FindString(stdout.String())
	notReady := 0
	testenv.Eventually(t, time.Minute, "five readiness probes to find Redis down", func() bool {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatalf("GET /readyz during the outage: %v", err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable {
			notReady++
		}
		return notReady >= 5
	})
	outage := time.Since(outageStart)

	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not stop within 2 minutes")
	}
	lines := jsonLines(t, stderr.String())
	counts := map[string]int{}
	for _, l := range lines {
		counts[fmt.Sprint(l["level"], " ", l["msg"])]++
	}
	t.Logf("%d lines over a %v outage: %v", len(lines), outage.Round(time.Second), counts)
	for _, l := range withMsg(lines, "redis client") {
		if l["level"] != "WARN" || l["detail"] == "" {
			t.Errorf("go-redis' line %v; want a WARN with its detail", l)
		}
	}
	// The first of each warning an outage repeats, then at most one a minute.
	most := 1 + int(outage/time.Minute)
	for _, msg := range []string{"take start requests", "redis subscription read failed", "redis client"} {
		if n := len(withMsg(lines, msg)); n == 0 || n > most {
			t.Errorf("%d %q warnings in a %v outage; want 1 to %d", n, msg, outage.Round(time.Second), most)
		}
	}
	down := withMsg(lines, "shutting down: finishing runs at their next boundary")
	if len(down) != 1 || down[0]["timeout"] != "30s" {
		t.Errorf("shutdown lines %v; want one with timeout \"30s\"", down)
	}
}

// TestServeFatalErrorIsLogged: a start-up error of serve is a JSON line of the log (level
// ERROR), and main prints nothing more, so the stream stays JSON to its end.
func TestServeFatalErrorIsLogged(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"serve", "--database-url", testenv.Schema(t), "--redis-url", "ftp://nowhere",
		"--addr", "127.0.0.1:0", "--log-format", "json"}, &stdout, &stderr)
	if err == nil {
		t.Fatal("serve with an ftp:// Redis URL started")
	}
	report(&stderr, err)
	lines := jsonLines(t, stderr.String())
	if len(lines) == 0 {
		t.Fatalf("no log line; stderr %q", stderr.String())
	}
	last := lines[len(lines)-1]
	if last["level"] != "ERROR" || !strings.Contains(last["err"].(string), "redis url") {
		t.Errorf("last line %v; want an ERROR naming the Redis URL", last)
	}
	if exitCode(err, exitError) != exitError {
		t.Errorf("exit code %d; want %d", exitCode(err, exitError), exitError)
	}
}
