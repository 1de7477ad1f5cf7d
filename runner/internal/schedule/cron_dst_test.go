package schedule_test

import (
	"strings"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/schedule"
)

func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UTC()
}

// TestScheduleDST walks schedules through the 2026 and 2027 daylight-saving transitions of
// three zones (Lord Howe shifts by 30 minutes) and asserts every fire as a UTC instant:
//   - a fixed-time fire in a repeated local hour fires once, at the first occurrence;
//   - a fixed-time fire in a skipped local hour fires at the first instant after the gap;
//   - a schedule whose hour field names every hour fires at every real instant it names.
//
// The transition instants (UTC): New York 2026-03-08 07:00 and 2026-11-01 06:00, 2027-03-14
// 07:00 and 2027-11-07 06:00; Berlin 2026-03-29 01:00 and 2026-10-25 01:00, 2027-03-28 01:00
// and 2027-10-31 01:00; Lord Howe 2026-04-04 15:00 (02:00 +11 back to 01:30 +1030) and
// 2026-10-03 15:30 (02:00 +1030 on to 02:30 +11), 2027-04-03 15:00 and 2027-10-02 15:30.
func TestScheduleDST(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, spec, tz, from string
		want                 []string
	}{
		// America/New_York, 2026.
		{"NY fall back fixed 5f", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"NY fall back fixed 6f", "0 30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"NY fall back fixed asked in the repeat", "45 1 * * *", "America/New_York", "2026-11-01T06:10:00Z",
			[]string{"2026-11-02T06:45:00Z"}},
		{"NY fall back fixed every minute of the hour", "59 1 * * *", "America/New_York", "2026-11-01T05:58:00Z",
			[]string{"2026-11-01T05:59:00Z", "2026-11-02T06:59:00Z"}},
		{"NY fall back wildcard hour", "30 * * * *", "America/New_York", "2026-11-01T04:00:00Z",
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		{"NY fall back wildcard asked in the repeat", "0 30 * * * *", "America/New_York", "2026-11-01T06:00:00Z",
			[]string{"2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		{"NY fall back @hourly", "@hourly", "America/New_York", "2026-11-01T03:30:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"NY fall back every hour as a range", "0 0-23 * * *", "America/New_York", "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"NY spring forward fixed 5f", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"NY spring forward fixed 6f", "0 0 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"}},
		{"NY spring forward several fires in the gap fire once", "*/20 2 * * *", "America/New_York", "2026-03-08T06:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:20:00Z", "2026-03-09T06:40:00Z"}},
		{"NY spring forward hour step", "0 */2 * * *", "America/New_York", "2026-03-08T04:30:00Z",
			[]string{"2026-03-08T05:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"NY spring forward wildcard hour", "0 30 * * * *", "America/New_York", "2026-03-08T05:00:00Z",
			[]string{"2026-03-08T05:30:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:30:00Z"}},
		// America/New_York, 2027.
		{"NY 2027 fall back fixed", "30 1 * * *", "America/New_York", "2027-11-06T12:00:00Z",
			[]string{"2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"}},
		{"NY 2027 spring forward fixed 6f", "0 30 2 * * *", "America/New_York", "2027-03-13T12:00:00Z",
			[]string{"2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"}},
		{"NY 2027 fall back wildcard 6f", "0 0 * * * *", "America/New_York", "2027-11-07T04:30:00Z",
			[]string{"2027-11-07T05:00:00Z", "2027-11-07T06:00:00Z", "2027-11-07T07:00:00Z"}},
		{"NY 2027 spring forward wildcard", "15 * * * *", "America/New_York", "2027-03-14T06:00:00Z",
			[]string{"2027-03-14T06:15:00Z", "2027-03-14T07:15:00Z"}},

		// Europe/Berlin, 2026.
		{"Berlin spring forward fixed", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Berlin fall back fixed", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Berlin fall back wildcard 6f", "0 30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}},
		{"Berlin spring forward wildcard", "30 * * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"}},
		// Europe/Berlin, 2027.
		{"Berlin 2027 spring forward fixed 6f", "0 15 2 * * *", "Europe/Berlin", "2027-03-27T12:00:00Z",
			[]string{"2027-03-28T01:00:00Z", "2027-03-29T00:15:00Z"}},
		{"Berlin 2027 fall back fixed 6f", "0 15 2 * * *", "Europe/Berlin", "2027-10-30T12:00:00Z",
			[]string{"2027-10-31T00:15:00Z", "2027-11-01T01:15:00Z"}},
		{"Berlin 2027 fall back wildcard", "15 * * * *", "Europe/Berlin", "2027-10-31T00:00:00Z",
			[]string{"2027-10-31T00:15:00Z", "2027-10-31T01:15:00Z", "2027-10-31T02:15:00Z"}},

		// Australia/Lord_Howe, 2026: back by 30 minutes in April, on by 30 in October.
		{"Lord Howe fall back fixed", "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z",
			[]string{"2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
		{"Lord Howe fall back wildcard", "0,45 * * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z",
			[]string{"2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:15:00Z"}},
		{"Lord Howe spring forward fixed in the gap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
			[]string{"2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
		{"Lord Howe spring forward fixed after the gap", "45 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
			[]string{"2026-10-03T15:45:00Z", "2026-10-04T15:45:00Z"}},
		{"Lord Howe spring forward gap fire and the hour's next", "15,45 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
			[]string{"2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z", "2026-10-04T15:15:00Z", "2026-10-04T15:45:00Z"}},
		{"Lord Howe spring forward wildcard", "0 * * * *", "Australia/Lord_Howe", "2026-10-03T14:00:00Z",
			[]string{"2026-10-03T14:30:00Z", "2026-10-03T16:00:00Z", "2026-10-03T17:00:00Z"}},
		// Australia/Lord_Howe, 2027.
		{"Lord Howe 2027 fall back fixed 6f", "0 40 1 * * *", "Australia/Lord_Howe", "2027-04-03T00:00:00Z",
			[]string{"2027-04-03T14:40:00Z", "2027-04-04T15:10:00Z"}},
		{"Lord Howe 2027 spring forward fixed 6f", "0 10 2 * * *", "Australia/Lord_Howe", "2027-10-02T00:00:00Z",
			[]string{"2027-10-02T15:30:00Z", "2027-10-03T15:10:00Z"}},
		{"Lord Howe 2027 fall back wildcard 6f", "0 40 * * * *", "Australia/Lord_Howe", "2027-04-03T14:00:00Z",
			[]string{"2027-04-03T14:40:00Z", "2027-04-03T15:10:00Z", "2027-04-03T16:10:00Z"}},
		{"Lord Howe 2027 spring forward wildcard", "30 * * * *", "Australia/Lord_Howe", "2027-10-02T14:00:00Z",
			[]string{"2027-10-02T15:00:00Z", "2027-10-02T15:30:00Z", "2027-10-02T16:30:00Z"}},

		// @every counts elapsed time; the zone plays no part.
		{"@every across fall back", "@every 1h", "America/New_York", "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		// A day with no transition is untouched.
		{"plain day", "0 4 * * *", "Europe/Berlin", "2026-06-01T00:00:00Z",
			[]string{"2026-06-01T02:00:00Z", "2026-06-02T02:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := schedule.Parse(c.spec, c.tz)
			if err != nil {
				t.Fatal(err)
			}
			from := utc(t, c.from)
			got := s.NextN(from, len(c.want))
			var gotS []string
			for _, g := range got {
				gotS = append(gotS, g.UTC().Format(time.RFC3339))
			}
			if strings.Join(gotS, " ") != strings.Join(c.want, " ") {
				t.Fatalf("%q in %s after %s:\n got  %v\n want %v", c.spec, c.tz, c.from, gotS, c.want)
			}
			// Next one by one agrees with NextN, and every fire is strictly later than the last.
			prev := from
			for i, w := range c.want {
				n := s.Next(prev)
				if !n.Equal(utc(t, w)) {
					t.Fatalf("Next #%d after %s = %s, want %s", i, prev.UTC().Format(time.RFC3339), n.UTC().Format(time.RFC3339), w)
				}
				prev = n
			}
		})
	}
}

// TestScheduleNeverRepeatsAnInstant: over two whole years in each zone, a fixed-time daily
// schedule fires exactly once per local day (in the hours that DST repeats or skips too), and
// no schedule's fires go backwards or repeat.
func TestScheduleNeverRepeatsAnInstant(t *testing.T) {
	t.Parallel()
	for _, tz := range []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe"} {
		for _, spec := range []string{"30 1 * * *", "15 2 * * *", "0 45 2 * * *", "*/30 * * * *"} {
			s, err := schedule.Parse(spec, tz)
			if err != nil {
				t.Fatal(err)
			}
			loc := s.Location()
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			until := time.Date(2028, 1, 1, 0, 0, 0, 0, loc)
			days := map[string]int{}
			prev := from
			for n := s.Next(from); n.Before(until); n = s.Next(n) {
				if !n.After(prev) {
					t.Fatalf("%q in %s: fire %s after %s", spec, tz, n, prev)
				}
				prev = n
				days[n.In(loc).Format(time.DateOnly)]++
			}
			if spec == "*/30 * * * *" {
				continue
			}
			if len(days) != 730 {
				t.Fatalf("%q in %s fired on %d local days of 2026-2027, want 730", spec, tz, len(days))
			}
			for d, k := range days {
				if k != 1 {
					t.Fatalf("%q in %s fired %d times on %s", spec, tz, k, d)
				}
			}
		}
	}
}

// TestLocalTimezoneRefused: "Local" is the host's zone, which differs between instances, so
// it is refused with INVALID_TIMEZONE and a message naming what to use instead.
func TestLocalTimezoneRefused(t *testing.T) {
	t.Parallel()
	for _, tz := range []string{"Local", "local"} {
		_, err := schedule.Parse("0 4 * * *", tz)
		if bt.CodeOf(err) != bt.CodeInvalidTimezone {
			t.Fatalf("Parse with zone %q: %v, want INVALID_TIMEZONE", tz, err)
		}
		if !strings.Contains(err.Error(), `"Europe/Berlin"`) || !strings.Contains(err.Error(), `"UTC"`) {
			t.Fatalf("message %q does not say to name a zone", err)
		}
	}
	if s, err := schedule.Parse("0 4 * * *", ""); err != nil || s.Location() != time.UTC {
		t.Fatalf("empty zone: %v, %v; want UTC", s, err)
	}
}

// TestScheduleMatchesMinuteByMinute checks Next against the rules stated directly, walking
// every minute of the days around each 2026 and 2027 transition: a fixed-time schedule fires
// at instant i when some matching wall time lies between the latest reading the clock had
// shown before i (exclusive) and i's own reading (inclusive); an every-hour schedule fires at
// i when i's reading matches.
func TestScheduleMatchesMinuteByMinute(t *testing.T) {
	t.Parallel()
	specs := []string{"30 1 * * *", "15 2 * * *", "*/20 2 * * *", "0 1-3 * * *", "45 */2 * * *",
		"0 0 2 * * *", "*/15 * * * *", "0 * * * *", "@hourly", "@daily", "59 1,2 * * *", "* 2 * * *"}
	for _, tz := range []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe"} {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range specs {
			s, err := schedule.Parse(spec, tz)
			if err != nil {
				t.Fatal(err)
			}
			naive, err := schedule.Parse(spec, "UTC")
			if err != nil {
				t.Fatal(err)
			}
			wallOf := func(i time.Time) time.Time {
				_, off := i.In(loc).Zone()
				return i.UTC().Add(time.Duration(off) * time.Second)
			}
			everyHour := spec == "*/15 * * * *" || spec == "0 * * * *" || spec == "@hourly"
			for at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); at.Year() < 2028; {
				_, end := at.In(loc).ZoneBounds()
				from, until := end.Add(-36*time.Hour), end.Add(36*time.Hour)
				var want []string
				reached := wallOf(from)
				for i := from.Add(time.Minute); !i.After(until); i = i.Add(time.Minute) {
					w := wallOf(i)
					var fires bool
					if everyHour {
						fires = naive.Next(w.Add(-time.Second)).Equal(w)
					} else {
						fires = w.After(reached) && !naive.Next(reached).After(w)
					}
					if fires {
						want = append(want, i.UTC().Format(time.RFC3339))
					}
					if w.After(reached) {
						reached = w
					}
				}
				var got []string
				for n := s.Next(from); !n.After(until); n = s.Next(n) {
					got = append(got, n.UTC().Format(time.RFC3339))
				}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("%q in %s around %s:\n got  %v\n want %v", spec, tz, end.UTC(), got, want)
				}
				at = end
			}
		}
	}
}
