package graph_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// TestSchedulePreviewAcrossDST: cronPreview and Job.nextFireTimes show the fires the scheduler
// makes across daylight saving. A weekly 01:30 in New York (its hour repeated every November)
// and a weekly 02:30 (skipped every March) fire once every Sunday for 50 weeks — a span that
// holds both transitions whenever the test runs — the skipped one at 03:00 on its Sunday. The
// job's nextFireTimes for the same schedule are the preview's fires.
func TestSchedulePreviewAcrossDST(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "weekly", n: 1}}, noRun: true})
	op := b.token(model.RoleOperator)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}

	var upd struct {
		UpdateJobSchedule struct{ UserErrors []userError }
	}
	i.post(t, op, `mutation { updateJobSchedule(input: {name: "weekly", cron: "30 1 * * 0", timezone: "America/New_York"}) {
		userErrors { code message } } }`, nil).decode(t, &upd)
	if len(upd.UpdateJobSchedule.UserErrors) > 0 {
		t.Fatalf("updateJobSchedule: %+v", upd.UpdateJobSchedule.UserErrors)
	}
	type preview struct {
		Valid         bool
		NextFireTimes []time.Time
		UserErrors    []userError
	}
	var data struct {
		Repeated, Skipped preview
		Job               struct{ NextFireTimes []time.Time }
	}
	i.post(t, op, `{
		repeated: cronPreview(cron: "30 1 * * 0", timezone: "America/New_York", n: 50) { valid nextFireTimes userErrors { code } }
		skipped: cronPreview(cron: "30 2 * * 0", timezone: "America/New_York", n: 50) { valid nextFireTimes userErrors { code } }
		job(name: "weekly") { nextFireTimes(n: 50) }
	}`, nil).decode(t, &data)

	for _, c := range []struct {
		name    string
		p       preview
		hour    int
		gapHour int // the local hour a fire lands on when its own is skipped; -1: none
	}{{"repeated 01:30", data.Repeated, 1, -1}, {"skipped 02:30", data.Skipped, 2, 3}} {
		if !c.p.Valid || len(c.p.NextFireTimes) != 50 {
			t.Fatalf("%s: preview %+v", c.name, c.p)
		}
		gaps := 0
		for k, f := range c.p.NextFireTimes {
			l := f.In(ny)
			switch {
			case l.Weekday() != time.Sunday:
				t.Fatalf("%s: fire %s is not on a Sunday", c.name, l)
			case l.Hour() == c.hour && l.Minute() == 30:
			case l.Hour() == c.gapHour && l.Minute() == 0:
				gaps++
			default:
				t.Fatalf("%s: fire %s is neither at %02d:30 nor at the end of a skipped hour", c.name, l, c.hour)
			}
			if k > 0 {
				prev := c.p.NextFireTimes[k-1].In(ny)
				want := time.Date(prev.Year(), prev.Month(), prev.Day()+7, 0, 0, 0, 0, ny)
				if y, m, d := l.Date(); y != want.Year() || m != want.Month() || d != want.Day() {
					t.Fatalf("%s: fire %s follows %s: not the next Sunday (a week fired twice or skipped)", c.name, l, prev)
				}
			}
		}
		if c.gapHour > 0 && gaps != 1 {
			t.Fatalf("%s: %d fires at the end of the skipped hour in 50 weeks, want 1", c.name, gaps)
		}
	}
	if !slices.EqualFunc(data.Job.NextFireTimes, data.Repeated.NextFireTimes, time.Time.Equal) {
		t.Fatalf("the job's nextFireTimes differ from cronPreview of its schedule:\n %v\n %v",
			data.Job.NextFireTimes, data.Repeated.NextFireTimes)
	}
}

// TestLocalZoneRefusedByTheAPI: updateJobSchedule and cronPreview refuse zone "Local" with
// INVALID_TIMEZONE on the timezone field, saying which kind of zone to name.
func TestLocalZoneRefusedByTheAPI(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "zoned", n: 1}}, noRun: true})
	op := b.token(model.RoleOperator)
	var data struct {
		UpdateJobSchedule struct {
			Job        *struct{ Timezone string }
			UserErrors []userError
		}
	}
	i.post(t, op, `mutation { updateJobSchedule(input: {name: "zoned", cron: "0 4 * * *", timezone: "Local"}) {
		job { timezone } userErrors { code message field } } }`, nil).decode(t, &data)
	ues := data.UpdateJobSchedule.UserErrors
	if data.UpdateJobSchedule.Job != nil || len(ues) != 1 || ues[0].Code != "INVALID_TIMEZONE" || ues[0].Field == nil ||
		*ues[0].Field != "timezone" || !strings.Contains(ues[0].Message, `"Europe/Berlin"`) {
		t.Fatalf("updateJobSchedule to Local: job %+v, user errors %+v", data.UpdateJobSchedule.Job, ues)
	}
	if n := b.count(`SELECT count(*) FROM job_settings WHERE name = 'zoned' AND timezone = 'UTC' AND cron = '' AND version = 1`); n != 1 {
		t.Fatal("the refused update changed the job")
	}
	var preview struct {
		CronPreview struct {
			Valid         bool
			NextFireTimes []time.Time
			UserErrors    []userError
		}
	}
	i.post(t, op, `{ cronPreview(cron: "0 4 * * *", timezone: "Local") { valid nextFireTimes userErrors { code message field } } }`, nil).
		decode(t, &preview)
	p := preview.CronPreview
	if p.Valid || len(p.NextFireTimes) != 0 || len(p.UserErrors) != 1 || p.UserErrors[0].Code != "INVALID_TIMEZONE" ||
		!strings.Contains(p.UserErrors[0].Message, `"UTC"`) {
		t.Fatalf("cronPreview in Local: %+v", p)
	}
}
