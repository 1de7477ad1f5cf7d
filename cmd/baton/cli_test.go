package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// cliResult is what one baton command line did.
type cliResult struct {
	stdout, stderr string
	code           int
	err            error
}

// baton runs a command line as main does, and returns its output and exit code.
func baton(ctx context.Context, args ...string) cliResult {
	var out, errOut bytes.Buffer
	err := run(ctx, args, &out, &errOut)
	return cliResult{stdout: out.String(), stderr: errOut.String(), code: exitCode(err, exitError), err: err}
}

// gatedJob is a job of three items, each of which says it started on started (when it has
// room) and then waits for a tick (or its context): the test decides when each item ends.
func gatedJob(name string, started chan<- string, ticks <-chan struct{}) runner.Job {
	return runner.NewJob(runner.JobInfo{Name: name, Version: "1"}, func(ctx context.Context, run *runner.Run) error {
		if err := run.SetTotal(ctx, 3); err != nil {
			return err
		}
		for _, k := range []string{"a", "b", "c"} {
			err := run.Process(ctx, runner.Item{Target: k}, func(ctx context.Context, _ *runner.Attempt) error {
				select {
				case started <- k:
				default: // nobody waits for this one
				}
				select {
				case <-ticks:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Every command and subcommand prints its usage on stdout and exits 0 for -h, --help and help.
func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{
		{"help"}, {"-h"}, {"--help"},
		{"jobs", "-h"}, {"jobs", "--help"}, {"jobs", "help"}, {"jobs", "start", "-h"}, {"jobs", "watch", "--help"},
		{"jobs", "pause", "-h"}, {"jobs", "resume", "-h"},
		{"runs", "-h"}, {"runs", "list", "-h"}, {"runs", "show", "--help"},
		{"replays", "--help"}, {"replays", "list", "-h"}, {"replays", "approve", "-h"}, {"replays", "reject", "-h"},
		{"maintenance", "-h"}, {"maintenance", "on", "-h"}, {"maintenance", "status", "--help"},
		{"token", "-h"}, {"token", "create", "-h"}, {"token", "list", "--help"}, {"token", "revoke", "-h"},
		{"migrate", "-h"}, {"migrate", "help"}, {"serve", "-h"},
	} {
		res := baton(ctx, args...)
		if res.code != exitOK || !strings.Contains(res.stdout, "usage: baton") && !strings.HasPrefix(res.stdout, "usage:\n  baton") || res.stderr != "" {
			t.Errorf("baton %s: exit %d (%v), stdout %q, stderr %q; want exit 0 and usage on stdout only",
				strings.Join(args, " "), res.code, res.err, firstLine(res.stdout), res.stderr)
		}
	}
	if res := baton(ctx, "help"); !strings.Contains(res.stdout, "exit codes:") || !strings.Contains(res.stdout, "11  the run SUCCEEDED but has items needing attention") {
		t.Errorf("baton help does not document the exit codes:\n%s", res.stdout)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// A bad command line exits 2, with usage on stderr, before it calls anything.
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := []string{"--url", "http://127.0.0.1:1", "--token", "bt_unused"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"runs"}, "no subcommand given"},
		{[]string{"runs", "frob"}, `unknown subcommand "frob"`},
		{append([]string{"runs", "list", "--limit", "x"}, api...), "invalid value"},
		{append([]string{"runs", "list", "--limit", "0"}, api...), "--limit must be 1 to 10000"},
		{append([]string{"runs", "list", "--status", "DONE"}, api...), `"DONE" is not one of`},
		{append([]string{"runs", "list", "--output", "yaml"}, api...), "--output must be text or json"},
		{append([]string{"runs", "show"}, api...), "want 1 argument(s), got 0"},
		{append([]string{"runs", "show", "abc"}, api...), "neither a run number nor a run id"},
		{append([]string{"jobs", "start"}, api...), "want 1 argument(s), got 0"},
		{append([]string{"jobs", "start", "x", "--mode", "AGAIN"}, api...), "--mode must be RESUME or RESTART"},
		{append([]string{"jobs", "list", "--nope"}, api...), "flag provided but not defined"},
		{append([]string{"replays", "approve", "x"}, api...), "neither a replay request number"},
		{append([]string{"maintenance", "on", "now"}, api...), `unexpected argument "now"`},
		{[]string{"token", "create", "--name", "x", "--role", "admin", "--expires", "1w"}, "--expires must be"},
		{[]string{"token", "create", "--name", "x", "--role", "root"}, "--role"},
		{[]string{"migrate", "sideways"}, "unknown or missing action"},
	} {
		res := baton(ctx, c.args...)
		if res.code != exitUsage || res.err == nil || !strings.Contains(res.err.Error(), c.want) {
			t.Errorf("baton %s: exit %d (%v), want exit 2 and %q", strings.Join(c.args, " "), res.code, res.err, c.want)
		}
	}
}

// Commands that follow or show a run exit 0 only for a run that SUCCEEDED cleanly, and
// otherwise with the code of how it stands; API, auth and not-found failures have their own.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	ok := runner.NewJob(runner.JobInfo{Name: "cli-ok", Version: "1"}, func(ctx context.Context, run *runner.Run) error {
		return run.Process(ctx, runner.Item{Target: "a"}, func(context.Context, *runner.Attempt) error { return nil })
	})
	fail := runner.NewJob(runner.JobInfo{Name: "cli-fail", Version: "1"}, func(ctx context.Context, run *runner.Run) error {
		if err := run.Process(ctx, runner.Item{Target: "a"}, func(context.Context, *runner.Attempt) error { return nil }); err != nil {
			return err
		}
		return errors.New("the source file is gone")
	})
	// Three items, one refused by the downstream: the run SUCCEEDED, and needs attention.
	attention := runner.NewJob(runner.JobInfo{Name: "cli-attention", Version: "1"}, func(ctx context.Context, run *runner.Run) error {
		for _, k := range []string{"a", "b", "c"} {
			err := run.Process(ctx, runner.Item{Target: k}, func(context.Context, *runner.Attempt) error {
				if k == "b" {
					return runner.Rejected(errors.New("account closed"))
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	started, ticks := make(chan string, 10), make(chan struct{}, 10)
	ctx, _, tokens, srv := cliServer(t, ok, fail, attention, gatedJob("cli-slow", started, ticks))
	op, _, err := httpapi.CreateToken(ctx, tokens, "cli-op", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	viewer, _, err := httpapi.CreateToken(ctx, tokens, "cli-viewer", "VIEWER")
	if err != nil {
		t.Fatal(err)
	}
	as := func(token string, args ...string) cliResult {
		return baton(ctx, append(args, "--url", srv.URL, "--token", token)...)
	}
	check := func(res cliResult, want int, what string) {
		t.Helper()
		if res.code != want {
			t.Fatalf("%s: exit %d (%v), want %d\nstdout:\n%s", what, res.code, res.err, want, res.stdout)
		}
	}

	check(as(op, "jobs", "start", "cli-ok", "--watch"), exitOK, "a run that succeeds") // run 1
	res := as(op, "jobs", "start", "cli-fail", "--watch")                              // run 2
	check(res, exitRunFailed, "a run that fails")
	if !strings.Contains(res.err.Error(), "run 2 ended FAILED: the source file is gone") {
		t.Fatalf("the failed run's error says %q", res.err)
	}
	res = as(op, "jobs", "start", "cli-attention", "--watch") // run 3
	check(res, exitRunAttention, "a run that succeeded with a rejected item")
	if !strings.Contains(res.err.Error(), "run 3 SUCCEEDED with items needing attention: 0 failed, 1 rejected, 0 ambiguous") {
		t.Fatalf("the run needing attention says %q", res.err)
	}
	res = as(op, "runs", "show", "3", "--output", "json")
	check(res, exitRunAttention, "runs show of a run needing attention")
	var shown runDetailJSON
	if err := json.Unmarshal([]byte(res.stdout), &shown); err != nil || shown.Status != "SUCCEEDED" || shown.Outcome != "NEEDS_ATTENTION" ||
		!shown.NeedsAttention || shown.Attention.Rejected != 1 || len(shown.Errors) != 1 || shown.Errors[0].Item != "b" {
		t.Fatalf("runs show --output json of run 3: %v\n%s", err, res.stdout)
	}
	if res := as(op, "jobs", "list"); !strings.Contains(res.stdout, "#3 SUCCEEDED (needs attention: 0 failed, 1 rejected, 0 ambiguous)") {
		t.Fatalf("jobs list does not say run 3 needs attention:\n%s", res.stdout)
	}
	if res := as(op, "runs", "list", "--job", "cli-attention"); !strings.Contains(res.stdout, "0 failed, 1 rejected, 0 ambiguous") {
		t.Fatalf("runs list does not say run 3 needs attention:\n%s", res.stdout)
	}
	check(as(op, "runs", "show", "1"), exitOK, "runs show of a run that succeeded")
	check(as(op, "runs", "show", "2"), exitRunFailed, "runs show of a failed run")
	check(as(op, "jobs", "watch", "2"), exitRunFailed, "jobs watch of a failed run")
	check(as(op, "runs", "show", "999"), exitNotFound, "runs show of an unknown run")
	check(as(op, "jobs", "watch", "999"), exitNotFound, "jobs watch of an unknown run")
	check(as(op, "jobs", "start", "nope"), exitNotFound, "jobs start of an unknown job")
	check(as(op, "jobs", "pause", "nope"), exitNotFound, "jobs pause of an unknown job")
	check(as(op, "replays", "approve", "99"), exitAuth, "replays approve by an operator")
	check(as(op, "jobs", "cancel", "1"), exitAPI, "jobs cancel of a finished run (NOT_ACTIVE)")

	// Cancelled: the run waits in its first item while it is asked to stop.
	check(as(op, "jobs", "start", "cli-slow"), exitOK, "jobs start") // run 4
	<-started
	check(as(op, "runs", "show", "4"), exitRunActive, "runs show of a running run")
	check(as(op, "jobs", "cancel", "4"), exitOK, "jobs cancel")
	ticks <- struct{}{}
	check(as(op, "jobs", "watch", "4"), exitRunCancelled, "jobs watch of a cancelled run")

	// Paused, then resumed to the end.
	check(as(op, "jobs", "start", "cli-slow"), exitOK, "jobs start") // run 5
	<-started
	check(as(op, "jobs", "pause", "cli-slow"), exitOK, "jobs pause")
	ticks <- struct{}{}
	check(as(op, "jobs", "watch", "5"), exitRunPaused, "jobs watch of a paused run")
	check(as(op, "runs", "show", "5"), exitRunPaused, "runs show of a paused run")
	for range 3 {
		ticks <- struct{}{}
	}
	res = as(op, "jobs", "resume", "cli-slow", "--watch") // run 6
	check(res, exitOK, "jobs resume --watch")
	if !strings.Contains(res.stdout, "resumed cli-slow: run 6 continues its paused run") || !strings.Contains(res.stdout, "run 6 SUCCEEDED") {
		t.Fatalf("jobs resume --watch printed:\n%s", res.stdout)
	}

	// Authentication and authorisation.
	check(as("bt_wrong", "jobs", "list"), exitAuth, "an unknown token")
	check(as("", "runs", "list"), exitAuth, "no token")
	check(as(viewer, "maintenance", "on"), exitAuth, "maintenance on by a viewer")
	check(as(viewer, "runs", "list"), exitOK, "runs list by a viewer")
	// A server that cannot be reached.
	if res := baton(ctx, "runs", "list", "--url", "http://127.0.0.1:1", "--token", op); res.code != exitAPI {
		t.Fatalf("an unreachable server: exit %d (%v), want %d", res.code, res.err, exitAPI)
	}
}

// Every read command prints stable JSON with --output json.
func TestReadCommandsJSON(t *testing.T) {
	t.Parallel()
	job := runner.NewJob(runner.JobInfo{Name: "cli-json", Version: "1"}, func(ctx context.Context, run *runner.Run) error {
		for _, k := range []string{"a", "b"} {
			if err := run.Process(ctx, runner.Item{Target: k}, func(context.Context, *runner.Attempt) error { return nil }); err != nil {
				return err
			}
		}
		return nil
	})
	pay := runner.NewJob(runner.JobInfo{Name: "cli-json-pay", Version: "1", Risk: runner.RiskHigh}, func(ctx context.Context, run *runner.Run) error {
		return run.Process(ctx, runner.Item{Target: "a"}, func(context.Context, *runner.Attempt) error { return nil })
	})
	ctx, _, tokens, srv := cliServer(t, job, pay)
	op, _, err := httpapi.CreateToken(ctx, tokens, "cli-op", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	approver, _, err := httpapi.CreateToken(ctx, tokens, "cli-approver", "APPROVER")
	if err != nil {
		t.Fatal(err)
	}
	as := func(token string, args ...string) cliResult {
		t.Helper()
		res := baton(ctx, append(args, "--url", srv.URL, "--token", token)...)
		if res.code != exitOK {
			t.Fatalf("baton %s: exit %d (%v)\n%s", strings.Join(args, " "), res.code, res.err, res.stdout)
		}
		return res
	}
	decode := func(res cliResult, v any) {
		t.Helper()
		dec := json.NewDecoder(strings.NewReader(res.stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("not the documented JSON: %v\n%s", err, res.stdout)
		}
	}
	as(op, "jobs", "start", "cli-json", "--watch") // run 1
	for range 2 {
		as(op, "jobs", "start", "cli-json", "--restart", "--watch") // runs 2 and 3
	}

	var page runsJSON
	decode(as(op, "runs", "list", "--job", "cli-json", "--limit", "2", "--output", "json"), &page)
	if len(page.Runs) != 2 || page.Runs[0].Number != 3 || page.Runs[1].Number != 2 || !page.HasMore || page.EndCursor == nil {
		t.Fatalf("runs list --limit 2: %+v", page)
	}
	r := page.Runs[0]
	if r.Job != "cli-json" || r.Status != "SUCCEEDED" || r.Outcome != "SUCCEEDED" || r.NeedsAttention || r.Trigger != "MANUAL" ||
		r.Mode != "RESTART" || r.Generation != 3 || r.RequestedBy != "cli-op" || r.Progress.Processed != 2 || r.Progress.Succeeded != 2 || r.FinishedAt == nil || r.StartedAt == "" {
		t.Fatalf("run 3 as JSON: %+v", r)
	}
	decode(as(op, "runs", "list", "--job", "cli-json", "--limit", "2", "--after", *page.EndCursor, "--output", "json"), &page)
	if len(page.Runs) != 1 || page.Runs[0].Number != 1 || page.HasMore {
		t.Fatalf("runs list --after: %+v", page)
	}
	// --limit beyond one page of the API reads the pages it takes.
	decode(as(op, "runs", "list", "--limit", "500", "--status", "succeeded,failed", "--output", "json"), &page)
	if len(page.Runs) != 3 || page.HasMore {
		t.Fatalf("runs list --status: %+v", page)
	}
	decode(as(op, "runs", "list", "--status", "FAILED", "--output", "json"), &page)
	if len(page.Runs) != 0 || page.Runs == nil {
		t.Fatalf("runs list of no run: %+v, want an empty list", page)
	}

	var show runDetailJSON
	decode(as(op, "runs", "show", "1", "--output", "json"), &show)
	if show.Number != 1 || show.Outcome != "SUCCEEDED" || show.Errors == nil || len(show.Errors) != 0 || show.MoreErrors {
		t.Fatalf("runs show --output json: %+v", show)
	}

	var jobs jobsJSON
	decode(as(op, "jobs", "list", "--output", "json"), &jobs)
	byName := map[string]jobJSON{}
	for _, j := range jobs.Jobs {
		byName[j.Name] = j
	}
	if j := byName["cli-json"]; j.LastRun == nil || j.LastRun.Number != 3 || j.LastRun.Outcome != "SUCCEEDED" || j.ActiveRun != nil ||
		j.Cron != "" || !j.Enabled || j.Paused || j.AutoResume.On == nil {
		t.Fatalf("cli-json in jobs list --output json: %+v", j)
	}
	if j, ok := byName["cli-json-pay"]; !ok || j.LastRun != nil {
		t.Fatalf("cli-json-pay in jobs list --output json: %+v", j)
	}

	var policy autoResumeOutJSON
	decode(as(op, "jobs", "auto-resume", "cli-json", "--on", "--max-attempts", "4", "--output", "json"), &policy)
	if policy.Job != "cli-json" || !policy.AutoResume.Enabled || policy.AutoResume.MaxAttempts != 4 {
		t.Fatalf("jobs auto-resume --output json: %+v", policy)
	}

	var m maintenanceJSON
	decode(as(op, "maintenance", "status", "--output", "json"), &m)
	if m.Maintenance {
		t.Fatalf("maintenance status: %+v, want off", m)
	}
	decode(as(op, "maintenance", "on", "--output", "json"), &m)
	if !m.Maintenance {
		t.Fatalf("maintenance on: %+v", m)
	}
	if res := as(op, "maintenance", "status"); res.stdout != "maintenance on\n" {
		t.Fatalf("maintenance status says %q", res.stdout)
	}
	decode(as(op, "maintenance", "off", "--output", "json"), &m)
	if m.Maintenance {
		t.Fatalf("maintenance off: %+v", m)
	}

	// Replay requests: one approved (its run followed), one rejected.
	as(op, "jobs", "start", "cli-json-pay", "--watch") // run 4
	as(op, "jobs", "restart", "cli-json-pay", "--request", "--reason", "new rates", "--compensation-ref", "REFUND-1")
	var reqs replaysJSON
	decode(as(op, "replays", "list", "--output", "json"), &reqs)
	if len(reqs.Replays) != 1 {
		t.Fatalf("replays list: %+v", reqs)
	}
	q := reqs.Replays[0]
	if q.Number != 1 || q.Kind != "RESTART" || q.Job != "cli-json-pay" || q.Status != "PENDING_APPROVAL" || q.SourceRun != 4 ||
		q.RequestedBy != "cli-op" || q.Reason != "new rates" || q.CompensationRef == nil || *q.CompensationRef != "REFUND-1" ||
		len(q.ApprovalReasons) == 0 || q.ReplayRun != nil || q.DecidedBy != nil {
		t.Fatalf("a pending request as JSON: %+v", q)
	}
	res := as(approver, "replays", "approve", "1", "--note", "checked", "--watch") // run 5
	if !strings.Contains(res.stdout, "request 1 is EXECUTED: started run 5") || !strings.Contains(res.stdout, "run 5 SUCCEEDED") {
		t.Fatalf("replays approve --watch:\n%s", res.stdout)
	}
	as(op, "jobs", "restart", "cli-json-pay", "--request", "--reason", "again", "--compensation-ref", "REFUND-2")
	if res := as(approver, "replays", "reject", "2", "--note", "not today"); res.stdout != "request 2 is REJECTED\n" {
		t.Fatalf("replays reject: %q", res.stdout)
	}
	if res := baton(ctx, "replays", "reject", "2", "--url", srv.URL, "--token", approver); res.code != exitAPI || !strings.Contains(res.err.Error(), "CONFLICT") {
		t.Fatalf("rejecting a rejected request: exit %d (%v), want %d and CONFLICT", res.code, res.err, exitAPI)
	}
	decode(as(op, "replays", "list", "--output", "json"), &reqs)
	if len(reqs.Replays) != 2 || reqs.Replays[0].Status != "REJECTED" || reqs.Replays[0].DecisionNote == nil || *reqs.Replays[0].DecisionNote != "not today" ||
		reqs.Replays[1].Status != "EXECUTED" || reqs.Replays[1].ReplayRun == nil || *reqs.Replays[1].ReplayRun != 5 ||
		reqs.Replays[1].DecidedBy == nil || *reqs.Replays[1].DecidedBy != "cli-approver" {
		t.Fatalf("replays list after the decisions: %+v", reqs)
	}
	// Full pages are within the API's complexity limit.
	decode(as(op, "replays", "list", "--limit", "100", "--output", "json"), &reqs)
	if len(reqs.Replays) != 2 || reqs.HasMore {
		t.Fatalf("replays list --limit 100: %+v", reqs)
	}
	decode(as(op, "replays", "list", "--status", "EXECUTED", "--output", "json"), &reqs)
	if len(reqs.Replays) != 1 || reqs.Replays[0].Number != 1 {
		t.Fatalf("replays list --status EXECUTED: %+v", reqs)
	}
}

// lockedBuffer is a buffer one goroutine writes while another reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSuffix(b.b.String(), "\n"), "\n")
}

// Off a terminal, --watch prints the run's state as one plain line a second, whether or not
// it changed (a stalled run keeps printing), and then its final state.
func TestWatchPrintsALineASecond(t *testing.T) {
	t.Parallel()
	started, ticks := make(chan string, 10), make(chan struct{}, 10)
	ctx, _, tokens, srv := cliServer(t, gatedJob("cli-watch", started, ticks))
	token, _, err := httpapi.CreateToken(ctx, tokens, "cli-watch", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	for _, asJSON := range []bool{false, true} {
		for len(started) > 0 {
			<-started // the items of the run before
		}
		// A RESTART: the run before confirmed every target of its generation.
		args := []string{"jobs", "start", "cli-watch", "--restart", "--watch", "--url", srv.URL, "--token", token}
		if asJSON {
			args = append(args, "--output", "json")
		}
		var out, said lockedBuffer
		done := make(chan error, 1)
		go func() { done <- run(ctx, args, &out, &said) }()
		<-started
		// The item waits: nothing about the run changes, yet a line comes every second.
		// (A line may come before the run is RUNNING, while it is STARTING; only those after
		// count.)
		testenv.Eventually(t, 30*time.Second, "three lines of its state while the run stalls", func() bool {
			n := 0
			for _, line := range out.lines() {
				if (strings.HasPrefix(line, "run ") || strings.HasPrefix(line, "{")) && strings.Contains(line, "RUNNING") {
					n++
				}
			}
			return n >= 3
		})
		for range 3 {
			ticks <- struct{}{}
		}
		if err := <-done; err != nil {
			t.Fatalf("watch: %v", err)
		}
		lines := out.lines()
		if asJSON {
			if !strings.Contains(strings.Join(said.lines(), "\n"), "started run 2 of cli-watch") {
				t.Fatalf("start --watch --output json said on stderr: %q", said.lines())
			}
		} else if lines[0] != "started run 1 of cli-watch (RESTART, id "+runIDForTest(1)+")" {
			t.Fatalf("start --watch said first %q", lines[0])
		} else {
			lines = lines[1:]
		}
		for i, line := range lines {
			if strings.ContainsAny(line, "\r\033") {
				t.Fatalf("line %d draws for a terminal: %q", i, line)
			}
			if asJSON {
				var r runJSON
				if err := json.Unmarshal([]byte(line), &r); err != nil || r.Number != 2 || r.Job != "cli-watch" {
					t.Fatalf("line %d is not a JSON run: %v\n%s", i, err, line)
				}
				if i == len(lines)-1 && (r.Status != "SUCCEEDED" || r.Progress.Processed != 3) {
					t.Fatalf("last line %s, want run 2 SUCCEEDED with 3 items", line)
				}
				continue
			}
			if !strings.HasPrefix(line, "run 1 ") {
				t.Fatalf("line %d is not a state of run 1: %q", i, line)
			}
		}
		if !asJSON {
			if last := lines[len(lines)-1]; !strings.Contains(last, "SUCCEEDED") || !strings.Contains(last, "3/3") {
				t.Fatalf("last line %q, want run 1 SUCCEEDED 3/3", last)
			}
			for len(lines) > 0 && strings.Contains(lines[0], "STARTING") {
				lines = lines[1:]
			}
			if len(lines) < 4 || !strings.Contains(lines[0], "RUNNING") || !strings.Contains(lines[1], "RUNNING") || !strings.Contains(lines[2], "RUNNING") {
				t.Fatalf("the stalled run's lines: %q", lines)
			}
		}
	}
}

func runIDForTest(n int64) string {
	id, _ := runIDArg(strconv.FormatInt(n, 10))
	return id
}
