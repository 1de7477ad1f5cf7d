package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/baton-run/baton/graph/model"
)

const seedDoubt = `
INSERT INTO job_settings (name) VALUES ('payouts');
INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds,
		lease_until, generation, finished_at, total, processed, succeeded, failed, ambiguous)
	VALUES ('payouts', 'SUCCEEDED', 'MANUAL', 'RESUME', 'seed', 'seed', 'tok', 30, now(), 1, now(), 1, 1, 0, 0, 1);
INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, external, run_id, last_error)
	VALUES ('payouts', 1, 'acct-1', 'send', 'TRANSIENT', 3, 'k1', true, (SELECT max(id) FROM job_runs), 'HTTP 503');`

type alertNode struct {
	ID, EpisodeID, JobName    string
	Active                    bool
	AcknowledgedBy            *string
	AcknowledgedAt            *string
	SilencedUntil, SilencedBy *string
}

const alertFieldsQ = `id episodeId jobName active acknowledgedBy acknowledgedAt silencedUntil silencedBy`

// Operators acknowledge and silence alarms over GraphQL; viewers may not; the alarm list hides
// silenced alarms unless asked, and the history lists the episode.
func TestAlertAcknowledgeAndSilenceOverGraphQL(t *testing.T) {
	b := setup(t)
	if _, err := b.Pool.Exec(context.Background(), seedDoubt); err != nil {
		t.Fatal(err)
	}
	i := b.instance(instanceOpts{noRun: true})
	viewer, operator := b.token(model.RoleViewer), b.token(model.RoleOperator)
	const id = "TARGET_RETRIED:job:payouts"

	alerts := func(includeSilenced bool) []alertNode {
		t.Helper()
		var out struct{ Alerts []alertNode }
		i.post(t, viewer, `query($s: Boolean) { alerts(includeSilenced: $s) { `+alertFieldsQ+` } }`, map[string]any{"s": includeSilenced}).decode(t, &out)
		return out.Alerts
	}
	if a := alerts(false); len(a) != 1 || a[0].ID != id || !a[0].Active || a[0].AcknowledgedBy != nil {
		t.Fatalf("alerts %+v, want the one unacknowledged retried-target alarm", a)
	}

	const ack = `mutation($id: ID!) { acknowledgeAlert(input: {id: $id}) { alert { ` + alertFieldsQ + ` } userErrors { code field } } }`
	if r := i.post(t, viewer, ack, map[string]any{"id": id}); r.code() != "FORBIDDEN" {
		t.Fatalf("viewer acknowledges: code %q, want FORBIDDEN", r.code())
	}
	var acked struct {
		AcknowledgeAlert struct {
			Alert      *alertNode
			UserErrors []struct{ Code, Field string }
		}
	}
	i.post(t, operator, ack, map[string]any{"id": id}).decode(t, &acked)
	if a := acked.AcknowledgeAlert.Alert; a == nil || a.AcknowledgedBy == nil || *a.AcknowledgedBy != b.tokenName(operator) || a.AcknowledgedAt == nil {
		t.Fatalf("acknowledged %+v, want acknowledged by the operator with a time", a)
	}
	episode := acked.AcknowledgeAlert.Alert.EpisodeID
	i.post(t, operator, ack, map[string]any{"id": "AMBIGUOUS_EFFECT:job:nope"}).decode(t, &acked)
	if ue := acked.AcknowledgeAlert.UserErrors; len(ue) != 1 || ue[0].Code != "NOT_FOUND" || ue[0].Field != "id" {
		t.Fatalf("acknowledging an unknown alarm: %+v, want NOT_FOUND on id", ue)
	}

	const silence = `mutation($id: ID!, $s: Int!) { silenceAlert(input: {id: $id, seconds: $s, reason: "provider outage"}) { alert { ` + alertFieldsQ + ` } userErrors { code field } } }`
	var silenced struct {
		SilenceAlert struct {
			Alert      *alertNode
			UserErrors []struct{ Code, Field string }
		}
	}
	i.post(t, operator, silence, map[string]any{"id": id, "s": 99999999}).decode(t, &silenced)
	if ue := silenced.SilenceAlert.UserErrors; len(ue) != 1 || ue[0].Code != "INVALID_INPUT" || ue[0].Field != "seconds" {
		t.Fatalf("silence for years: %+v, want INVALID_INPUT on seconds", ue)
	}
	i.post(t, operator, silence, map[string]any{"id": id, "s": 3600}).decode(t, &silenced)
	if a := silenced.SilenceAlert.Alert; a == nil || a.SilencedUntil == nil || a.SilencedBy == nil {
		t.Fatalf("silenced %+v, want silenced with its end and author", a)
	}
	if a := alerts(false); len(a) != 0 {
		t.Fatalf("alerts while silenced %+v, want none", a)
	}
	if a := alerts(true); len(a) != 1 || a[0].SilencedUntil == nil {
		t.Fatalf("alerts with silenced %+v, want the silenced alarm", a)
	}

	var hist struct {
		AlertHistory struct {
			Nodes []alertNode
		}
	}
	i.post(t, viewer, `{ alertHistory(jobName: "payouts", first: 10) { nodes { `+alertFieldsQ+` } } }`, nil).decode(t, &hist)
	if n := hist.AlertHistory.Nodes; len(n) != 1 || n[0].EpisodeID != episode || n[0].AcknowledgedBy == nil {
		t.Fatalf("history %+v, want the acknowledged episode", n)
	}
}

