package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/postgres"
)

// TestScheduleState checks what one scheduler pass reads: due jobs and jobs without a next
// fire (never manual, disabled or paused ones, nor jobs due later), the earliest future fire,
// and that SetNextFires sets only next fires still unset and computed from the current cron.
func TestScheduleState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Postgres(t)
	s := postgres.New(pool)
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
	n, err := s.SetNextFires(ctx, []postgres.NextFire{
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
