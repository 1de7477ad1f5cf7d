//go:build unix

package main

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
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
)

// TestExampleServesItsJob builds the example, runs it on a schema and Redis prefix of the
// test's own through the BATON_* variables of `baton serve`, signs in with the token it
// prints, finds its job listed, starts it and sees the run succeed, then stops it cleanly.
func TestExampleServesItsJob(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "embed")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	_, env := testenv.Redis(t)
	cmd := exec.Command(bin)
	cmd.Env = append(withoutVars(os.Environ(), "DATABASE_URL", "REDIS_URL"),
		"BATON_DATABASE_URL="+testenv.Schema(t), "BATON_REDIS_URL="+testenv.RedisURL(), "BATON_ENV="+env,
		fmt.Sprintf("BATON_ADDR=127.0.0.1:%d", testenv.FreePort(t)), "BATON_LOG_FORMAT=json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	base, token := readBanner(t, stdout, &stderr)

	if names := jobNames(t, base, token); !slices.Contains(names, "greet-customers") {
		t.Fatalf("jobs listed: %v, want greet-customers among them", names)
	}
	var started struct {
		StartJob struct {
			Run        *struct{ ID string }
			UserErrors []struct{ Code, Message string }
		}
	}
	graphQL(t, base, token, `mutation { startJob(input: {name: "greet-customers"}) { run { id } userErrors { code message } } }`, &started)
	if started.StartJob.Run == nil {
		t.Fatalf("startJob greet-customers: user errors %v", started.StartJob.UserErrors)
	}
	testenv.Eventually(t, time.Minute, "the example's run to succeed", func() bool {
		var run struct{ Run struct{ Status string } }
		graphQL(t, base, token, `query($id: ID!) { run(id: $id) { status } }`, &run, "id", started.StartJob.Run.ID)
		return run.Run.Status == "SUCCEEDED"
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the example exited with %v after SIGTERM\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the example did not stop within a minute of SIGTERM")
	}
}

var banner = regexp.MustCompile(`^example up: console (\S+)/admin/  GraphQL \S+/graphql  admin token (\S+)$`)

// readBanner reads the example's stdout until its banner and returns its URL and token.
func readBanner(t *testing.T, stdout interface{ Read([]byte) (int, error) }, stderr *bytes.Buffer) (base, token string) {
	t.Helper()
	type found struct{ base, token string }
	got := make(chan found, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := banner.FindStringSubmatch(sc.Text()); m != nil {
				got <- found{m[1], m[2]}
				break
			}
		}
		for sc.Scan() { // keep draining
		}
	}()
	select {
	case f := <-got:
		return f.base, f.token
	case <-time.After(2 * time.Minute):
		t.Fatalf("no banner within two minutes; stderr:\n%s", stderr.String())
	}
	return "", ""
}

// jobNames lists the jobs the API shows.
func jobNames(t *testing.T, base, token string) []string {
	t.Helper()
	var out struct {
		Jobs struct{ Nodes []struct{ Name string } }
	}
	graphQL(t, base, token, `{ jobs(first: 100) { nodes { name } } }`, &out)
	var names []string
	for _, n := range out.Jobs.Nodes {
		names = append(names, n.Name)
	}
	return names
}

// graphQL posts query with variables (name, value pairs) and decodes its data into data,
// failing the test on a transport or GraphQL error.
func graphQL(t *testing.T, base, token, query string, data any, vars ...any) {
	t.Helper()
	variables := map[string]any{}
	for i := 0; i+1 < len(vars); i += 2 {
		variables[vars[i].(string)] = vars[i+1]
	}
	body, _ := json.Marshal(map[string]any{"query": query, "variables": variables})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
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
	var out struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("HTTP %d: %v", res.StatusCode, err)
	}
	if res.StatusCode != http.StatusOK || len(out.Errors) > 0 {
		t.Fatalf("HTTP %d, errors %v", res.StatusCode, out.Errors)
	}
	if err := json.Unmarshal(out.Data, data); err != nil {
		t.Fatal(err)
	}
}

// withoutVars is env without the named variables.
func withoutVars(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}
