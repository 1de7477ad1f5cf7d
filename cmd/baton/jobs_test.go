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

// cliServer runs jobs on a runner of a schema of its own and serves its GraphQL API over HTTP
// for the CLI to call, until the test ends. Tokens minted in the token store it returns are
// valid there.
func cliServer(t *testing.T, jobs ...runner.Job) (context.Context, *runner.Runner, *httpapi.TokenStore, *httptest.Server) {
	t.Helper()
	url := testenv.Schema(t)
	rc, env := testenv.Redis(t)
	pool := testenv.Pool(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	r, err := runner.New(runner.Config{DB: pool, Redis: rc, Env: env, PoolSize: 2, Logger: slog.New(slog.DiscardHandler)})
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
	return ctx, r, tokens, srv
}
