package runner

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	bt "github.com/baton-run/baton/runner/batontype"
)

// cronParser accepts five fields, six fields with seconds first (like "0 0 4 * * *"), and
// descriptors such as @daily and @every 1h.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a parsed cron expression in a timezone.
type Schedule struct {
	spec string
	loc  *time.Location
	s    cron.Schedule
}

// ParseSchedule validates spec and tz. Errors are coded INVALID_CRON or INVALID_TIMEZONE.
func ParseSchedule(spec, tz string) (*Schedule, error) {
	loc, err := loadLocation(tz)
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
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, &bt.Error{Code: bt.CodeInvalidCron, Message: "invalid cron expression " + quote(spec) + ": " + err.Error(), Field: "cron"}
	}
	// A schedule that never fires (e.g. 30 February) is as good as invalid.
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
		return nil, &bt.Error{Code: bt.CodeInvalidCron, Message: "cron expression " + quote(spec) + " never fires", Field: "cron"}
	}
	return &Schedule{spec: spec, loc: loc, s: s}, nil
}

func quote(s string) string { return "\"" + s + "\"" }

func loadLocation(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
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

// Next returns the first fire strictly after t.
func (s *Schedule) Next(t time.Time) time.Time { return s.s.Next(t.In(s.loc)) }

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
