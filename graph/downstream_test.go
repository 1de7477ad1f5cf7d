package graph_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// downstreamJob declares the downstream "provider" (rate 50/s, burst 10, 16 in flight) and
// calls it once per item.
func downstreamJob(name string) runner.Job {
	info := runner.JobInfo{Name: name, Version: "1", Downstreams: []runner.Downstream{{
		Name: "provider", Defaults: runner.DownstreamLimits{RatePerSecond: 50, Burst: 10, Concurrency: 16},
	}}}
	return runner.NewJob(info, func(ctx context.Context, run *runner.Run) error {
		return run.Process(ctx, runner.Item{Target: "a", Downstream: "provider"}, func(context.Context, *runner.Attempt) error { return nil })
	})
}

type downstreamLimitsNode struct {
	RatePerSecond *float64
	Burst         *int
	Concurrency   *int
	Quota         *int
	QuotaWindow   *string
	Paused        bool
}

type downstreamNode struct {
	Name      string
	Limits    downstreamLimitsNode
	Defaults  downstreamLimitsNode
	Version   int64
	UpdatedAt *string
	UpdatedBy *string
	Stats     struct {
		WindowSeconds                   int
		CallsPerSecond, WaitSeconds     float64
		Calls, Throttled, Errors, Waits int64
		EffectiveRate                   *float64
		BlockedUntil                    *string
		InFlight                        int
		QuotaUsed                       int64
		Degraded                        bool
	}
}

const downstreamFieldsQ = `name version updatedAt updatedBy
	limits { ratePerSecond burst concurrency quota quotaWindow paused }
	defaults { ratePerSecond burst concurrency quota quotaWindow paused }
	stats { windowSeconds callsPerSecond calls throttled errors waits waitSeconds effectiveRate blockedUntil inFlight quotaUsed degraded }`

const updateDownstreamQ = `mutation($in: UpdateDownstreamInput!) { updateDownstream(input: $in) {
	downstream { ` + downstreamFieldsQ + ` } userErrors { code message field } } }`

type updateDownstreamData struct {
	UpdateDownstream struct {
		Downstream *downstreamNode
		UserErrors []userError
	}
}

func (i *instance) downstream(t *testing.T, token, name string) *downstreamNode {
	t.Helper()
	var out struct{ Downstream *downstreamNode }
	i.post(t, token, `query($n: String!) { downstream(name: $n) { `+downstreamFieldsQ+` } }`, map[string]any{"n": name}).decode(t, &out)
	return out.Downstream
}

// Viewers read the downstreams the jobs declare, with the code's defaults; operators change
// their limits, and every instance's answer, the version and the audit log say so.
func TestDownstreamsOverGraphQL(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{downstreamJob("ds-pay")}})
	viewer, operator := b.token(model.RoleViewer), b.token(model.RoleOperator)

	var list struct{ Downstreams []downstreamNode }
	i.post(t, viewer, `{ downstreams { `+downstreamFieldsQ+` } }`, nil).decode(t, &list)
	if len(list.Downstreams) != 1 || list.Downstreams[0].Name != "provider" {
		t.Fatalf("downstreams %+v, want provider alone", list.Downstreams)
	}
	d := list.Downstreams[0]
	if l := d.Limits; !floatIs(l.RatePerSecond, 50) || !intIs(l.Burst, 10) || !intIs(l.Concurrency, 16) || l.Quota != nil || l.QuotaWindow != nil || l.Paused {
		t.Fatalf("provider's limits %+v, want the code's: rate 50, burst 10, concurrency 16, no quota", l)
	}
	if !reflect.DeepEqual(d.Defaults, d.Limits) || d.UpdatedBy != nil || d.Stats.WindowSeconds <= 0 || d.Stats.Degraded {
		t.Fatalf("provider %+v, want its defaults in force, no one's change, a window and not degraded", d)
	}
	if got := i.downstream(t, viewer, "nope"); got != nil {
		t.Fatalf("downstream(nope) = %+v, want null", got)
	}

	in := map[string]any{"name": "provider", "ratePerSecond": 20.5, "burst": 5, "quota": 1000, "quotaWindow": "DAY", "reason": "provider asked"}
	if r := i.post(t, viewer, updateDownstreamQ, map[string]any{"in": in}); r.code() != "FORBIDDEN" {
		t.Fatalf("a viewer updates: code %q, want FORBIDDEN", r.code())
	}
	// The refusal is audited against the downstream, as the runner audits an update.
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'updateDownstream' AND outcome LIKE 'FORBIDDEN%' AND target = 'downstream:provider'`); n != 1 {
		t.Errorf("%d FORBIDDEN updateDownstream audit rows on downstream:provider; want 1", n)
	}
	var up updateDownstreamData
	i.post(t, operator, updateDownstreamQ, map[string]any{"in": in}).decode(t, &up)
	got := up.UpdateDownstream.Downstream
	if len(up.UpdateDownstream.UserErrors) != 0 || got == nil {
		t.Fatalf("operator's update: %+v", up.UpdateDownstream.UserErrors)
	}
	if l := got.Limits; !floatIs(l.RatePerSecond, 20.5) || !intIs(l.Burst, 5) || !intIs(l.Concurrency, 16) || !intIs(l.Quota, 1000) ||
		l.QuotaWindow == nil || *l.QuotaWindow != "DAY" {
		t.Fatalf("limits after the update %+v, want rate 20.5, burst 5, concurrency 16 unchanged, quota 1000/DAY", l)
	}
	if got.Version <= d.Version || got.UpdatedBy == nil || *got.UpdatedBy != b.tokenName(operator) || got.UpdatedAt == nil || !reflect.DeepEqual(got.Defaults, d.Defaults) {
		t.Fatalf("after the update %+v, want a higher version than %d, changed by the operator, defaults unchanged", got, d.Version)
	}
	if again := i.downstream(t, viewer, "provider"); again == nil || !reflect.DeepEqual(again.Limits, got.Limits) || again.Version != got.Version {
		t.Fatalf("read back %+v, want %+v", again, got.Limits)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'updateDownstream' AND actor = $1`, b.tokenName(operator)); n != 1 {
		t.Fatalf("%d audit rows of the operator's update, want 1", n)
	}

	// Clearing and pausing.
	i.post(t, operator, updateDownstreamQ, map[string]any{"in": map[string]any{"name": "provider", "clear": []string{"RATE", "QUOTA"}, "paused": true}}).decode(t, &up)
	if got := up.UpdateDownstream.Downstream; got == nil || got.Limits.RatePerSecond != nil || got.Limits.Burst != nil || got.Limits.Quota != nil ||
		got.Limits.QuotaWindow != nil || !intIs(got.Limits.Concurrency, 16) || !got.Limits.Paused || got.Stats.EffectiveRate != nil {
		t.Fatalf("after clearing rate and quota and pausing: %+v (%+v)", got, up.UpdateDownstream.UserErrors)
	}
}

