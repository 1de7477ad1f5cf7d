package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// The downstreams command's help exits 0 and its bad command lines exit 2 before any call.
func TestDownstreamsUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{{"downstreams", "-h"}, {"downstreams", "help"}, {"downstreams", "set", "-h"}, {"downstreams", "list", "--help"}} {
		if res := baton(ctx, args...); res.code != exitOK || !strings.HasPrefix(res.stdout, "usage:\n  baton downstreams") || res.stderr != "" {
			t.Errorf("baton %s: exit %d (%v), stdout %q; want its usage and exit 0", strings.Join(args, " "), res.code, res.err, firstLine(res.stdout))
		}
	}
	api := []string{"--url", "http://127.0.0.1:1", "--token", "bt_unused"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"downstreams"}, "no subcommand given"},
		{[]string{"downstreams", "throttle"}, `unknown subcommand "throttle"`},
		{[]string{"downstreams", "show"}, "want 1 argument(s), got 0"},
		{[]string{"downstreams", "list", "provider"}, "want 0 argument(s), got 1"},
		{[]string{"downstreams", "set", "provider"}, "nothing to change"},
		{[]string{"downstreams", "set", "provider", "--rate", "fast"}, "invalid value"},
		{[]string{"downstreams", "set", "provider", "--quota", "5", "--quota-window", "WEEK"}, "--quota-window must be HOUR or DAY"},
		{[]string{"downstreams", "set", "provider", "--clear", "rate,burst"}, `--clear takes rate, concurrency and quota, not "BURST"`},
		{[]string{"downstreams", "pause", "provider", "--rate", "5"}, "flag provided but not defined"},
		{[]string{"downstreams", "list", "--output", "yaml"}, "--output must be text or json"},
	} {
		args := c.args
		if len(args) > 1 {
			args = append(args, api...)
		}
		res := baton(ctx, args...)
		if res.code != exitUsage || res.err == nil || !strings.Contains(res.err.Error(), c.want) {
			t.Errorf("baton %s: exit %d (%v), want exit 2 and %q", strings.Join(c.args, " "), res.code, res.err, c.want)
		}
	}
}

// list, show, set, pause and resume against a real server, in text and JSON, with the exit
// codes of a refusal, an unknown downstream and a viewer.
func TestDownstreamsCommands(t *testing.T) {
	t.Parallel()
	job := runner.NewJob(runner.JobInfo{Name: "cli-ds", Version: "1", Downstreams: []runner.Downstream{{
		Name: "provider", Defaults: runner.DownstreamLimits{RatePerSecond: 50, Burst: 10, Concurrency: 16},
	}}}, func(ctx context.Context, run *runner.Run) error {
		return run.Process(ctx, runner.Item{Target: "a", Downstream: "provider"}, func(context.Context, *runner.Attempt) error { return nil })
	})
	ctx, _, tokens, srv := cliServer(t, job)
	op, _, err := httpapi.CreateToken(ctx, tokens, "cli-ds-op", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	viewer, _, err := httpapi.CreateToken(ctx, tokens, "cli-ds-viewer", "VIEWER")
	if err != nil {
		t.Fatal(err)
	}
	as := func(token string, want int, args ...string) cliResult {
		t.Helper()
		res := baton(ctx, append(args, "--url", srv.URL, "--token", token)...)
		if res.code != want {
			t.Fatalf("baton %s: exit %d (%v), want %d\n%s", strings.Join(args, " "), res.code, res.err, want, res.stdout)
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

	if res := as(viewer, exitOK, "downstreams", "list"); !strings.Contains(res.stdout, "provider") || !strings.Contains(res.stdout, "50/s burst 10") ||
		!strings.Contains(res.stdout, "0/16 in flight") {
		t.Fatalf("downstreams list:\n%s", res.stdout)
	}
	var list downstreamsJSON
	decode(as(viewer, exitOK, "downstreams", "list", "--output", "json"), &list)
	if len(list.Downstreams) != 1 || list.Downstreams[0].Name != "provider" || list.Downstreams[0].Limits.RatePerSecond == nil ||
		*list.Downstreams[0].Limits.RatePerSecond != 50 || list.Downstreams[0].Limits.Quota != nil {
		t.Fatalf("downstreams list --output json: %+v", list)
	}
	before := list.Downstreams[0]

	res := as(op, exitOK, "downstreams", "set", "provider", "--rate", "20", "--burst", "5", "--quota", "1000", "--quota-window", "day", "--reason", "provider asked")
	if !strings.Contains(res.stdout, "provider: running, rate 20/s burst 5, concurrency 0/16 in flight, quota 0/1000 per DAY") {
		t.Fatalf("downstreams set said %q", res.stdout)
	}
	var shown downstreamJSON
	decode(as(viewer, exitOK, "downstreams", "show", "provider", "--output", "json"), &shown)
	if l := shown.Limits; l.RatePerSecond == nil || *l.RatePerSecond != 20 || l.Burst == nil || *l.Burst != 5 || l.Quota == nil || *l.Quota != 1000 ||
		shown.UpdatedBy == nil || *shown.UpdatedBy != "cli-ds-op" || shown.Version <= before.Version || !reflect.DeepEqual(shown.Defaults, before.Defaults) {
		t.Fatalf("downstreams show after set: %+v", shown)
	}
	if res := as(viewer, exitOK, "downstreams", "show", "provider"); !strings.Contains(res.stdout, "by cli-ds-op") || !strings.Contains(res.stdout, "50/s burst 10") {
		t.Fatalf("downstreams show does not say who changed it and the defaults:\n%s", res.stdout)
	}

	// Refusals change nothing.
	if res := as(op, exitAPI, "downstreams", "set", "provider", "--rate", "-1"); !strings.Contains(res.err.Error(), "INVALID_INPUT") {
		t.Fatalf("a negative rate: %v", res.err)
	}
	as(op, exitAPI, "downstreams", "set", "provider", "--burst", "1000000")
	as(op, exitNotFound, "downstreams", "set", "nope", "--rate", "5")
	as(op, exitNotFound, "downstreams", "show", "nope")
	as(viewer, exitAuth, "downstreams", "pause", "provider")
	var after downstreamJSON
	decode(as(viewer, exitOK, "downstreams", "show", "provider", "--output", "json"), &after)
	if after.Version != shown.Version || !reflect.DeepEqual(after.Limits, shown.Limits) {
		t.Fatalf("after the refusals %+v, want it unchanged from %+v", after, shown)
	}

	if res := as(op, exitOK, "downstreams", "pause", "provider", "--reason", "maintenance window"); !strings.Contains(res.stdout, "provider: PAUSED") {
		t.Fatalf("downstreams pause said %q", res.stdout)
	}
	decode(as(op, exitOK, "downstreams", "resume", "provider", "--output", "json"), &after)
	if after.Limits.Paused {
		t.Fatalf("after resume: %+v", after)
	}
	decode(as(op, exitOK, "downstreams", "set", "provider", "--clear", "rate,quota", "--output", "json"), &after)
	if after.Limits.RatePerSecond != nil || after.Limits.Burst != nil || after.Limits.Quota != nil || after.Limits.Concurrency == nil {
		t.Fatalf("after --clear rate,quota: %+v", after.Limits)
	}
}
