// Package schedule parses cron schedules, computes their fires across daylight saving time,
// and runs the scheduler loop that claims due fires (woken by PostgreSQL NOTIFY).
package schedule

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	bt "github.com/baton-run/baton/runner/batontype"
)

// cronParser accepts five fields, six fields with seconds first (like "0 0 4 * * *"), and
// descriptors such as @daily and @every 1h.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// everyHour is the hour-field bit set that names all 24 hours.
const everyHour = 1<<24 - 1

// Schedule is a parsed cron expression in a timezone.
//
// Its fires follow the local wall clock the way Vixie cron and Quartz do across daylight
// saving time (docs/architecture.md, "Schedules and daylight saving time"):
//
//   - Fixed-time schedules (the hour field names some hours but not all 24; @daily, @weekly,
//     @monthly, @yearly) fire once per matching wall-clock time. A wall time that occurs twice
//     (fall back) fires at its first occurrence only. A wall time that does not occur (spring
//     forward) fires at the first instant after the gap, on that day; several such wall times
//     in one gap fire once, together.
//   - Every-hour schedules (the hour field names all 24 hours: '*', '0-23', '*/1'; @hourly)
//     fire at every real instant whose wall-clock reading matches: twice in a repeated hour,
//     not at all in a skipped one.
//   - @every d fires every d of elapsed time; the zone plays no part.
//
// Every path that needs a fire time (the scheduler's next fire and missed fires, cronPreview,
// Job.nextFireTimes) calls Next, so what is shown is what fires.
type Schedule struct {
	spec string
	loc  *time.Location
	// wall is the parsed spec evaluated on naive wall-clock times (UTC stands in for a zone
	// without transitions); nil for @every, which is delegated to every.
	wall  *cron.SpecSchedule
	fixed bool
	every cron.Schedule
}

// Parse validates spec and tz. Errors are coded INVALID_CRON or INVALID_TIMEZONE.
func Parse(spec, tz string) (*Schedule, error) {
	loc, err := LoadLocation(tz)
	if err != nil {
		return nil, err
	}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, &bt.Error{Code: bt.CodeInvalidCron, Message: "cron expression is empty", Field: "cron"}
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, &bt.Error{Code: bt.CodeInvalidCron, Message: "set the timezone in its own field, not in the cron expression", Field: "cron"}
	}
	if len(spec) > 200 {
		return nil, &bt.Error{Code: bt.CodeInvalidCron, Message: "cron expression is longer than 200 characters", Field: "cron"}
	}
	if err := checkEvery(spec); err != nil {
		return nil, err
	}
	parsed, err := cronParser.Parse(spec)
	if err != nil {
		return nil, &bt.Error{Code: bt.CodeInvalidCron, Message: "invalid cron expression " + quote(spec) + ": " + err.Error(), Field: "cron"}
	}
	s := &Schedule{spec: spec, loc: loc}
	if ss, ok := parsed.(*cron.SpecSchedule); ok {
		// A copy evaluated in UTC: its Next walks wall-clock fields with no transition in the
		// way, and the zone is applied afterwards by this package's rules.
		w := *ss
		w.Location = time.UTC
		s.wall = &w
		s.fixed = w.Hour&everyHour != everyHour
	} else {
		s.every = parsed
	}
	// A schedule that never fires (e.g. 30 February) is as good as invalid.
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
		return nil, &bt.Error{Code: bt.CodeInvalidCron, Message: "cron expression " + quote(spec) + " never fires", Field: "cron"}
	}
	return s, nil
}

// MinEvery and MaxEvery bound the interval of an @every schedule.
const (
	MinEvery = time.Second
	MaxEvery = 8760 * time.Hour
)

// checkEvery refuses an @every interval the cron library would silently change: it rounds
// anything under a second up to one (so @every 0s, @every -5s and @every 500ms all fire every
// second) and drops fractions of a second. The interval must be a whole number of seconds from
// MinEvery to MaxEvery.
func checkEvery(spec string) error {
	rest, ok := strings.CutPrefix(spec, "@every ")
	if !ok {
		return nil
	}
	rest = strings.TrimSpace(rest)
	d, err := time.ParseDuration(rest)
	if err != nil {
		return &bt.Error{Code: bt.CodeInvalidCron, Field: "cron",
			Message: "cron " + quote(spec) + ": the @every interval is not a duration; write one such as 90s, 10m or 1h30m, a whole number of seconds from 1s to 8760h"}
	}
	if d < MinEvery || d > MaxEvery || d%time.Second != 0 {
		return &bt.Error{Code: bt.CodeInvalidCron, Field: "cron",
			Message: "cron " + quote(spec) + ": the @every interval is out of range; it must be a whole number of seconds from 1s to 8760h"}
	}
	return nil
}

func quote(s string) string { return "\"" + s + "\"" }

