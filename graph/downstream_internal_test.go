package graph

import (
	"testing"

	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
)

// The schema spells "no limit" as null; a burst of 0 means 1 under a rate; a quota without a
// window counts per hour.
func TestDownstreamLimitsAsTheSchemaSpellsThem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		l      bt.DownstreamLimits
		burst  *int
		window *bt.QuotaWindow
	}{
		{bt.DownstreamLimits{}, nil, nil},
		{bt.DownstreamLimits{RatePerSecond: 5}, ptr(1), nil},
		{bt.DownstreamLimits{RatePerSecond: 5, Burst: 7}, ptr(7), nil},
		{bt.DownstreamLimits{Burst: 7}, nil, nil},
		{bt.DownstreamLimits{Quota: 10}, nil, ptr(bt.QuotaHour)},
		{bt.DownstreamLimits{Quota: 10, QuotaWindow: bt.QuotaDay}, nil, ptr(bt.QuotaDay)},
		{bt.DownstreamLimits{QuotaWindow: bt.QuotaDay}, nil, nil},
	} {
		if got := limitBurst(&c.l); !samePtr(got, c.burst) {
			t.Errorf("burst of %+v = %v, want %v", c.l, val(got), val(c.burst))
		}
		if got := limitQuotaWindow(&c.l); !samePtr(got, c.window) {
			t.Errorf("quota window of %+v = %v, want %v", c.l, val(got), val(c.window))
		}
	}
	if positiveOrNil(0.0) != nil || positiveOrNil(-1) != nil || *positiveOrNil(int64(3)) != 3 {
		t.Error("positiveOrNil does not spell a zero or negative limit as null")
	}
}

// An omitted input field stays nil (unchanged) in the runner's update.
func TestDownstreamUpdateFromInput(t *testing.T) {
	t.Parallel()
	u := downstreamUpdate(model.UpdateDownstreamInput{Name: "provider", Quota: ptr(1000), Clear: []bt.DownstreamLimit{bt.LimitRate}, Reason: ptr("why")})
	if u.Name != "provider" || u.Quota == nil || *u.Quota != 1000 || u.RatePerSecond != nil || u.Burst != nil || u.Concurrency != nil ||
		u.QuotaWindow != nil || u.Paused != nil || len(u.Clear) != 1 || u.Clear[0] != bt.LimitRate || u.Reason != "why" {
		t.Fatalf("update %+v", u)
	}
}

func ptr[T any](v T) *T { return &v }

func samePtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func val[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
