package demo

import (
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
)

func TestConfigDefaultsAndOff(t *testing.T) {
	t.Parallel()
	c := CollectConfig{}.withDefaults()
	if c.Pages != 600 || c.PageLatency != 100*time.Millisecond || c.FailureRate != 0.02 || c.Source != "source" {
		t.Fatalf("collect defaults %+v", c)
	}
	if c := (CollectConfig{PageLatency: Off, FailureRate: Off, Source: "a:b"}).withDefaults(); c.PageLatency != 0 || c.FailureRate != 0 || c.Source != "a-b" {
		t.Fatalf("collect with Off %+v", c)
	}
	if f := (FlakyConfig{}).withDefaults(); f.Items != 200 || f.ItemLatency != 100*time.Millisecond {
		t.Fatalf("flaky defaults %+v", f)
	}
	s := SettlementConfig{}.withDefaults()
	if s.Accounts != 300 || len(s.StopConditions) == 0 {
		t.Fatalf("settlement defaults %+v", s)
	}
	for _, sc := range s.StopConditions {
		if sc.MinCalls < 100 {
			t.Fatalf("stop condition %q judges after %d calls, want at least 100", sc.Name, sc.MinCalls)
		}
	}
	if s := (SettlementConfig{StopConditions: []runner.StopCondition{}}).withDefaults(); len(s.StopConditions) != 0 {
		t.Fatalf("an empty slice must disable stop conditions, got %v", s.StopConditions)
	}
	p := ProviderConfig{}.withDefaults()
	if p.Latency != 120*time.Millisecond || p.ServerErrorRate+p.ThrottleRate+p.TimeoutAfterApplyRate >= 0.05 {
		t.Fatalf("provider defaults %+v fail 5%% or more of calls downstream", p)
	}
	if p := (ProviderConfig{ServerErrorRate: 3, RejectRate: Off}).withDefaults(); p.ServerErrorRate != 1 || p.RejectRate != 0 {
		t.Fatalf("provider rates not clamped or turned off: %+v", p)
	}
}
