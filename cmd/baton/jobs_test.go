package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/server/httpapi"
)

func TestJobsCommand(t *testing.T) {
	t.Parallel()
	job := runner.NewJob(runner.JobInfo{Name: "cli-job", Version: "1"}, func(ctx context.Context, run *runner.Run) error {
		if err := run.SetTotal(ctx, 3); err != nil {
			return err
		}
		for _, k := range []string{"a", "b", "c"} {
			if err := run.Process(ctx, runner.Item{Target: k}, func(context.Context, *runner.Attempt) error { return nil }); err != nil {
				return err
			}
		}
		return nil
	})
	// More jobs than one page of the listing holds: `jobs list` follows the pages to the end.
	all := []runner.Job{job}
	for k := range jobsPageSize + 5 {
		all = append(all, runner.NewJob(runner.JobInfo{Name: fmt.Sprintf("cli-page-%02d", k), Version: "1"},
			func(context.Context, *runner.Run) error { return nil }))
	}
	ctx, _, tokens, srv := cliServer(t, all...)
	token, _, err := httpapi.CreateToken(ctx, tokens, "cli", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}

	jobs := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := jobsCommand(ctx, append(args, "--url", srv.URL, "--token", token), &out, io.Discard)
		return out.String(), err
	}
	out, err := jobs("start", "cli-job", "--watch")
	if err != nil {
		t.Fatalf("start --watch: %v\n%s", err, out)
	}
	if !strings.Contains(out, "started run 1 of cli-job") || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, "3/3") {
		t.Fatalf("start --watch output:\n%s", out)
	}
	out, err = jobs("list")
	if err != nil || !strings.Contains(out, "cli-job") || !strings.Contains(out, "#1 SUCCEEDED") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	for k := range jobsPageSize + 5 {
		if name := fmt.Sprintf("cli-page-%02d", k); strings.Count(out, name+" ") != 1 {
			t.Fatalf("list shows %s %d times, want once:\n%s", name, strings.Count(out, name+" "), out)
		}
	}
	if _, err := jobs("cancel", "1"); err == nil || !strings.Contains(err.Error(), "NOT_ACTIVE") {
		t.Fatalf("cancel of a finished run: %v", err)
	}
	if _, err := jobs("schedule", "cli-job", "--cron", "every day"); err == nil || !strings.Contains(err.Error(), "INVALID_CRON") {
		t.Fatalf("schedule with a bad cron: %v", err)
	}
	out, err = jobs("schedule", "cli-job", "--cron", "@daily", "--tz", "Europe/Paris")
	if err != nil || !strings.Contains(out, "@daily in Europe/Paris") {
		t.Fatalf("schedule: %v\n%s", err, out)
	}
	if _, err := jobs("start", "nope"); err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Fatalf("start of an unknown job: %v", err)
	}
	var out2 bytes.Buffer
	if err := jobsCommand(ctx, []string{"list", "--url", srv.URL, "--token", "bt_wrong"}, &out2, io.Discard); err == nil || !strings.Contains(err.Error(), "UNAUTHENTICATED") {
		t.Fatalf("list with a bad token: %v", err)
	}
}

