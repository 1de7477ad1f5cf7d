package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// testScheduleState checks what one scheduler pass reads: due jobs and jobs without a next
// fire (never manual, disabled or paused ones, nor jobs due later), the earliest future fire,
// and that SetNextFires sets only next fires still unset and computed from the current cron.
func testScheduleState(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	pool := s.Pool
	if _, err := pool.Exec(ctx, `INSERT INTO job_settings (name, cron, enabled, paused, next_scheduled_at) VALUES
		('due', '* * * * *', true, false, now() - interval '1 minute'),
		('unset', '0 3 * * *', true, false, NULL),
		('later', '0 3 * * *', true, false, now() + interval '1 hour'),
		('soon', '0 3 * * *', true, false, now() + interval '5 minutes'),
		('manual', '', true, false, NULL),
		('disabled', '* * * * *', false, false, now() - interval '1 minute'),
		('paused', '* * * * *', true, true, NULL)`); err != nil {
		t.Fatal(err)
	}
	st, err := s.ScheduleState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, j := range st.Jobs {
		got[j.Name] = j.Next != nil
	}
	if len(got) != 2 || !got["due"] || got["unset"] {
		t.Fatalf("pass read %v, want due (with its fire) and unset (without)", got)
	}
	if st.Earliest == nil || st.Earliest.Sub(st.Now) < 4*time.Minute || st.Earliest.Sub(st.Now) > 6*time.Minute {
		t.Fatalf("earliest next fire %v, want the one in 5 minutes (now %v)", st.Earliest, st.Now)
	}

	at := st.Now.Add(time.Hour)
	n, err := s.SetNextFires(ctx, []store.NextFire{
		{Name: "unset", Cron: "0 3 * * *", Timezone: "UTC", At: at},
		{Name: "due", Cron: "* * * * *", Timezone: "UTC", At: at},    // already set: kept
		{Name: "paused", Cron: "0 1 * * *", Timezone: "UTC", At: at}, // computed from an old cron: refused
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("SetNextFires set %d next fires, want 1", n)
	}
}

// testOneRunPerScheduledFire: the database refuses a second run for a fire that already
// started one, even when the compare-and-set claim on next_scheduled_at let it through (a
// claim reset by hand, a stale next fire): the second insert fails with ErrFireTaken and
// leaves nothing behind — no run, no new generation.
func testOneRunPerScheduledFire(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	pool := s.Pool
	if err := s.EnsureJobs(ctx, []store.JobDefaults{{Name: "daily", Timezone: "America/New_York", RiskLevel: bt.RiskHigh, RetentionDays: 400}}); err != nil {
		t.Fatal(err)
	}
	due := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)
	fire := func(at time.Time, token string) (*bt.RunRecord, error) {
		return s.InsertRun(ctx, store.NewRun{JobName: "daily", Trigger: bt.TriggerScheduled, Mode: bt.ModeRestart,
			Actor: "scheduler", Instance: "t", Token: token, LeaseSeconds: 60, ScheduledFor: &at})
	}
	first, err := fire(due, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED', finished_at = now() WHERE id = $1`, first.ID); err != nil {
		t.Fatal(err)
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The same instant again, as a second claimant would after the claim was reset.
	again, err := fire(due, "b")
	if !errors.Is(err, store.ErrFireTaken) {
		t.Fatalf("second run for the fire of %s: run %+v, err %v; want ErrFireTaken", due, again, err)
	}
	if n := count(`SELECT count(*) FROM job_runs WHERE job_name = 'daily'`); n != 1 {
		t.Fatalf("%d runs after the refused insert, want 1", n)
	}
	if g := count(`SELECT current_generation FROM job_settings WHERE name = 'daily'`); int64(g) != first.Generation {
		t.Fatalf("current generation %d after the refused RESTART, want %d (the first run's)", g, first.Generation)
	}

	// The next instant, and runs not started by a fire, are not affected.
	next, err := fire(due.Add(25*time.Hour), "c")
	if err != nil {
		t.Fatalf("the next fire: %v", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED', finished_at = now() WHERE id = $1`, next.ID); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"d", "e"} {
		run, err := s.InsertRun(ctx, store.NewRun{JobName: "daily", Trigger: bt.TriggerManual, Mode: bt.ModeResume,
			Actor: "t", Instance: "t", Token: token, LeaseSeconds: 60})
		if err != nil {
			t.Fatalf("manual run: %v", err)
		}
		if _, err := pool.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED', finished_at = now() WHERE id = $1`, run.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(`SELECT count(*) FROM job_runs WHERE job_name = 'daily'`); n != 4 {
		t.Fatalf("%d runs, want 4 (two fires, two manual)", n)
	}
}