// LoadLocation resolves a job's timezone; "" is UTC. "Local" is refused: it is each host's
// own zone, so instances of one cluster would fire the same job at different instants.
func LoadLocation(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if strings.EqualFold(tz, "Local") {
		return nil, &bt.Error{Code: bt.CodeInvalidTimezone, Field: "timezone",
			Message: `timezone "Local" is refused: it is each host's own zone; name a zone like "Europe/Berlin" or "UTC"`}
	}
	if len(tz) > 64 || strings.Contains(tz, "..") {
		return nil, &bt.Error{Code: bt.CodeInvalidTimezone, Message: "unknown timezone " + quote(tz), Field: "timezone"}
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, &bt.Error{Code: bt.CodeInvalidTimezone, Message: "unknown timezone " + quote(tz), Field: "timezone"}
	}
	return loc, nil
}

// maxZonePeriods bounds the zone periods Next walks through looking for a fire: a spec that
// matches nothing for years gives up like robfig's Next does (zero time).
const maxZonePeriods = 64

// Next returns the first fire strictly after t, in the schedule's zone; zero if none within
// about five years.
func (s *Schedule) Next(t time.Time) time.Time {
	if s.every != nil {
		return s.every.Next(t.In(s.loc))
	}
	var next time.Time
	if s.fixed {
		next = s.nextFixed(t)
	} else {
		next = s.nextEveryHour(t)
	}
	if next.IsZero() {
		return next
	}
	return next.In(s.loc)
}

// wallOf is the local wall-clock reading of instant i, as a UTC time with the same fields.
func (s *Schedule) wallOf(i time.Time) time.Time {
	_, off := i.In(s.loc).Zone()
	return i.UTC().Add(time.Duration(off) * time.Second)
}

// nextEveryHour is the first instant after t whose wall-clock reading matches. Within one zone
// period (constant offset) wall time is instant plus offset, so each period is searched with
// the naive schedule and the search moves to the next period when the match falls beyond it.
func (s *Schedule) nextEveryHour(t time.Time) time.Time {
	from := t // the answer is strictly after from
	for range maxZonePeriods {
		in := from.Add(time.Nanosecond).In(s.loc) // the period the answer starts in
		_, off := in.Zone()
		offset := time.Duration(off) * time.Second
		w := s.wall.Next(from.UTC().Add(offset))
		if w.IsZero() {
			return w
		}
		i := w.Add(-offset)
		_, end := in.ZoneBounds()
		if end.IsZero() || i.Before(end) {
			return i
		}
		from = end.Add(-time.Nanosecond)
	}
	return time.Time{}
}

// nextFixed is the first fire after t of a fixed-time schedule: the smallest matching wall
// time w whose instant (firstAt) is after t. firstAt never decreases as w grows, and is at or
// before t for every w up to t's own reading, so the search starts just after it; only when t
// is in the second pass of a repeated hour are walls already read skipped.
func (s *Schedule) nextFixed(t time.Time) time.Time {
	w := s.wall.Next(s.wallOf(t))
	jumped := false
	for range 100000 {
		if w.IsZero() {
			return w
		}
		i := s.firstAt(w)
		if i.After(t) {
			return i
		}
		if !jumped {
			// t is after a fall back that repeated w: skip to the first wall time the clock
			// had not reached before it went back.
			jumped = true
			if start, _ := t.In(s.loc).ZoneBounds(); !start.IsZero() {
				_, prevOff := start.Add(-time.Nanosecond).In(s.loc).Zone()
				if reached := start.UTC().Add(time.Duration(prevOff) * time.Second); reached.After(w) {
					w = s.wall.Next(reached.Add(-time.Nanosecond))
					continue
				}
			}
		}
		w = s.wall.Next(w)
	}
	return time.Time{}
}

// firstAt is the first instant whose wall-clock reading is at or after wall time w: w's first
// occurrence if the clock shows it (once, or twice in a fall back), else the end of the gap
// that skips it (a spring forward).
func (s *Schedule) firstAt(w time.Time) time.Time {
	y, mo, d := w.Date()
	h, mi, sec := w.Clock()
	guess := time.Date(y, mo, d, h, mi, sec, 0, s.loc)
	start, end := guess.ZoneBounds()
	// w can only be read in the period of guess or one next to it.
	periods := []time.Time{guess}
	if !start.IsZero() {
		periods = append(periods, start.Add(-time.Nanosecond))
	}
	if !end.IsZero() {
		periods = append(periods, end)
	}
	var first time.Time
	for _, p := range periods {
		_, off := p.Zone()
		i := w.Add(-time.Duration(off) * time.Second)
		if s.wallOf(i).Equal(w) && (first.IsZero() || i.Before(first)) {
			first = i
		}
	}
	if !first.IsZero() {
		return first
	}
	// Skipped: the gap is the transition next to guess on the side where w lies.
	if s.wallOf(guess).After(w) {
		return start
	}
	return end
}

// NextN returns the next n fires after t.
func (s *Schedule) NextN(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for range n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Location returns the schedule's timezone.
func (s *Schedule) Location() *time.Location { return s.loc }