// The CLI says when a RESTART is gated and how to request it, requests it, and executes an
// approved request whose run could not start.
func TestJobsRestartGate(t *testing.T) {
	t.Parallel()
	job := runner.NewJob(runner.JobInfo{Name: "cli-pay", Version: "1", Risk: runner.RiskHigh}, func(ctx context.Context, run *runner.Run) error {
		return run.Process(ctx, runner.Item{Target: "a"}, func(context.Context, *runner.Attempt) error { return nil })
	})
	ctx, r, tokens, srv := cliServer(t, job)
	op, _, err := httpapi.CreateToken(ctx, tokens, "cli-op", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	approver, _, err := httpapi.CreateToken(ctx, tokens, "cli-approver", "APPROVER")
	if err != nil {
		t.Fatal(err)
	}
	jobs := func(token string, args ...string) (string, error) {
		var out bytes.Buffer
		err := jobsCommand(ctx, append(args, "--url", srv.URL, "--token", token), &out, io.Discard)
		return out.String(), err
	}
	if out, err := jobs(op, "start", "cli-pay", "--watch"); err != nil {
		t.Fatalf("first start: %v\n%s", err, out)
	}
	if _, err := jobs(op, "start", "cli-pay", "--restart"); err == nil || !strings.Contains(err.Error(), "APPROVAL_REQUIRED") ||
		!strings.Contains(err.Error(), "baton jobs restart cli-pay --request") {
		t.Fatalf("start --restart of a HIGH-risk job: %v, want APPROVAL_REQUIRED and how to request it", err)
	}
	if _, err := jobs(op, "restart", "cli-pay"); err == nil || !strings.Contains(err.Error(), "APPROVAL_REQUIRED") {
		t.Fatalf("restart of a HIGH-risk job: %v, want APPROVAL_REQUIRED", err)
	}
	if _, err := jobs(op, "restart", "cli-pay", "--request", "--reason", "new date"); err == nil || !strings.Contains(err.Error(), "APPROVAL_REQUIRED") {
		t.Fatalf("restart --request without a compensation reference: %v, want APPROVAL_REQUIRED", err)
	}
	out, err := jobs(op, "restart", "cli-pay", "--request", "--reason", "new date", "--compensation-ref", "REFUND-9")
	if err != nil || !strings.Contains(out, "RESTART request 1 of cli-pay is PENDING_APPROVAL") {
		t.Fatalf("restart --request: %v\n%s", err, out)
	}
	if _, err := r.Jobs().Pause(ctx, "cli-pay", "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Replays().Approve(ctx, 1, runner.Actor{Name: "boss"}, "ok"); bt.CodeOf(err) != bt.CodeJobPaused {
		t.Fatalf("approve while paused: %v, want JOB_PAUSED", err)
	}
	if _, err := jobs(op, "execute", "1"); err == nil || !strings.Contains(err.Error(), "FORBIDDEN") {
		t.Fatalf("execute as an operator: %v, want FORBIDDEN", err)
	}
	if _, _, err := r.Jobs().Resume(ctx, "cli-pay", "ops"); err != nil {
		t.Fatal(err)
	}
	out, err = jobs(approver, "execute", "1", "--watch")
	if err != nil || !strings.Contains(out, "request 1 executed: started run 2") || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("execute --watch: %v\n%s", err, out)
	}
	if _, err := jobs(approver, "execute", "x"); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Fatalf("execute with a bad id: %v", err)
	}
}

