package notify_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/baton-run/baton/notify"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"event":"alert.trigger"}`)
	sig := notify.Sign("k", ts, body)
	for _, tc := range []struct {
		name       string
		secret, ts string
		sig        string
		body       []byte
		at         time.Time
		want       error
	}{
		{"valid", "k", ts, sig, body, now, nil},
		{"valid among rotated keys", "k", ts, "v1=00," + sig, body, now.Add(4 * time.Minute), nil},
		{"tampered body", "k", ts, sig, []byte(`{"event":"alert.resolve"}`), now, notify.ErrBadSignature},
		{"other secret", "j", ts, sig, body, now, notify.ErrBadSignature},
		{"timestamp changed", "k", strconv.FormatInt(now.Unix()+1, 10), sig, body, now, notify.ErrBadSignature},
		{"stale", "k", ts, sig, body, now.Add(6 * time.Minute), notify.ErrStale},
		{"from the future", "k", ts, sig, body, now.Add(-6 * time.Minute), notify.ErrStale},
		{"no timestamp", "k", "", sig, body, now, notify.ErrStale},
	} {
		if got := notify.Verify(tc.secret, tc.ts, tc.sig, tc.body, tc.at, notify.DefaultTolerance); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPagerDutyResolveCarriesOnlyTheKey(t *testing.T) {
	t.Parallel()
	m := bt.NotificationMessage{Kind: bt.NotifyResolve, Secret: "rk", Alert: bt.AlertPayload{Key: "AMBIGUOUS_EFFECT:job:x"}}
	ev := notify.PagerDutyEvent(m, "")
	if ev["event_action"] != "resolve" || ev["dedup_key"] != m.Alert.Key || ev["routing_key"] != "rk" || ev["payload"] != nil {
		t.Fatalf("resolve event %v", ev)
	}
	m.Kind, m.Alert.Severity = bt.NotifyTrigger, "WARNING"
	ev = notify.PagerDutyEvent(m, "https://console.example")
	p, _ := ev["payload"].(map[string]any)
	if ev["event_action"] != "trigger" || p["severity"] != "warning" || ev["links"] == nil {
		t.Fatalf("trigger event %v", ev)
	}
}
