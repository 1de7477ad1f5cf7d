package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

const doubtAlarm = "AMBIGUOUS_EFFECT:job:doubt"

// activeAlarm returns the active alarm id as r reports it, or nil.
func activeAlarm(t *testing.T, r *runner.Runner, id string) *bt.Alert {
	t.Helper()
	alerts, err := r.Alarms().Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range alerts {
		if alerts[i].ID == id {
			return &alerts[i]
		}
	}
	return nil
}

// Two instances that see the same condition at once record one episode; an acknowledgement
// made on one is what the other shows; the episode resolves when the condition clears, and a
// new firing is a new episode.
func TestAlertHistoryIsClusterWide(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	doubt, _ := settleJob("doubt", "amb")
	one := b.runner(func(c *runner.Config) { c.Instance = "one" }, doubt)
	two := b.runner(func(c *runner.Config) { c.Instance = "two" }, doubt)

	b.succeed(one, runner.StartParams{Job: "doubt"})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		r := one
		if i%2 == 1 {
			r = two
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Alarms().Active(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := b.count(`SELECT count(*) FROM alert_history WHERE alert_key = $1`, doubtAlarm); n != 1 {
		t.Fatalf("%d episodes of %s after 20 concurrent checks on two instances, want 1", n, doubtAlarm)
	}

	acked, err := one.Alarms().Acknowledge(ctx, doubtAlarm, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if acked.AckedBy != "alice" || acked.AckedAt == nil {
		t.Fatalf("acknowledged alarm %+v, want acked by alice with a time", acked)
	}
	if _, err := two.Alarms().Acknowledge(ctx, doubtAlarm, "bob"); err != nil {
		t.Fatal(err)
	}
	seen := activeAlarm(t, two, doubtAlarm)
	if seen == nil || seen.AckedBy != "alice" || seen.EpisodeID != acked.EpisodeID {
		t.Fatalf("instance two shows %+v, want episode %d acknowledged by alice (the first acknowledgement stays)", seen, acked.EpisodeID)
	}

	if _, err := one.Ledger().ResolveAmbiguous(ctx, b.mustEntry("doubt", "amb").ID, runner.ResolveNotApplied, "", "provider has no record", "ops"); err != nil {
		t.Fatal(err)
	}
	if a := activeAlarm(t, two, doubtAlarm); a != nil {
		t.Fatalf("alarm still active after its condition cleared: %+v", a)
	}
	hist, err := one.Alarms().History(ctx, bt.AlertHistoryFilter{JobName: "doubt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].ResolvedAt == nil || hist[0].AckedBy != "alice" {
		t.Fatalf("history %+v, want one resolved episode acknowledged by alice", hist)
	}
	if _, err := one.Alarms().Acknowledge(ctx, doubtAlarm, "alice"); bt.CodeOf(err) != bt.CodeNotFound {
		t.Fatalf("acknowledging a resolved alarm: %v, want NOT_FOUND", err)
	}

	// The condition comes back: a new episode, not yet acknowledged.
	b.succeed(one, runner.StartParams{Job: "doubt", Mode: bt.ModeRestart})
	again := activeAlarm(t, two, doubtAlarm)
	if again == nil || again.EpisodeID == acked.EpisodeID || again.AckedBy != "" {
		t.Fatalf("after a new doubt: %+v, want a new unacknowledged episode", again)
	}
	if hist, _ = one.Alarms().History(ctx, bt.AlertHistoryFilter{JobName: "doubt"}); len(hist) != 2 || hist[0].ResolvedAt != nil || hist[1].ResolvedAt == nil {
		t.Fatalf("history %+v, want the new active episode first, then the resolved one", hist)
	}
	var audited int
	audited = b.count(`SELECT count(*) FROM audit_log WHERE action = 'acknowledgeAlert' AND target = $1`, "alert:"+doubtAlarm)
	if audited != 3 {
		t.Fatalf("%d audit rows of acknowledgeAlert, want 3 (two accepted, one refused)", audited)
	}
}

// A silence hides an alarm until its time passes by the database clock, and is the same on
// every instance; bad durations are refused and change nothing.
func TestAlertSilenceLastsItsDuration(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	doubt, _ := settleJob("doubt", "amb")
	one := b.runner(func(c *runner.Config) { c.Instance = "one" }, doubt)
	two := b.runner(func(c *runner.Config) { c.Instance = "two" }, doubt)
	b.succeed(one, runner.StartParams{Job: "doubt"})
	if activeAlarm(t, one, doubtAlarm) == nil {
		t.Fatal("no ambiguous alarm to silence")
	}

	for _, d := range []time.Duration{-time.Second, time.Millisecond, runner.MaxAlertSilence + time.Second} {
		if _, err := one.Alarms().Silence(ctx, doubtAlarm, d, "alice", ""); bt.CodeOf(err) != bt.CodeInvalidInput {
			t.Fatalf("silence for %s: %v, want INVALID_INPUT", d, err)
		}
	}
	if _, err := one.Alarms().Silence(ctx, "AMBIGUOUS_EFFECT:job:nope", time.Hour, "alice", ""); bt.CodeOf(err) != bt.CodeNotFound {
		t.Fatalf("silence of an alarm that is not active: %v, want NOT_FOUND", err)
	}
	if n := b.count(`SELECT count(*) FROM alert_silences`); n != 0 {
		t.Fatalf("%d silences after refused requests, want 0", n)
	}

	// A long silence, then lifted: the alarm is back at once.
	s, err := one.Alarms().Silence(ctx, doubtAlarm, time.Hour, "alice", "known provider outage")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Silenced() || s.SilencedBy != "alice" {
		t.Fatalf("silenced alarm %+v, want silenced by alice", s)
	}
	if a := activeAlarm(t, two, doubtAlarm); a == nil || !a.Silenced() {
		t.Fatalf("instance two shows %+v, want the alarm silenced", a)
	}
	if _, err := two.Alarms().Silence(ctx, doubtAlarm, 0, "bob", ""); err != nil {
		t.Fatal(err)
	}
	if a := activeAlarm(t, one, doubtAlarm); a == nil || a.Silenced() {
		t.Fatalf("after lifting the silence: %+v, want the alarm active and not silenced", a)
	}

	// A short silence ends by itself.
	if _, err := one.Alarms().Silence(ctx, doubtAlarm, time.Second, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if a := activeAlarm(t, two, doubtAlarm); a == nil || !a.Silenced() {
		t.Fatalf("right after a 1s silence: %+v, want silenced", a)
	}
	testenv.Eventually(t, 15*time.Second, "the 1s silence to end", func() bool {
		a := activeAlarm(t, two, doubtAlarm)
		return a != nil && !a.Silenced()
	})
	if n := b.count(`SELECT count(*) FROM alert_history WHERE alert_key = $1`, doubtAlarm); n != 1 {
		t.Fatalf("%d episodes, want 1: a silence does not end the episode", n)
	}
}