// A refused mutation's oversized input is stored capped, and the audit log's filters find it.
func TestAuditLogFiltersAndCapsOverGraphQL(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{noRun: true})
	viewer, operator := b.token(model.RoleViewer), b.token(model.RoleOperator)
	// Every value within the API's input limits (100 keys of 200 characters), 20 KB in all.
	keys := make([]string, 100)
	for k := range keys {
		keys[k] = fmt.Sprintf("%03d-%s", k, strings.Repeat("k", 196))
	}
	i.post(t, viewer, `mutation($k: [String!]) { requestReplay(input: {runId: "UnVuOjE=", scope: FULL, reason: "why", targetKeys: $k}) { userErrors { code } } }`, map[string]any{"k": keys})
	i.post(t, operator, `mutation { pauseJob(input: {name: "nope"}) { userErrors { code } } }`, nil)

	var log struct {
		AuditLog struct {
			Nodes []struct {
				Actor, Action, Target, Outcome string
				Truncated                      bool
				Arguments                      map[string]any
			}
		}
	}
	const q = `query($f: AuditFilter) { auditLog(filter: $f, first: 10) { nodes { actor action target outcome truncated arguments } } }`
	i.post(t, operator, q, map[string]any{"f": map[string]any{"actor": b.tokenName(viewer), "outcome": "FORBIDDEN"}}).decode(t, &log)
	if n := log.AuditLog.Nodes; len(n) != 1 || n[0].Action != "requestReplay" || !n[0].Truncated {
		t.Fatalf("viewer's refusals %+v, want the one truncated requestReplay", n)
	}
	if raw, _ := json.Marshal(log.AuditLog.Nodes[0].Arguments); len(raw) > 8<<10 {
		t.Fatalf("stored arguments of %d bytes, want at most 8 KB", len(raw))
	}
	i.post(t, operator, q, map[string]any{"f": map[string]any{"action": "pauseJob"}}).decode(t, &log)
	if n := log.AuditLog.Nodes; len(n) != 1 || n[0].Actor != b.tokenName(operator) || n[0].Target != "job:nope" {
		t.Fatalf("pauseJob entries %+v, want the operator's one", n)
	}
	i.post(t, operator, q, map[string]any{"f": map[string]any{"target": "job:payouts", "since": "2999-01-01T00:00:00Z"}}).decode(t, &log)
	if n := log.AuditLog.Nodes; len(n) != 0 {
		t.Fatalf("entries from the future %+v, want none", n)
	}
}
