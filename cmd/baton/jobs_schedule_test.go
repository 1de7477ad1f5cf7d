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
