package schedule_test

import (
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/schedule"
)

// FuzzParse: any input either parses into a schedule whose next fire is later than
// the time asked about, or is refused with INVALID_CRON / INVALID_TIMEZONE — never a panic,
// never another error. Across a daylight-saving transition its fires still only move forward.
func FuzzParse(f *testing.F) {
	for _, seed := range []struct{ spec, tz string }{
		{"0 0 4 * * *", "Asia/Seoul"}, {"*/5 * * * *", ""}, {"@daily", "UTC"}, {"@every 90s", ""},
		{"0 0 30 2 *", ""}, {"61 * * * *", ""}, {"* * * * * * *", ""}, {"", ""}, {"@reboot", ""},
		{"0 0 * * MON-FRI", "America/New_York"}, {"0 0 1 1 *", "Local"}, {"CRON_TZ=UTC 0 0 * * *", ""},
		{"0 0 4 * * *", "../etc/passwd"}, {"1-5/0 * * * *", ""}, {"@every -1s", ""},
		{"30 1 * * *", "America/New_York"}, {"*/20 2 * * *", "Europe/Berlin"}, {"15 2 * * *", "Australia/Lord_Howe"},
	} {
		f.Add(seed.spec, seed.tz)
	}
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fallBack := time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC) // New York's clocks go back at 06:00 UTC
	f.Fuzz(func(t *testing.T, spec, tz string) {
		s, err := schedule.Parse(spec, tz)
		if err != nil {
			if c := bt.CodeOf(err); c != bt.CodeInvalidCron && c != bt.CodeInvalidTimezone {
				t.Fatalf("Parse(%q, %q): error %v has code %q", spec, tz, err, c)
			}
			return
		}
		next := s.Next(base)
		if !next.After(base) {
			t.Fatalf("Parse(%q, %q) accepted, but Next(%s) = %s", spec, tz, base, next)
		}
		prev := fallBack
		for _, n := range s.NextN(fallBack, 5) {
			if !n.After(prev) {
				t.Fatalf("Parse(%q, %q): fire %s after %s", spec, tz, n, prev)
			}
			prev = n
		}
	})
}