// A bad value, an unknown downstream or an overlong name is a coded refusal naming the field,
// and changes nothing.
func TestUpdateDownstreamRefusesBadInput(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{downstreamJob("ds-bad")}})
	operator := b.token(model.RoleOperator)
	before := i.downstream(t, operator, "provider")
	if before == nil {
		t.Fatal("the job's downstream is not known")
	}
	for _, c := range []struct {
		what        string
		in          map[string]any
		code, field string
	}{
		{"a negative rate", map[string]any{"ratePerSecond": -1}, "INVALID_INPUT", "ratePerSecond"},
		{"a zero rate", map[string]any{"ratePerSecond": 0}, "INVALID_INPUT", "ratePerSecond"},
		{"a rate over the bound", map[string]any{"ratePerSecond": 1e6}, "INVALID_INPUT", "ratePerSecond"},
		{"a tiny negative burst", map[string]any{"burst": -3}, "INVALID_INPUT", "burst"},
		{"a huge burst", map[string]any{"burst": 1_000_000}, "INVALID_INPUT", "burst"},
		{"a zero concurrency", map[string]any{"concurrency": 0}, "INVALID_INPUT", "concurrency"},
		{"a concurrency over the bound", map[string]any{"concurrency": 10001}, "INVALID_INPUT", "concurrency"},
		{"a negative quota", map[string]any{"quota": -5}, "INVALID_INPUT", "quota"},
		{"a quota over the bound", map[string]any{"quota": 2_000_000_000}, "INVALID_INPUT", "quota"},
		{"an unknown downstream", map[string]any{"name": "nope", "ratePerSecond": 5}, "NOT_FOUND", "name"},
		{"a name too long", map[string]any{"name": strings.Repeat("p", 150), "ratePerSecond": 5}, "INVALID_INPUT", "name"},
	} {
		in := map[string]any{"name": "provider", "reason": c.what}
		for k, v := range c.in {
			in[k] = v
		}
		var up updateDownstreamData
		i.post(t, operator, updateDownstreamQ, map[string]any{"in": in}).decode(t, &up)
		ue := up.UpdateDownstream.UserErrors
		if up.UpdateDownstream.Downstream != nil || len(ue) != 1 || ue[0].Code != c.code || ue[0].Field == nil || *ue[0].Field != c.field || ue[0].Message == "" {
			t.Errorf("%s: %+v, want one %s on %s and no downstream", c.what, ue, c.code, c.field)
		}
	}
	// Values the transport refuses before any resolver: a rate no float holds, a name over the
	// API's identifier limit, a window that is not one.
	for _, c := range []struct {
		what string
		q    string
		vars map[string]any
	}{
		{"an infinite rate", `mutation { updateDownstream(input: {name: "provider", ratePerSecond: 1e999}) { userErrors { code } } }`, nil},
		{"a name over the input limit", updateDownstreamQ, map[string]any{"in": map[string]any{"name": strings.Repeat("p", 201), "ratePerSecond": 5}}},
		{"an unknown quota window", updateDownstreamQ, map[string]any{"in": map[string]any{"name": "provider", "quota": 5, "quotaWindow": "WEEK"}}},
		{"a burst beyond Int", updateDownstreamQ, map[string]any{"in": map[string]any{"name": "provider", "burst": 1e30}}},
	} {
		r := i.post(t, operator, c.q, c.vars)
		if code := r.code(); code == "" || code == "INTERNAL_SERVER_ERROR" {
			t.Errorf("%s: code %q (%+v), want a coded refusal", c.what, code, r.Errors)
		}
	}
	if after := i.downstream(t, operator, "provider"); after == nil || !reflect.DeepEqual(after.Limits, before.Limits) || after.Version != before.Version || after.UpdatedBy != nil {
		t.Fatalf("after the refusals %+v, want it unchanged from %+v", after, before)
	}
}

func floatIs(p *float64, want float64) bool { return p != nil && *p == want }
func intIs(p *int, want int) bool           { return p != nil && *p == want }
