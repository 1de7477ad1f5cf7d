package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// alarms returns the active alarms as "KIND job" (and run, for run alarms), sorted, with
// their values by the same key.
func alarms(t *testing.T, r *runner.Runner) ([]string, map[string]float64) {
	t.Helper()
	got, err := r.Alarms().Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	values := map[string]float64{}
	for _, a := range got {
		k := fmt.Sprintf("%s %s", a.Kind, a.JobName)
		if a.RunID != nil {
			k += fmt.Sprintf(" run:%d", *a.RunID)
		}
		keys = append(keys, k)
		values[k] = a.Value
	}
	sort.Strings(keys)
	return keys, values
}

func wantAlarms(t *testing.T, r *runner.Runner, want ...string) map[string]float64 {
	t.Helper()
	got, values := alarms(t, r)
	sort.Strings(want)
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("alarms [%s], want [%s]", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	return values
}

// wantGauges registers a fresh alert collector and checks baton_alerts{kind} as gathered.
func wantGauges(t *testing.T, r *runner.Runner, want map[string]float64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(r.AlertCollector()); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "baton_alerts" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					got[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("baton_alerts %v, want %v", got, want)
	}
}

// The run alarms judge a running run's timestamps by the database clock; moving them back
// in the database is moving the clock forward.
func TestRunAlarmsFollowTheClock(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job := newLedgerJob("held", "h1")
	job.info.Lease = time.Minute
	job.info.StallAfter = time.Minute
	reached, gate := make(chan struct{}), make(chan struct{})
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		close(reached)
		<-gate
		return nil
	}
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: "held"})
	<-reached // the run is RUNNING, inside its only call
	run := fmt.Sprintf(" held run:%d", id)
	set := func(sql string) {
		t.Helper()
		if _, err := b.Pool.Exec(ctx, `UPDATE job_runs SET `+sql+` WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}

	wantAlarms(t, r) // fresh heartbeat, progress and checkpoint: nothing
	set(`last_checkpoint_at = now() - interval '30 seconds'`)
	wantAlarms(t, r) // under the job's StallAfter
	set(`last_checkpoint_at = now() - interval '90 seconds'`)
	v := wantAlarms(t, r, "CHECKPOINT_STALLED"+run)
	if s := v["CHECKPOINT_STALLED"+run]; s < 90 || s > 120 {
		t.Fatalf("stalled for %vs, want about 90", s)
	}
	set(`last_checkpoint_at = now(), last_progress_at = now() - interval '90 seconds'`)
	wantAlarms(t, r, "NO_LEDGER_WRITES"+run)
	set(`last_progress_at = now(), heartbeat_at = now() - interval '50 seconds'`)
	wantAlarms(t, r) // within the lease: one renewal late is no alarm
	set(`heartbeat_at = now() - interval '130 seconds'`)
	v = wantAlarms(t, r, "HEARTBEAT_MISSED"+run)
	if s := v["HEARTBEAT_MISSED"+run]; s < 130 || s > 160 {
		t.Fatalf("heartbeat missed for %vs, want about 130", s)
	}

	close(gate)
	b.finish(r, id)
	wantAlarms(t, r) // a finished run raises no run alarm
}

func TestLedgerAlarms(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	quiet := newLedgerJob("quiet", "q1", "q2", "q3")
	retry := newLedgerJob("retry", "r1")
	retry.info.Retry = runner.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
	retry.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		return runner.Transient(errors.New("HTTP 429"))
	}
	flakyTargets := make([]string, 25)
	for i := range flakyTargets {
		flakyTargets[i] = fmt.Sprintf("f%02d", i)
	}
	flaky := newLedgerJob("flaky-api", flakyTargets...)
	flaky.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		var i int
		fmt.Sscanf(target, "f%d", &i)
		if i%4 == 0 { // 7 of 25
			return runner.Transient(errors.New("HTTP 502"))
		}
		return nil
	}
	doubt, _ := settleJob("doubt", "amb")
	r := b.runner(nil, quiet, retry, flaky, doubt)

	b.succeed(r, runner.StartParams{Job: "quiet"})
	wantAlarms(t, r) // 3 good external calls: nothing

	retryRun := b.succeed(r, runner.StartParams{Job: "retry"})
	// 3 failed calls of 3 is a 100% rate, but under the 20 calls a rate needs.
	v := wantAlarms(t, r, "TARGET_RETRIED retry")
	if v["TARGET_RETRIED retry"] != 1 {
		t.Fatalf("retried targets %v, want 1", v["TARGET_RETRIED retry"])
	}

	b.succeed(r, runner.StartParams{Job: "flaky-api"})
	v = wantAlarms(t, r, "TARGET_RETRIED retry", "DOWNSTREAM_ERRORS flaky-api")
	if got := v["DOWNSTREAM_ERRORS flaky-api"]; math.Abs(got-7.0/25) > 1e-9 {
		t.Fatalf("downstream error rate %v, want %v", got, 7.0/25)
	}

	b.succeed(r, runner.StartParams{Job: "doubt"})
	wantAlarms(t, r, "TARGET_RETRIED retry", "DOWNSTREAM_ERRORS flaky-api", "AMBIGUOUS_EFFECT doubt")

	wantGauges(t, r, map[string]float64{"AMBIGUOUS_EFFECT": 1, "CHECKPOINT_STALLED": 0, "DOWNSTREAM_ERRORS": 1,
		"HEARTBEAT_MISSED": 0, "NO_LEDGER_WRITES": 0, "TARGET_RETRIED": 1, "AUTO_RESUME_EXHAUSTED": 0, "DOWNSTREAM_LIMIT_DEGRADED": 0, "SCHEDULED_FIRE_BLOCKED": 0})

	// Each alarm ends with its signal: the doubt is resolved, the target confirmed, the
	// downstream window moves on.
	if _, err := r.Ledger().ResolveAmbiguous(ctx, b.mustEntry("doubt", "amb").ID, runner.ResolveNotApplied, "", "provider has no record", "ops"); err != nil {
		t.Fatal(err)
	}
	wantAlarms(t, r, "TARGET_RETRIED retry", "DOWNSTREAM_ERRORS flaky-api")
	retry.setBehave(nil)
	b.replayNow(r, retryRun.ID, bt.ScopeTransient)
	if e := b.mustEntry("retry", "r1"); e.State != bt.LedgerConfirmed || e.Attempt != 4 {
		t.Fatalf("r1 after the replay: %s attempt %d, want CONFIRMED attempt 4", e.State, e.Attempt)
	}
	wantAlarms(t, r, "DOWNSTREAM_ERRORS flaky-api")
	if _, err := b.Pool.Exec(ctx, `UPDATE job_call_stats SET minute = minute - interval '10 minutes' WHERE job_name = 'flaky-api'`); err != nil {
		t.Fatal(err)
	}
	wantAlarms(t, r)
	wantGauges(t, r, map[string]float64{"AMBIGUOUS_EFFECT": 0, "CHECKPOINT_STALLED": 0, "DOWNSTREAM_ERRORS": 0,
		"HEARTBEAT_MISSED": 0, "NO_LEDGER_WRITES": 0, "TARGET_RETRIED": 0, "AUTO_RESUME_EXHAUSTED": 0, "DOWNSTREAM_LIMIT_DEGRADED": 0, "SCHEDULED_FIRE_BLOCKED": 0})
}
