package schedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/schedule"
)

// An @every interval under a second, zero, negative or with a fraction of a second is refused
// with INVALID_CRON naming the field and the allowed range: the cron library would round it
// to a second and fire every second.
func TestEveryIntervalIsRefusedOutOfRange(t *testing.T) {
	for _, spec := range []string{"@every 0s", "@every -5s", "@every 1ms", "@every 500ms", "@every 1.5s",
		"@every 1ns", "@every 8761h", "@every 0", "@every soon"} {
		_, err := schedule.Parse(spec, "")
		var be *bt.Error
		if !errors.As(err, &be) || be.Code != bt.CodeInvalidCron || be.Field != "cron" || !strings.Contains(be.Message, "1s to 8760h") {
			t.Errorf("Parse(%q) = %v; want INVALID_CRON on field cron naming 1s to 8760h", spec, err)
		}
	}
	for _, tc := range []struct {
		spec string
		gap  time.Duration
	}{{"@every 1s", time.Second}, {"@every 90s", 90 * time.Second}, {"@every 1h30m", 90 * time.Minute}, {"@every 8760h", 8760 * time.Hour}} {
		s, err := schedule.Parse(tc.spec, "")
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if got := s.Next(at).Sub(at); got != tc.gap {
			t.Errorf("%s fires %s after, want %s", tc.spec, got, tc.gap)
		}
	}
}
