//go:build unix

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
)

// devInstance is an instance serving with a dev admin token until stop is called.
type devInstance struct {
	base, token string
	stop        func(t *testing.T)
}

// startDevInstance serves an instance named instance on databaseURL and env, asking for a
// dev admin token, and returns once it is ready.
func startDevInstance(t *testing.T, databaseURL, env, instance string) devInstance {
	t.Helper()
	c := quietConfig(databaseURL)
	c.RedisURL = testenv.RedisURL()
	c.Env = env
	c.Addr = "127.0.0.1:0"
	c.Instance = instance
	c.AdminTokenName = "dev-admin"
	type started struct{ base, token string }
	ready := make(chan started, 1)
	c.Ready = func(base, token string) { ready <- started{base, token} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, c) }()
	stopped := false
	stop := func(t *testing.T) {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve %s: %v", instance, err)
		}
	}
	t.Cleanup(func() { stop(t) })
	select {
	case s := <-ready:
		return devInstance{base: s.base, token: s.token, stop: stop}
	case err := <-done:
		t.Fatalf("serve %s: %v", instance, err)
	case <-time.After(time.Minute):
		t.Fatalf("%s not ready within a minute", instance)
	}
	return devInstance{}
}

// signIn makes an authenticated API request to base with token and returns its HTTP status.
func signIn(t *testing.T, base, token string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": `{ jobs { nodes { name } } }`})
	req, err := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ Errors []struct{ Message string } }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("sign in: HTTP %d: %v", res.StatusCode, err)
	}
	if res.StatusCode == http.StatusOK && len(out.Errors) > 0 {
		t.Fatalf("sign in: errors %v", out.Errors)
	}
	return res.StatusCode
}

// TestDevAdminTokenEveryStart: every start that asks for a dev admin token prints one that
// signs in — the first start, a restart on the same database and a second instance beside
// it — and a clean stop revokes only the stopping instance's token.
func TestDevAdminTokenEveryStart(t *testing.T) {
	t.Parallel()
	db := testenv.Schema(t)
	_, env := testenv.Redis(t)

	first := startDevInstance(t, db, env, "a")
	if first.token == "" {
		t.Fatal("first start printed no token")
	}
	if got := signIn(t, first.base, first.token); got != http.StatusOK {
		t.Fatalf("first start's token: HTTP %d, want 200", got)
	}
	first.stop(t)

	restarted := startDevInstance(t, db, env, "a")
	if restarted.token == "" || restarted.token == first.token {
		t.Fatalf("restart printed token %q; want a fresh one", restarted.token)
	}
	if got := signIn(t, restarted.base, restarted.token); got != http.StatusOK {
		t.Fatalf("restart's token: HTTP %d, want 200", got)
	}
	if got := signIn(t, restarted.base, first.token); got != http.StatusUnauthorized {
		t.Fatalf("the first start's token after its clean stop: HTTP %d, want 401", got)
	}

	second := startDevInstance(t, db, env, "b")
	if second.token == "" || second.token == restarted.token {
		t.Fatalf("second instance printed token %q; want one of its own", second.token)
	}
	for name, tok := range map[string]string{"second instance's": second.token, "restart's": restarted.token} {
		if got := signIn(t, second.base, tok); got != http.StatusOK {
			t.Fatalf("%s token with both instances up: HTTP %d, want 200", name, got)
		}
	}
	second.stop(t)
	if got := signIn(t, restarted.base, second.token); got != http.StatusUnauthorized {
		t.Fatalf("the second instance's token after its clean stop: HTTP %d, want 401", got)
	}
	if got := signIn(t, restarted.base, restarted.token); got != http.StatusOK {
		t.Fatalf("the running instance's token after the other stopped: HTTP %d, want 200", got)
	}
}

// An instance's admin token names hold only the characters of a name and fit a token name's
// 100 characters, whatever the instance is called.
func TestAdminTokenPrefix(t *testing.T) {
	t.Parallel()
	if got := adminTokenPrefix("dev-admin", "web-1"); got != "dev-admin-web-1." {
		t.Errorf("prefix of web-1 = %q, want dev-admin-web-1.", got)
	}
	if got := adminTokenPrefix("dev-admin", "host.example.org:8080/x y"); got != "dev-admin-host_example_org_8080_x_y." {
		t.Errorf("prefix of a host name = %q", got)
	}
	long := adminTokenPrefix("dev-admin", strings.Repeat("h", 300)) + "1234567890"
	if len(long) > 100 {
		t.Errorf("a long instance's token name is %d characters, more than 100", len(long))
	}
}