// `jobs auto-resume` prints and changes a job's policy, refusing bad values; `jobs list` and
// `jobs watch` say where a run stands in its chain of automatic resumes.
func TestJobsAutoResume(t *testing.T) {
	t.Parallel()
	stall := make(chan struct{})
	// One item, a one-second lease, and an item that waits until the test ends: the holder
	// stops renewing its lease, as a dead one would.
	job := runner.NewJob(runner.JobInfo{Name: "cli-heal", Version: "1", Lease: time.Second, Retry: runner.RetryPolicy{MaxAttempts: 1},
		AutoResume: &runner.AutoResumePolicy{Enabled: true, MaxAttempts: 1, On: runner.DefaultAutoResume().On}},
		func(ctx context.Context, run *runner.Run) error {
			return run.Process(ctx, runner.Item{Target: "a"}, func(context.Context, *runner.Attempt) error {
				<-stall // deaf to its context, as a hung call is
				return nil
			})
		})
	ctx, _, tokens, srv := cliServerWith(t, func(c *runner.Config) {
		c.Scheduler, c.PollInterval, c.PoolSize = true, 100*time.Millisecond, 3
	}, job)
	t.Cleanup(func() { close(stall) })
	token, _, err := httpapi.CreateToken(ctx, tokens, "cli-ar", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	jobs := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := jobsCommand(ctx, append(args, "--url", srv.URL, "--token", token), &out, io.Discard)
		return out.String(), err
	}

	out, err := jobs("auto-resume", "cli-heal")
	if err != nil || out != "cli-heal: auto-resume on, 1 attempt, backoff 0s, causes LEASE_EXPIRED,SHUTDOWN,DATABASE\n" {
		t.Fatalf("auto-resume with no flags: %v\n%q", err, out)
	}
	refusals := map[string]struct {
		args []string
		want string
	}{
		"no attempts":      {[]string{"--max-attempts", "0"}, "INVALID_INPUT"},
		"backoff over 24h": {[]string{"--backoff", "25h"}, "INVALID_INPUT"},
		"part of a second": {[]string{"--backoff", "1.5s"}, "whole seconds"},
		"an unknown cause": {[]string{"--causes", "LEASE_EXPIRED,FLOOD"}, `"FLOOD" is not one of`},
		"a cause twice":    {[]string{"--causes", "SHUTDOWN,shutdown"}, "INVALID_INPUT"},
		"both on and off":  {[]string{"--on", "--off"}, "exclude each other"},
		"an unknown job":   {[]string{"--on", "--name-is-positional"}, "flag provided but not defined"},
		"printing no job":  {nil, "NOT_FOUND"},
		"changing no job":  {[]string{"--off"}, "NOT_FOUND"},
	}
	for name, c := range refusals {
		target := "cli-heal"
		if strings.HasSuffix(name, "no job") {
			target = "nope"
		}
		if _, err := jobs(append([]string{"auto-resume", target}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if out, _ := jobs("auto-resume", "cli-heal"); !strings.Contains(out, "on, 1 attempt, backoff 0s") {
		t.Fatalf("after the refusals the policy reads %q, want it unchanged", out)
	}

	if _, err := jobs("start", "cli-heal"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the run to end by its lease, be resumed, and the resume be given up", func() bool {
		out, err = jobs("list")
		return err == nil && strings.Contains(out, "#2 FAILED (attempt 1, auto-resume EXHAUSTED after 1 attempt)")
	})
	if !strings.Contains(out, "AUTO-RESUME") || !strings.Contains(out, "1 x 0s") {
		t.Fatalf("list shows no policy:\n%s", out)
	}
	if _, err := jobs("watch", "1"); err == nil || !strings.Contains(err.Error(), "run 1 ended FAILED") || !strings.Contains(err.Error(), "resumed by #2") {
		t.Fatalf("watch of the first run: %v, want it ended FAILED and resumed by #2", err)
	}

	out, err = jobs("auto-resume", "cli-heal", "--off", "--max-attempts", "5", "--backoff", "1m", "--causes", "database, shutdown")
	if err != nil || out != "cli-heal: auto-resume off, 5 attempts, backoff 1m0s, causes SHUTDOWN,DATABASE\n" {
		t.Fatalf("auto-resume change: %v\n%q", err, out)
	}
	out, err = jobs("auto-resume", "cli-heal", "--on", "--backoff", "30", "--causes", "")
	if err != nil || out != "cli-heal: auto-resume on, 5 attempts, backoff 30s, causes none\n" {
		t.Fatalf("auto-resume with no causes: %v\n%q", err, out)
	}
}

// cliServer runs jobs on a runner of a schema of its own and serves its GraphQL API over HTTP
// for the CLI to call, until the test ends. Tokens minted in the token store it returns are
// valid there.
func cliServer(t *testing.T, jobs ...runner.Job) (context.Context, *runner.Runner, *httpapi.TokenStore, *httptest.Server) {
	t.Helper()
	return cliServerWith(t, nil, jobs...)
}

// cliServerWith is cliServer with the runner's configuration changed by mod.
func cliServerWith(t *testing.T, mod func(*runner.Config), jobs ...runner.Job) (context.Context, *runner.Runner, *httpapi.TokenStore, *httptest.Server) {
	t.Helper()
	ctx, r, tokens, srv, _ := cliServerDB(t, mod, jobs...)
	return ctx, r, tokens, srv
}

// cliServerDB is cliServerWith that also returns the URL of the server's database.
func cliServerDB(t *testing.T, mod func(*runner.Config), jobs ...runner.Job) (context.Context, *runner.Runner, *httpapi.TokenStore, *httptest.Server, string) {
	t.Helper()
	url := testenv.Schema(t)
	rc, env := testenv.Redis(t)
	pool := testenv.Pool(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	cfg := runner.Config{DB: pool, Redis: rc, Env: env, PoolSize: 2, Logger: slog.New(slog.DiscardHandler)}
	if mod != nil {
		mod(&cfg)
	}
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = r.Run(ctx) }()
	mux := http.NewServeMux()
	tokens := httpapi.NewTokenStore(pool)
	mux.Handle("/graphql", httpapi.NewHandler(httpapi.Config{Tokens: tokens,
		GraphQL: graph.Config{Runner: r, Logger: slog.New(slog.DiscardHandler), PollInterval: 20 * time.Millisecond}}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return ctx, r, tokens, srv, url
}
