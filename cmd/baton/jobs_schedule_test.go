package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// `jobs schedule` refuses an @every under a second, zero, negative or not whole seconds, and a
// lease out of range, with the coded error naming the field and the allowed range; the job
// stays as it was.
func TestJobsScheduleRefusesHarmfulInput(t *testing.T) {
	t.Parallel()
	job := runner.NewJob(runner.JobInfo{Name: "cli-flaky", Version: "1"}, func(context.Context, *runner.Run) error { return nil })
	ctx, r, tokens, srv := cliServer(t, job)
	op, _, err := httpapi.CreateToken(ctx, tokens, "cli-op", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	before, err := r.Jobs().Get(ctx, "cli-flaky")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--cron", "@every 0s"}, []string{"INVALID_CRON", "cron", "1s to 8760h"}},
		{[]string{"--cron", "@every -5s"}, []string{"INVALID_CRON", "cron", "1s to 8760h"}},
		{[]string{"--cron", "@every 500ms", "--enable"}, []string{"INVALID_CRON", "cron", "1s to 8760h"}},
		{[]string{"--cron", "@every 1ms"}, []string{"INVALID_CRON", "cron", "1s to 8760h"}},
		{[]string{"--lease", "99999999999"}, []string{"INVALID_INPUT", "leaseSeconds", "between 1 and 86400"}},
		{[]string{"--lease", "-5"}, []string{"INVALID_INPUT", "leaseSeconds", "between 1 and 86400"}},
	} {
		var out bytes.Buffer
		err := jobsCommand(ctx, append(append([]string{"schedule", "cli-flaky"}, tc.args...), "--url", srv.URL, "--token", op), &out, io.Discard)
		if err == nil {
			t.Errorf("jobs schedule %v: no error\n%s", tc.args, out.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("jobs schedule %v: %v; want it to name %q", tc.args, err, w)
			}
		}
	}
	after, err := r.Jobs().Get(ctx, "cli-flaky")
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version || after.Cron != before.Cron || after.Enabled != before.Enabled {
		t.Fatalf("refused changes wrote: %+v -> %+v", before, after)
	}
}

// `jobs schedule` on a HIGH-risk job does not change it: it says the change became a schedule
// request waiting for another token, which `replays approve` by an approver applies.
func TestJobsScheduleOfHighRiskJobIsARequest(t *testing.T) {
	t.Parallel()
	job := runner.NewJob(runner.JobInfo{Name: "cli-settle", Version: "1", Risk: runner.RiskHigh}, func(ctx context.Context, run *runner.Run) error {
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
	run := func(cmd func(context.Context, []string, io.Writer, io.Writer) error, token string, args ...string) (string, error) {
		var out bytes.Buffer
		err := cmd(ctx, append(args, "--url", srv.URL, "--token", token), &out, io.Discard)
		return out.String(), err
	}
	if out, err := run(jobsCommand, op, "start", "cli-settle", "--watch"); err != nil {
		t.Fatalf("first start: %v\n%s", err, out)
	}
	_, err = run(jobsCommand, op, "schedule", "cli-settle", "--cron", "@daily", "--reason", "nightly settlement")
	if err == nil || !strings.Contains(err.Error(), "APPROVAL_REQUIRED") || !strings.Contains(err.Error(), "schedule request 1 is PENDING_APPROVAL") ||
		!strings.Contains(err.Error(), "baton replays approve 1") {
		t.Fatalf("schedule of a HIGH-risk job: %v; want APPROVAL_REQUIRED naming schedule request 1", err)
	}
	if j, _ := r.Jobs().Get(ctx, "cli-settle"); j.Cron != "" {
		t.Fatalf("the cron changed before approval: %q", j.Cron)
	}
	if out, err := run(replaysCommand, approver, "approve", "1"); err != nil {
		t.Fatalf("replays approve: %v\n%s", err, out)
	}
	if j, _ := r.Jobs().Get(ctx, "cli-settle"); j.Cron != "@daily" {
		t.Fatalf("after approval the cron is %q, want @daily", j.Cron)
	}
}
