package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// Input that would make a schedule hurt — an @every under a second, zero, negative or not whole
// seconds, a lease out of range — is refused with a coded error naming the field and the allowed
// range, in updateJobSchedule and in the editor's preview, and nothing is written.
func TestHarmfulScheduleInputRefused(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "flaky", n: 1}}, noRun: true})
	op := b.token(model.RoleOperator)
	version := func() (v int64, cron string, lease *int) {
		t.Helper()
		if err := b.Pool.QueryRow(context.Background(),
			`SELECT version, cron, lease_seconds FROM job_settings WHERE name = 'flaky'`).Scan(&v, &cron, &lease); err != nil {
			t.Fatal(err)
		}
		return v, cron, lease
	}
	v0, cron0, lease0 := version()
	const m = `mutation($in: UpdateJobScheduleInput!) { updateJobSchedule(input: $in) {
		job { cron leaseSeconds } userErrors { code message field } } }`
	for _, tc := range []struct {
		in           map[string]any
		code, field  string
		rangeInWords string
	}{
		{map[string]any{"cron": "@every 0s"}, "INVALID_CRON", "cron", "1s to 8760h"},
		{map[string]any{"cron": "@every -5s"}, "INVALID_CRON", "cron", "1s to 8760h"},
		{map[string]any{"cron": "@every 1ms"}, "INVALID_CRON", "cron", "1s to 8760h"},
		{map[string]any{"cron": "@every 500ms", "enabled": true}, "INVALID_CRON", "cron", "1s to 8760h"},
		{map[string]any{"cron": "@every 2.5s"}, "INVALID_CRON", "cron", "1s to 8760h"},
		{map[string]any{"leaseSeconds": 99999999999}, "INVALID_INPUT", "leaseSeconds", "between 1 and 86400"},
		{map[string]any{"leaseSeconds": 100000}, "INVALID_INPUT", "leaseSeconds", "between 1 and 86400"},
		{map[string]any{"leaseSeconds": -5}, "INVALID_INPUT", "leaseSeconds", "between 1 and 86400"},
	} {
		tc.in["name"] = "flaky"
		var data struct {
			UpdateJobSchedule struct {
				Job        *struct{ Cron string }
				UserErrors []userError
			}
		}
		i.post(t, op, m, map[string]any{"in": tc.in}).decode(t, &data)
		ues := data.UpdateJobSchedule.UserErrors
		if data.UpdateJobSchedule.Job != nil || len(ues) != 1 || ues[0].Code != tc.code || ues[0].Field == nil ||
			*ues[0].Field != tc.field || !strings.Contains(ues[0].Message, tc.rangeInWords) {
			t.Errorf("updateJobSchedule %v: job %+v, user errors %+v; want %s on %s naming %q", tc.in, data.UpdateJobSchedule.Job, ues, tc.code, tc.field, tc.rangeInWords)
		}
	}
	if v, cron, lease := version(); v != v0 || cron != cron0 || (lease == nil) != (lease0 == nil) {
		t.Fatalf("refused updates wrote: version %d -> %d, cron %q -> %q, lease %v -> %v", v0, v, cron0, cron, lease0, lease)
	}

	for _, spec := range []string{"@every 0s", "@every -5s", "@every 500ms"} {
		var data struct {
			CronPreview struct {
				Valid         bool
				NextFireTimes []string
				UserErrors    []userError
			}
		}
		i.post(t, op, `query($c: String!) { cronPreview(cron: $c) { valid nextFireTimes userErrors { code message field } } }`,
			map[string]any{"c": spec}).decode(t, &data)
		p := data.CronPreview
		if p.Valid || len(p.NextFireTimes) != 0 || len(p.UserErrors) != 1 || p.UserErrors[0].Code != "INVALID_CRON" ||
			p.UserErrors[0].Field == nil || *p.UserErrors[0].Field != "cron" || !strings.Contains(p.UserErrors[0].Message, "1s to 8760h") {
			t.Errorf("cronPreview(%q): %+v; want INVALID_CRON on cron naming 1s to 8760h", spec, p)
		}
	}
}
