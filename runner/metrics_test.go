package runner_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// The runner's Prometheus series count what happened: runs started and finished, items by
// result, and the ledger writes redone (0).
func TestMetricsCountRunsAndItems(t *testing.T) {
	b := setup(t)
	reg := prometheus.NewRegistry()
	job := runner.NewJob(runner.JobInfo{Name: "counted"}, func(ctx context.Context, run *runner.Run) error {
		return run.ProcessBatch(ctx, batchOf("m", 0, 7), 2, func(context.Context, runner.Item, *runner.Attempt) error { return nil })
	})
	r := b.runner(func(c *runner.Config) { c.Registerer = reg }, job)
	if rec := b.finish(r, mustStart(t, r, runner.StartParams{Job: "counted"})); rec.Status != bt.StatusSucceeded {
		t.Fatalf("run %s (%s)", rec.Status, rec.Message)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[key] = m.GetCounter().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"baton_runs_started_total{trigger=MANUAL}":    1,
		"baton_runs_finished_total{status=SUCCEEDED}": 1,
		"baton_items_total{result=CONFIRMED}":         7,
		"baton_ledger_writes_redone_total":            0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
}
