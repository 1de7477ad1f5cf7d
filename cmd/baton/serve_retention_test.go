package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
)

// The retention flags default to the runner's periods, 0 keeps a table forever, and a
// negative day count is refused.
func TestServeRetentionFlags(t *testing.T) {
	t.Parallel()
	c, err := parseServeFlags(nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	want := runner.Retention{Runs: 90 * day, RunErrors: 30 * day, ScheduleEvents: 30 * day, CallStats: 7 * day, AuditLog: 400 * day}
	if got := c.Retention; got != want {
		t.Fatalf("default retention %+v, want %+v", got, want)
	}
	want = runner.Retention{Runs: runner.DefaultRunRetention, RunErrors: runner.DefaultRunErrorRetention,
		ScheduleEvents: runner.DefaultScheduleEventRetention, CallStats: runner.DefaultCallStatsRetention, AuditLog: runner.DefaultAuditRetention}
	if got := c.Retention; got != want {
		t.Fatalf("flag defaults %+v differ from the runner's %+v", got, want)
	}
	c, err = parseServeFlags([]string{"--retention-audit-days", "0", "--retention-runs-days", "10"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Retention; got.AuditLog >= 0 || got.Runs != 10*day {
		t.Fatalf("audit 0 days, runs 10 days: %+v, want the audit log kept forever and runs 10 days", got)
	}
	if _, err := parseServeFlags([]string{"--retention-run-errors-days", "-1"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("negative retention: %v, want refused", err)
	}
}
