package notify

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	bt "github.com/baton-run/baton/runner/batontype"
)

// title is one line saying what happened to the alarm.
func title(m bt.NotificationMessage) string {
	a := m.Alert
	switch m.Kind {
	case bt.NotifyResolve:
		return fmt.Sprintf("RESOLVED %s %s", a.Kind, subject(a))
	case bt.NotifyTest:
		return "Baton test notification to " + m.Channel.Name
	}
	return fmt.Sprintf("%s %s %s", a.Severity, a.Kind, subject(a))
}

func subject(a bt.AlertPayload) string {
	switch {
	case a.RunID != nil:
		return fmt.Sprintf("(job %s, run %d)", a.JobName, *a.RunID)
	case a.JobName != "":
		return fmt.Sprintf("(job %s)", a.JobName)
	}
	return ""
}

// Link is a page of the console about an alarm: the deepest there is — its target's, else its
// run's, else its job's — and the alarms page.
type Link struct {
	// Page is the target's, run's or job's page, or the alarms page for an alarm of none.
	Page string `json:"page"`
	// What names the page: "target", "run", "job" or "alarms".
	What string `json:"what"`
	// Alerts is the console's alarms page.
	Alerts string `json:"alerts"`
}

// ConsoleLink returns the links of a's pages in the console at consoleURL (the console's
// base, such as https://baton.example.com/admin), or nil when consoleURL is "".
func ConsoleLink(consoleURL string, a bt.AlertPayload) *Link {
	if consoleURL == "" {
		return nil
	}
	base := strings.TrimRight(consoleURL, "/")
	l := &Link{Page: base + "/alerts", What: "alarms", Alerts: base + "/alerts"}
	job := url.PathEscape(a.JobName)
	switch {
	case a.Target != nil && a.JobName != "":
		l.Page, l.What = base+"/jobs/"+job+"/targets/"+url.PathEscape(*a.Target), "target"
	case a.RunID != nil:
		l.Page, l.What = base+"/runs/"+strconv.FormatInt(*a.RunID, 10), "run"
	case a.JobName != "":
		l.Page, l.What = base+"/jobs/"+job, "job"
	}
	return l
}

// SlackMessage is the body posted to a Slack-compatible incoming webhook: text for
// notifications and clients without blocks, and the same in blocks.
func SlackMessage(m bt.NotificationMessage, consoleURL string) map[string]any {
	emoji := ":rotating_light:"
	switch {
	case m.Kind == bt.NotifyResolve:
		emoji = ":white_check_mark:"
	case m.Kind == bt.NotifyTest:
		emoji = ":bell:"
	case m.Alert.Severity != string(bt.SeverityCritical):
		emoji = ":warning:"
	}
	head := emoji + " " + title(m)
	context := fmt.Sprintf("alarm `%s` · fired %s · %s", m.Alert.Key, m.Alert.FiredAt.UTC().Format("2006-01-02 15:04:05Z"), m.Source)
	if m.Alert.ResolvedAt != nil {
		context += " · resolved " + m.Alert.ResolvedAt.UTC().Format("2006-01-02 15:04:05Z")
	}
	if l := ConsoleLink(consoleURL, m.Alert); l != nil {
		if l.What != "alarms" {
			context += fmt.Sprintf(" · <%s|%s in the console>", l.Page, l.What)
		}
		context += fmt.Sprintf(" · <%s|alarms>", l.Alerts)
	}
	return map[string]any{
		"text": head + ": " + m.Alert.Message,
		"blocks": []map[string]any{
			{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "*" + head + "*\n" + m.Alert.Message}},
			{"type": "context", "elements": []map[string]any{{"type": "mrkdwn", "text": context}}},
		},
	}
}

// PagerDutyEvent is the PagerDuty Events v2 body: a trigger (with its payload) or a resolve,
// whose dedup_key is the alarm's key, so the resolve closes the incident its trigger opened.
// A test is a trigger of severity info under a key of its own.
func PagerDutyEvent(m bt.NotificationMessage, consoleURL string) map[string]any {
	ev := map[string]any{"routing_key": m.Secret, "dedup_key": m.Alert.Key, "event_action": "trigger"}
	if m.Kind == bt.NotifyResolve {
		ev["event_action"] = "resolve"
		return ev
	}
	severity := strings.ToLower(m.Alert.Severity)
	if severity != "critical" && severity != "warning" && severity != "error" {
		severity = "warning"
	}
	if m.Kind == bt.NotifyTest {
		severity = "info"
		ev["dedup_key"] = fmt.Sprintf("%s:%d", m.Alert.Key, m.DeliveryID)
	}
	details := map[string]any{"alert_key": m.Alert.Key, "kind": m.Alert.Kind, "job": m.Alert.JobName, "value": m.Alert.Value,
		"since": m.Alert.Since, "fired_at": m.Alert.FiredAt, "message": m.Alert.Message}
	if m.Alert.RunID != nil {
		details["run_id"] = *m.Alert.RunID
	}
	ev["payload"] = map[string]any{"summary": bt.Truncate(title(m)+": "+m.Alert.Message, 1024), "severity": severity,
		"source": m.Source, "component": m.Alert.JobName, "group": string(m.Alert.Kind), "class": string(m.Alert.Kind),
		"timestamp": m.Alert.FiredAt, "custom_details": details}
	if l := ConsoleLink(consoleURL, m.Alert); l != nil {
		links := []map[string]any{{"href": l.Alerts, "text": "Baton alarms"}}
		if l.What != "alarms" {
			links = append([]map[string]any{{"href": l.Page, "text": "Baton: the " + l.What}}, links...)
		}
		ev["links"] = links
	}
	return ev
}
