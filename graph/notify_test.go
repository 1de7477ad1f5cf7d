package graph_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/notify"
	"github.com/baton-run/baton/runner"
)

const channelFieldsQ = `id name kind url secretSet secretHint ratePerMinute burst updatedBy routes { id kinds jobs minSeverity }`

type channelNode struct {
	ID, Name, Kind string
	URL            *string
	SecretSet      bool
	SecretHint     *string
	RatePerMinute  int
	Burst          int
	UpdatedBy      string
	Routes         []struct {
		ID, MinSeverity string
		Kinds, Jobs     []string
	}
}

const saveQ = `mutation($in: SaveNotificationChannelInput!) { saveNotificationChannel(input: $in) {
	channel { ` + channelFieldsQ + ` } userErrors { code message field } } }`

type channelPayload struct {
	Channel    *channelNode
	UserErrors []userError
}

// Admins manage channels and routes over GraphQL; secrets never come back, in any answer or
// in the audit log; bad input is refused with coded userErrors and stores nothing; viewers
// and operators may not change channels; a test notification reaches the receiver.
func TestNotificationsOverGraphQL(t *testing.T) {
	b := setup(t)
	var hits atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(rcv.Close)
	i := b.instance(instanceOpts{runner: func(c *runner.Config) {
		c.Notify = runner.NotifyConfig{Sender: &notify.Sender{AllowPrivateNetworks: true}, SecretKey: []byte("0123456789abcdef0123456789abcdef"), Interval: 50 * time.Millisecond}
	}})
	admin, operator := b.token(model.RoleAdmin), b.token(model.RoleOperator)
	const secret = "hmac-secret-that-must-not-leak-42"
	const createQ = saveQ

	if res := i.post(t, operator, createQ, map[string]any{"in": map[string]any{"name": "x", "kind": "WEBHOOK", "url": rcv.URL, "secret": secret}}); res.code() != "FORBIDDEN" {
		t.Fatalf("an operator creating a channel: %s, want FORBIDDEN", res.code())
	}
	for _, bad := range []struct {
		in          map[string]any
		code, field string
	}{
		{map[string]any{"name": "x", "kind": "WEBHOOK", "url": "file:///etc/passwd", "secret": secret}, "INVALID_INPUT", "url"},
		{map[string]any{"name": "x", "kind": "WEBHOOK", "url": rcv.URL, "secret": secret, "burst": 0}, "INVALID_INPUT", "burst"},
		{map[string]any{"name": "x", "kind": "WEBHOOK", "url": rcv.URL, "secret": strings.Repeat("s", 1500)}, "INVALID_INPUT", "secret"},
	} {
		var out struct{ SaveNotificationChannel channelPayload }
		i.post(t, admin, createQ, map[string]any{"in": bad.in}).decode(t, &out)
		ue := out.SaveNotificationChannel.UserErrors
		if out.SaveNotificationChannel.Channel != nil || len(ue) != 1 || ue[0].Code != bad.code || ue[0].Field == nil || *ue[0].Field != bad.field {
			t.Fatalf("create %v: %+v, want %s on %s", bad.in, out.SaveNotificationChannel, bad.code, bad.field)
		}
	}
	if n := b.count(`SELECT count(*) FROM notification_channels`); n != 0 {
		t.Fatalf("%d channels after refusals", n)
	}

	res := i.post(t, admin, createQ, map[string]any{"in": map[string]any{"name": "ops", "kind": "WEBHOOK", "url": rcv.URL, "secret": secret, "ratePerMinute": 60}})
	if strings.Contains(string(res.Data), secret) {
		t.Fatalf("the create's answer holds the secret: %s", res.Data)
	}
	var created struct{ SaveNotificationChannel channelPayload }
	res.decode(t, &created)
	c := created.SaveNotificationChannel.Channel
	if c == nil || !c.SecretSet || c.SecretHint == nil || *c.SecretHint != "…"+secret[len(secret)-4:] || c.RatePerMinute != 60 || c.Kind != "WEBHOOK" {
		t.Fatalf("created %+v", created.SaveNotificationChannel)
	}

	if res := i.post(t, admin, saveQ, map[string]any{"in": map[string]any{"id": c.ID, "routes": []any{map[string]any{"kinds": []string{"NOT_A_KIND"}}}}}); res.code() == "" {
		t.Fatal("a route of an unknown alarm kind was taken")
	}
	var bad struct{ SaveNotificationChannel channelPayload }
	i.post(t, admin, saveQ, map[string]any{"in": map[string]any{"id": c.ID, "ratePerMinute": 5,
		"routes": []any{map[string]any{"jobs": []string{"ok"}}, map[string]any{"jobs": []string{"[bad"}}}}}).decode(t, &bad)
	if ue := bad.SaveNotificationChannel.UserErrors; len(ue) != 1 || ue[0].Code != "INVALID_INPUT" || *ue[0].Field != "jobs" {
		t.Fatalf("a bad glob: %+v", bad.SaveNotificationChannel)
	}
	if b.count(`SELECT count(*) FROM notification_routes`) != 0 || b.count(`SELECT rate_per_minute FROM notification_channels`) != 60 {
		t.Fatal("a refused save changed the channel or its routes")
	}
	var routed struct{ SaveNotificationChannel channelPayload }
	i.post(t, admin, saveQ, map[string]any{"in": map[string]any{"id": c.ID,
		"routes": []any{map[string]any{"kinds": []string{"AMBIGUOUS_EFFECT"}, "jobs": []string{"pay-*"}, "minSeverity": "CRITICAL"}}}}).decode(t, &routed)
	if ch := routed.SaveNotificationChannel.Channel; ch == nil || len(ch.Routes) != 1 || ch.Routes[0].MinSeverity != "CRITICAL" || !ch.SecretSet {
		t.Fatalf("routes saved %+v", routed.SaveNotificationChannel)
	}

	res = i.post(t, operator, `{ notificationChannels { `+channelFieldsQ+` } }`, nil)
	var list struct{ NotificationChannels []channelNode }
	res.decode(t, &list)
	if strings.Contains(string(res.Data), secret) || len(list.NotificationChannels) != 1 || len(list.NotificationChannels[0].Routes) != 1 ||
		list.NotificationChannels[0].Routes[0].Jobs[0] != "pay-*" {
		t.Fatalf("channels %s", res.Data)
	}

	var sent struct {
		SendTestNotification struct {
			Delivery   *struct{ ID, Kind, Status string }
			UserErrors []userError
		}
	}
	i.post(t, operator, `mutation($in: SendTestNotificationInput!) { sendTestNotification(input: $in) { delivery { id kind status } userErrors { code } } }`,
		map[string]any{"in": map[string]any{"channelId": c.ID}}).decode(t, &sent)
	if sent.SendTestNotification.Delivery == nil || sent.SendTestNotification.Delivery.Kind != "TEST" {
		t.Fatalf("send test %+v", sent.SendTestNotification)
	}
	testenv.Eventually(t, 20*time.Second, "the test notification to arrive", func() bool { return hits.Load() == 1 })
	testenv.Eventually(t, 20*time.Second, "the delivery to read SENT", func() bool {
		var d struct{ NotificationDeliveries []struct{ Status string } }
		i.post(t, operator, `{ notificationDeliveries(channelId: "`+c.ID+`") { status } }`, nil).decode(t, &d)
		return len(d.NotificationDeliveries) == 1 && d.NotificationDeliveries[0].Status == "SENT"
	})

	if n := b.count(`SELECT count(*) FROM audit_log WHERE arguments::text LIKE '%' || $1 || '%'`, secret); n != 0 {
		t.Fatalf("%d audit rows hold the secret", n)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action LIKE '%Notification%'`); n < 5 {
		t.Fatalf("%d audit rows of notification mutations, want every one", n)
	}
	var del struct {
		DeleteNotificationChannel struct {
			DeletedID  *string
			UserErrors []userError
		}
	}
	i.post(t, admin, `mutation($in: DeleteNotificationChannelInput!) { deleteNotificationChannel(input: $in) { deletedId userErrors { code } } }`,
		map[string]any{"in": map[string]any{"id": "bm9wZQ=="}}).decode(t, &del)
	if len(del.DeleteNotificationChannel.UserErrors) != 1 || del.DeleteNotificationChannel.UserErrors[0].Code != "INVALID_INPUT" {
		t.Fatalf("delete with a malformed id: %+v", del.DeleteNotificationChannel)
	}
	i.post(t, admin, `mutation($in: DeleteNotificationChannelInput!) { deleteNotificationChannel(input: $in) { deletedId userErrors { code } } }`,
		map[string]any{"in": map[string]any{"id": c.ID}}).decode(t, &del)
	if del.DeleteNotificationChannel.DeletedID == nil || b.count(`SELECT count(*) FROM notification_routes`) != 0 {
		t.Fatalf("delete %+v", del.DeleteNotificationChannel)
	}
}

// Without a secret key a literal secret is refused with SECRET_KEY_MISSING, and an env:NAME
// reference is taken.
func TestNotificationSecretKeyMissing(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{noRun: true})
	admin := b.token(model.RoleAdmin)
	const q = `mutation($in: SaveNotificationChannelInput!) { saveNotificationChannel(input: $in) { channel { secretHint } userErrors { code field } } }`
	var out struct{ SaveNotificationChannel channelPayload }
	i.post(t, admin, q, map[string]any{"in": map[string]any{"name": "pd", "kind": "PAGERDUTY", "secret": "literal-routing-key"}}).decode(t, &out)
	if ue := out.SaveNotificationChannel.UserErrors; len(ue) != 1 || ue[0].Code != "SECRET_KEY_MISSING" {
		t.Fatalf("literal without a key: %+v, want SECRET_KEY_MISSING", out.SaveNotificationChannel)
	}
	i.post(t, admin, q, map[string]any{"in": map[string]any{"name": "pd", "kind": "PAGERDUTY", "secret": "env:BATON_NOTIFY_PD_ROUTING_KEY"}}).decode(t, &out)
	if c := out.SaveNotificationChannel.Channel; c == nil || c.SecretHint == nil || *c.SecretHint != "env:BATON_NOTIFY_PD_ROUTING_KEY" {
		t.Fatalf("env reference: %+v", out.SaveNotificationChannel)
	}
}

// A channel URL that carries credentials is shown whole to ADMIN only: a VIEWER and an
// OPERATOR read scheme://host/…; a URL of scheme and host alone is shown to all.
func TestNotificationURLsByRole(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{noRun: true, runner: func(c *runner.Config) {
		c.Notify = runner.NotifyConfig{SecretKey: []byte("0123456789abcdef0123456789abcdef")}
	}})
	admin := b.token(model.RoleAdmin)
	const full = "https://hooks.example.com/services/T0KEN/B1234?sig=s3cr3t"
	for _, in := range []map[string]any{
		{"name": "hook", "kind": "WEBHOOK", "url": full, "secret": "whsec-0123456789-abcdef"},
		{"name": "plain", "kind": "WEBHOOK", "url": "https://receiver.example.com", "secret": "whsec-0123456789-abcdef"},
	} {
		var out struct{ SaveNotificationChannel channelPayload }
		i.post(t, admin, saveQ, map[string]any{"in": in}).decode(t, &out)
		if out.SaveNotificationChannel.Channel == nil {
			t.Fatalf("save %v: %+v", in, out.SaveNotificationChannel.UserErrors)
		}
	}
	for _, tc := range []struct {
		role       model.Role
		hook, plan string
	}{
		{model.RoleViewer, "https://hooks.example.com/…", "https://receiver.example.com"},
		{model.RoleOperator, "https://hooks.example.com/…", "https://receiver.example.com"},
		{model.RoleApprover, "https://hooks.example.com/…", "https://receiver.example.com"},
		{model.RoleAdmin, full, "https://receiver.example.com"},
	} {
		var out struct{ NotificationChannels []channelNode }
		i.post(t, b.token(tc.role), `{ notificationChannels { `+channelFieldsQ+` } }`, nil).decode(t, &out)
		got := map[string]string{}
		for _, c := range out.NotificationChannels {
			if c.URL != nil {
				got[c.Name] = *c.URL
			}
		}
		if got["hook"] != tc.hook || got["plain"] != tc.plan {
			t.Errorf("%s reads URLs %v, want hook %s and plain %s", tc.role, got, tc.hook, tc.plan)
		}
	}
	var log struct {
		AuditLog struct {
			Edges []struct {
				Node struct{ Arguments json.RawMessage }
			}
		}
	}
	i.post(t, admin, `{ auditLog(first: 50) { edges { node { arguments } } } }`, nil).decode(t, &log)
	if len(log.AuditLog.Edges) == 0 {
		t.Fatal("no audit rows")
	}
	for _, e := range log.AuditLog.Edges {
		if strings.Contains(string(e.Node.Arguments), "T0KEN") || strings.Contains(string(e.Node.Arguments), "s3cr3t") {
			t.Errorf("an audit row holds the credential URL: %s", e.Node.Arguments)
		}
	}
}
