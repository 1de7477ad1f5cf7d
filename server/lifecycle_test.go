//go:build unix

package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
)

// get answers GET base+path: its status and body, or an error when nothing answers.
func get(base, path string) (int, string, error) {
	res, err := http.Get(base + path)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b)), nil
}

// serveInBackground serves c until the test ends (or stop is called) and returns the base
// URL once it is up, and stop, which cancels and returns Serve's error.
func serveInBackground(t *testing.T, c Config) (base string, stop func() error) {
	t.Helper()
	ready := make(chan string, 1)
	c.Ready = func(b, _ string) { ready <- b }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, c) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case base = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("not up within 3 minutes")
	}
	return base, stop
}

func testConfig(t *testing.T, databaseURL string) Config {
	_, env := testenv.Redis(t)
	c := quietConfig(databaseURL)
	c.RedisURL, c.Env, c.Addr, c.PoolSize = testenv.RedisURL(), env, "127.0.0.1:0", 1
	c.DrainDelay = 0
	return c
}

// TestDrainDelayKeepsAnswering: told to stop, the instance says 503 "draining" on /readyz for
// the drain delay while it still answers every other request; the listener closes only once
// the delay is over. The delay is held open by the test, not timed.
func TestDrainDelayKeepsAnswering(t *testing.T) {
	t.Parallel()
	c := testConfig(t, testenv.Schema(t))
	c.DrainDelay = time.Hour
	entered, release := make(chan time.Duration, 1), make(chan struct{})
	c.drainWait = func(d time.Duration) { entered <- d; <-release }
	base, stop := serveInBackground(t, c)
	if code, body, err := get(base, "/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz before shutdown: %d %q %v; want 200", code, body, err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	if d := <-entered; d != time.Hour {
		t.Errorf("drain wait of %v; want the configured hour", d)
	}
	if code, body, err := get(base, "/readyz"); err != nil || code != http.StatusServiceUnavailable || body != "draining" {
		t.Errorf("/readyz while draining: %d %q %v; want 503 draining", code, body, err)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if code, _, err := get(base, path); err != nil || code != http.StatusOK {
			t.Errorf("%s while draining: %d %v; want 200", path, code, err)
		}
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, _, err := get(base, "/healthz"); err == nil {
		t.Error("/healthz answered after the instance stopped")
	}
}

// TestStartWaitsForPostgres: started while its PostgreSQL is down, the instance listens at
// once, alive (/healthz 200) and not ready (/readyz 503 starting), retries, and serves once
// PostgreSQL is up.
func TestStartWaitsForPostgres(t *testing.T) {
	t.Parallel()
	pg := testenv.PrivatePostgres(t)
	pg.Stop(t)
	c := testConfig(t, pg.URL("postgres"))
	c.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
	c.StartTimeout = 10 * time.Minute
	base := "http://" + c.Addr
	ready := make(chan string, 1)
	c.Ready = func(b, _ string) { ready <- b }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, c) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	testenv.Eventually(t, time.Minute, "the listener to answer", func() bool {
		_, _, err := get(base, "/healthz")
		return err == nil
	})
	if code, body, err := get(base, "/readyz"); err != nil || code != http.StatusServiceUnavailable || body != "starting" {
		t.Errorf("/readyz with PostgreSQL down: %d %q %v; want 503 starting", code, body, err)
	}
	if code, _, err := get(base, "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz with PostgreSQL down: %d %v; want 200", code, err)
	}
	pg.Start(t)
	select {
	case <-ready:
	case err := <-done:
		done <- err
		t.Fatalf("serve gave up: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("not up within 3 minutes of PostgreSQL starting")
	}
	testenv.Eventually(t, time.Minute, "readiness", func() bool {
		code, _, _ := get(base, "/readyz")
		return code == http.StatusOK
	})
}

// TestStartTimeoutGivesUp: a PostgreSQL that stays unreachable fails the start once the start
// timeout is spent, naming it; a negative timeout or drain delay is refused, naming the setting.
func TestStartTimeoutGivesUp(t *testing.T) {
	t.Parallel()
	c := testConfig(t, "postgres://postgres@127.0.0.1:"+strconv.Itoa(testenv.FreePort(t))+"/x?sslmode=disable")
	c.StartTimeout = time.Millisecond
	err := Serve(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "start-timeout") {
		t.Errorf("serve with PostgreSQL unreachable: %v; want an error naming start-timeout", err)
	}
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.StartTimeout = -time.Second }, "start-timeout (BATON_START_TIMEOUT) must be 0 or more"},
		{func(c *Config) { c.DrainDelay = -time.Second }, "drain-delay (BATON_DRAIN_DELAY) must be 0 or more"},
	} {
		c := testConfig(t, testenv.Schema(t))
		tc.set(&c)
		if err := Serve(context.Background(), c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve: %v; want %q", err, tc.want)
		}
	}
}

// TestStartsWithoutRedis: Redis is not needed to start: with nothing listening at its URL the
// instance comes up, alive, with /readyz 503 naming Redis.
func TestStartsWithoutRedis(t *testing.T) {
	t.Parallel()
	c := testConfig(t, testenv.Schema(t))
	c.RedisURL = "redis://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) + "/0"
	base, stop := serveInBackground(t, c)
	if code, body, err := get(base, "/readyz"); err != nil || code != http.StatusServiceUnavailable || body != "redis: unreachable" {
		t.Errorf("/readyz without Redis: %d %q %v; want 503 redis: unreachable", code, body, err)
	}
	if code, _, err := get(base, "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz without Redis: %d %v; want 200", code, err)
	}
	if err := stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestPublicURLLinksNotifications: --public-url gives the notifications' sender the console
// under it; without it, none; one that is no absolute http(s) URL is refused, naming the
// setting, before the instance starts.
func TestPublicURLLinksNotifications(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ public, console string }{
		{"https://baton.example.com", "https://baton.example.com/admin"},
		{"https://example.com/baton/", "https://example.com/baton/admin"},
		{"", ""},
	} {
		c := DefaultConfig()
		c.PublicURL = tc.public
		if got := c.notifySender().ConsoleURL; got != tc.console {
			t.Errorf("public-url %q: the sender links %q; want %q", tc.public, got, tc.console)
		}
	}
	for _, bad := range []string{"baton.example.com", "ftp://x", "https://", "https://x/?a=1"} {
		c := testConfig(t, testenv.Schema(t))
		c.PublicURL = bad
		if err := Serve(context.Background(), c); err == nil || !strings.Contains(err.Error(), "public-url (BATON_PUBLIC_URL) must be") {
			t.Errorf("public-url %q: %v; want it refused, naming the setting", bad, err)
		}
	}
}
