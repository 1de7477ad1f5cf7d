//go:build unix

package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/e2e/cluster"
	"github.com/baton-run/baton/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	cluster.CleanupBuild()
	os.Exit(code)
}

// requireNodeClients makes sure node runs and the npm clients are installed (scripts/npm-deps.sh,
// a no-op when node_modules is up to date). Without node or the registry it skips, except
// under CI=true, where it fails: CI must run this test.
func requireNodeClients(t *testing.T) {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true: this test must run)", msg)
		}
		t.Skipf("%s; skipping the reference client test", msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable("node is not installed (Node 20+ needed)")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		unavailable("npm is not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "npm-deps.sh"), filepath.Join(root, "e2e", "api"))
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable("scripts/npm-deps.sh e2e/api: %v\n%s", err, out)
	}
}

// baton runs a short baton command against the cluster's database and returns its stdout.
func baton(t *testing.T, c *cluster.Cluster, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin.Baton, args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "DATABASE_URL" && !strings.HasPrefix(k, "BATON_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "DATABASE_URL="+c.DatabaseURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("baton %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// me asks instance base who token is, and returns the HTTP status and the error code.
func me(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/graphql", strings.NewReader(`{"query":"{ me { name } }"}`))
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
	var body struct {
		Errors []struct {
			Extensions struct{ Code string } `json:"extensions"`
		} `json:"errors"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	if len(body.Errors) > 0 {
		return res.StatusCode, body.Errors[0].Extensions.Code
	}
	return res.StatusCode, ""
}

// clientLine is one line clients.mjs prints.
type clientLine struct {
	Event   string `json:"event"`
	Results []struct {
		Client   string
		Progress struct {
			Updates   int
			Final     string
			Processed int
		}
		Events []string
	} `json:"results"`
	Closes []struct {
		Client string
		Code   int
	} `json:"closes"`
}

// TestReferenceClients runs two `baton serve --demo` instances on one PostgreSQL and Redis.
// The npm reference clients of both WebSocket protocols subscribe on instance B to runEvents
// and then to runProgress of a run started on A: they must get the start, a snapshot, progress
// and the final state. Then `baton token revoke` must close both clients' connections with
// 4401 and make HTTP requests with the token fail UNAUTHENTICATED on both instances.
func TestReferenceClients(t *testing.T) {
	requireNodeClients(t)
	c := cluster.New(t, cluster.Config{Nodes: 2, PoolSize: 2, Env: map[string]string{
		// demo-collect: 30 pages at 100ms, a run of about 3s with a progress update per page.
		"BATON_DEMO_PAGES":        "30",
		"BATON_DEMO_PAGE_LATENCY": "100ms",
		// demo-flaky, the warm-up job: one quick item.
		"BATON_DEMO_FLAKY_ITEMS":  "1",
		"BATON_DEMO_ITEM_LATENCY": "1ms",
		// demo-settlement is not run here; kept small all the same.
		"BATON_DEMO_ACCOUNTS":         "5",
		"BATON_DEMO_PROVIDER_LATENCY": "1ms",
	}})
	c.DisableSchedules()
	out := strings.Split(strings.TrimSpace(baton(t, c, "token", "create", "--name", "api-clients", "--role", "operator")), "\n")
	token := out[len(out)-1]
	if !strings.HasPrefix(token, "bt_") {
		t.Fatalf("baton token create printed no token on its last line: %q", out)
	}
	a, b := c.Node(1).BaseURL, c.Node(2).BaseURL

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "clients.mjs")
	cmd.Env = append(os.Environ(), "BATON_A="+a, "BATON_B="+b, "BATON_TOKEN="+token,
		"BATON_JOB=demo-collect", "BATON_WARMUP_JOB=demo-flaky", "BATON_TIMEOUT_MS=30000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]clientLine{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		t.Logf("clients.mjs: %s", sc.Text())
		var l clientLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Errorf("clients.mjs printed %q: %v", sc.Text(), err)
			continue
		}
		seen[l.Event] = l
		if l.Event != "ready-for-revoke" {
			continue
		}
		for _, base := range []string{a, b} {
			if status, code := me(t, base, token); status != http.StatusOK {
				t.Errorf("%s: the live token: HTTP %d %s", base, status, code)
			}
		}
		t.Logf("%s", baton(t, c, "token", "revoke", "--name", "api-clients"))
		for _, base := range []string{a, b} {
			testenv.Eventually(t, 15*time.Second, base+" to refuse the revoked token", func() bool {
				status, code := me(t, base, token)
				return status == http.StatusUnauthorized && code == "UNAUTHENTICATED"
			})
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("clients.mjs: %v\n%s", err, stderr.String())
	}

	followed, ok := seen["followed"]
	if !ok || len(followed.Results) != 2 {
		t.Fatalf("clients.mjs reported no run followed by both clients: %+v", seen)
	}
	for _, r := range followed.Results {
		if r.Progress.Final != "SUCCEEDED" || r.Progress.Processed != 30 || r.Progress.Updates < 3 ||
			len(r.Events) < 2 || r.Events[0] != "STARTED" || r.Events[len(r.Events)-1] != "FINISHED" {
			t.Errorf("%s saw %+v", r.Client, r)
		}
	}
	revoked, ok := seen["revoked"]
	if !ok || len(revoked.Closes) != 2 {
		t.Fatalf("clients.mjs reported no closes after the revocation: %+v", seen)
	}
	for _, cl := range revoked.Closes {
		if cl.Code != 4401 {
			t.Errorf("%s: closed with %d, want 4401", cl.Client, cl.Code)
		}
	}
}
