package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/server/httpapi"
)

// `jobs execute` of a request judged again says it went back to PENDING_APPROVAL and why,
// and `replays list` shows the reason.
func TestJobsExecuteOfReopenedRequest(t *testing.T) {
	t.Parallel()
	job := runner.NewJob(runner.JobInfo{Name: "cli-low", Version: "1", Risk: runner.RiskLow}, func(ctx context.Context, run *runner.Run) error {
		return run.Process(ctx, runner.Item{Target: "a"}, func(context.Context, *runner.Attempt) error { return nil })
	})
	ctx, r, tokens, srv, url := cliServerDB(t, nil, job)
	op, _, err := httpapi.CreateToken(ctx, tokens, "cli-op", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	approver, _, err := httpapi.CreateToken(ctx, tokens, "cli-approver", "APPROVER")
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(command func(context.Context, []string, io.Writer, io.Writer) error, token string, args ...string) (string, error) {
		var out bytes.Buffer
		err := command(ctx, append(args, "--url", srv.URL, "--token", token), &out, io.Discard)
		return out.String(), err
	}
	if out, err := cmd(jobsCommand, op, "start", "cli-low", "--watch"); err != nil {
		t.Fatalf("first start: %v\n%s", err, out)
	}
	if _, err := r.Jobs().Pause(ctx, "cli-low", "ops"); err != nil {
		t.Fatal(err)
	}
	if req, err := r.Replays().RequestRestart(ctx, runner.RestartParams{Job: "cli-low", Reason: "new rates", Actor: "cli-op"}); bt.CodeOf(err) != bt.CodeJobPaused || req.Status != bt.ReplayApproved {
		t.Fatalf("RESTART request while paused: %v %+v, want JOB_PAUSED and APPROVED", err, req)
	}
	if _, _, err := r.Jobs().Resume(ctx, "cli-low", "ops"); err != nil {
		t.Fatal(err)
	}
	pool := testenv.Pool(t, url)
	if _, err := pool.Exec(ctx, `UPDATE job_settings SET risk_level = 'HIGH' WHERE name = 'cli-low'`); err != nil {
		t.Fatal(err)
	}
	_, err = cmd(jobsCommand, approver, "execute", "1")
	if err == nil || !strings.Contains(err.Error(), "request 1 is PENDING_APPROVAL now, nothing started") ||
		!strings.Contains(err.Error(), "APPROVAL_REQUIRED") || !strings.Contains(err.Error(), "risk rose from LOW to HIGH") {
		t.Fatalf("execute of a request judged again: %v, want PENDING_APPROVAL again with the reason", err)
	}
	out, err := cmd(replaysCommand, op, "list", "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	var reqs replaysJSON
	if err := json.Unmarshal([]byte(out), &reqs); err != nil {
		t.Fatal(err)
	}
	if len(reqs.Replays) != 1 || reqs.Replays[0].Status != "PENDING_APPROVAL" || reqs.Replays[0].ReopenReason == nil ||
		!strings.Contains(*reqs.Replays[0].ReopenReason, "risk rose from LOW to HIGH") || reqs.Replays[0].ReplayRun != nil {
		t.Fatalf("replays list: %s", out)
	}
	if out, err := cmd(replaysCommand, op, "list"); err != nil || !strings.Contains(out, "PENDING_APPROVAL (reopened)") {
		t.Fatalf("replays list table: %v\n%s", err, out)
	}
}
