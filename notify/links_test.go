package notify_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-run/baton/notify"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestEveryMessageLinksTheConsole: with a ConsoleURL, the webhook, Slack and PagerDuty
// messages of a trigger each carry the deepest console page of the alarm — its target's, its
// run's, its job's, else the alarms page — and the alarms page; without one, none.
func TestEveryMessageLinksTheConsole(t *testing.T) {
	t.Parallel()
	bodies := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- string(b)
	}))
	defer srv.Close()
	run, target := int64(42), "customer/7 a"
	const console = "https://baton.example.com/admin"
	cases := []struct {
		alert bt.AlertPayload
		want  string
	}{
		{bt.AlertPayload{Kind: "AMBIGUOUS_EFFECT", JobName: "pay out", RunID: &run, Target: &target}, console + "/jobs/pay%20out/targets/customer%2F7%20a"},
		{bt.AlertPayload{Kind: "HEARTBEAT_MISSED", JobName: "sync", RunID: &run}, console + "/runs/42"},
		{bt.AlertPayload{Kind: "AUTO_RESUME_EXHAUSTED", JobName: "sync"}, console + "/jobs/sync"},
		{bt.AlertPayload{Kind: "DOWNSTREAM_LIMIT_DEGRADED"}, console + "/alerts"},
	}
	channels := []bt.NotificationMessage{
		{Channel: bt.NotificationChannel{Kind: bt.ChannelWebhook, URL: srv.URL}, Secret: "s"},
		{Channel: bt.NotificationChannel{Kind: bt.ChannelSlack}, Secret: srv.URL},
		{Channel: bt.NotificationChannel{Kind: bt.ChannelPagerDuty, URL: srv.URL}, Secret: "rk"},
	}
	for _, base := range []string{console, ""} {
		s := &notify.Sender{ConsoleURL: base, AllowPrivateNetworks: true}
		for _, ch := range channels {
			for _, c := range cases {
				m := ch
				m.Kind, m.Alert = bt.NotifyTrigger, c.alert
				m.Alert.Key, m.Alert.Severity = string(c.alert.Kind)+":x", "CRITICAL"
				if err := s.Send(context.Background(), m); err != nil {
					t.Fatalf("send %s: %v", ch.Channel.Kind, err)
				}
				body := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(<-bodies)
				switch {
				case base == "" && strings.Contains(body, "baton.example.com"):
					t.Errorf("%s, %s, no console URL: a link in %s", ch.Channel.Kind, c.alert.Kind, body)
				case base != "" && (!strings.Contains(body, `"`+c.want+`"`) && !strings.Contains(body, "<"+c.want+"|") ||
					!strings.Contains(body, console+"/alerts")):
					t.Errorf("%s, %s: %s lacks the link %s or the alarms page", ch.Channel.Kind, c.alert.Kind, body, c.want)
				}
			}
		}
	}
}
