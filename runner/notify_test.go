package runner_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/notify"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// An alarm that opens reaches a webhook signed with the channel's secret; the signature
// verifies, a tampered body or an old timestamp does not; the resolve follows when the alarm
// resolves, as its own delivery.
func TestNotifyWebhookSignedTriggerThenResolve(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	doubt, _ := settleJob("doubt", "amb")
	r := b.runner(notifying(nil), doubt)
	const secret = "whsec-0123456789-abcdef"
	c := channel(t, r, bt.ChannelInput{Name: ptr("ops-hook"), Kind: bt.ChannelWebhook, URL: ptr(rc.URL), Secret: ptr(secret)})
	route(t, r, bt.NotificationRoute{ChannelID: c.ID})

	b.succeed(r, runner.StartParams{Job: "doubt"})
	got := rc.wait(t, 1, "the trigger to reach the webhook")
	trig := got[0]
	ts, sig := trig.Header.Get(notify.HeaderTimestamp), trig.Header.Get(notify.HeaderSignature)
	if !strings.HasPrefix(sig, "v1=") {
		t.Fatalf("signature header %q, want v1=<hex>", sig)
	}
	if err := notify.Verify(secret, ts, sig, trig.Body, time.Now(), notify.DefaultTolerance); err != nil {
		t.Fatalf("the webhook does not verify with its secret: %v", err)
	}
	tampered := []byte(strings.Replace(string(trig.Body), "doubt", "dOubt", 1))
	if err := notify.Verify(secret, ts, sig, tampered, time.Now(), notify.DefaultTolerance); err != notify.ErrBadSignature {
		t.Fatalf("a tampered body: %v, want ErrBadSignature", err)
	}
	if err := notify.Verify("another-secret", ts, sig, trig.Body, time.Now(), notify.DefaultTolerance); err != notify.ErrBadSignature {
		t.Fatalf("another secret: %v, want ErrBadSignature", err)
	}
	if err := notify.Verify(secret, ts, sig, trig.Body, time.Now().Add(10*time.Minute), notify.DefaultTolerance); err != notify.ErrStale {
		t.Fatalf("a replay 10 minutes later: %v, want ErrStale", err)
	}
	body := trig.decode(t)
	alert, _ := body["alert"].(map[string]any)
	if body["event"] != "alert.trigger" || alert["key"] != doubtAlarm || alert["jobName"] != "doubt" || alert["severity"] != "CRITICAL" {
		t.Fatalf("trigger body %s, want alert.trigger of %s", trig.Body, doubtAlarm)
	}

	if _, err := r.Ledger().ResolveAmbiguous(ctx, b.mustEntry("doubt", "amb").ID, runner.ResolveNotApplied, "", "no record", "ops"); err != nil {
		t.Fatal(err)
	}
	got = rc.wait(t, 2, "the resolve to reach the webhook")
	res := got[1].decode(t)
	ralert, _ := res["alert"].(map[string]any)
	if res["event"] != "alert.resolve" || ralert["key"] != doubtAlarm || ralert["resolvedAt"] == nil {
		t.Fatalf("second delivery %s, want alert.resolve of %s with resolvedAt", got[1].Body, doubtAlarm)
	}
	if got[1].Header.Get(notify.HeaderDelivery) == trig.Header.Get(notify.HeaderDelivery) {
		t.Fatal("the resolve has the trigger's delivery id")
	}
}

// Slack gets {"text", "blocks"}; PagerDuty gets a trigger and then a resolve with the same
// dedup_key (the alarm's key) and the routing key read from the environment.
func TestNotifySlackAndPagerDutyShapes(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	slack, pd := newReceiver(t), newReceiver(t)
	doubt, _ := settleJob("doubt", "amb")
	env := map[string]string{"BATON_NOTIFY_PD_KEY": "R0UTINGKEY0123456789"}
	r := b.runner(notifying(func(c *runner.NotifyConfig) {
		c.LookupEnvFunc = func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	}), doubt)
	s := channel(t, r, bt.ChannelInput{Name: ptr("slack"), Kind: bt.ChannelSlack, Secret: ptr(slack.URL + "/services/T/B/x")})
	p := channel(t, r, bt.ChannelInput{Name: ptr("pager"), Kind: bt.ChannelPagerDuty, URL: ptr(pd.URL), Secret: ptr("env:BATON_NOTIFY_PD_KEY")})
	if p.SecretHint != "env:BATON_NOTIFY_PD_KEY" || !s.SecretSet || s.URL != "" {
		t.Fatalf("channels %+v %+v: want the env reference as the hint, Slack's URL kept secret", p, s)
	}
	route(t, r, bt.NotificationRoute{ChannelID: s.ID})
	route(t, r, bt.NotificationRoute{ChannelID: p.ID, Kinds: []bt.AlertKind{bt.AlertAmbiguousEffect}})

	b.succeed(r, runner.StartParams{Job: "doubt"})
	sm := slack.wait(t, 1, "the Slack message")[0].decode(t)
	text, _ := sm["text"].(string)
	blocks, _ := sm["blocks"].([]any)
	if !strings.Contains(text, "AMBIGUOUS_EFFECT") || len(blocks) == 0 {
		t.Fatalf("Slack body %v, want text naming the alarm and blocks", sm)
	}
	trig := pd.wait(t, 1, "the PagerDuty trigger")[0].decode(t)
	payload, _ := trig["payload"].(map[string]any)
	if trig["event_action"] != "trigger" || trig["dedup_key"] != doubtAlarm || trig["routing_key"] != env["BATON_NOTIFY_PD_KEY"] ||
		payload["severity"] != "critical" || payload["summary"] == "" || payload["source"] == "" {
		t.Fatalf("PagerDuty trigger %v", trig)
	}
	if _, err := r.Ledger().ResolveAmbiguous(ctx, b.mustEntry("doubt", "amb").ID, runner.ResolveNotApplied, "", "no record", "ops"); err != nil {
		t.Fatal(err)
	}
	res := pd.wait(t, 2, "the PagerDuty resolve")[1].decode(t)
	if res["event_action"] != "resolve" || res["dedup_key"] != doubtAlarm || res["routing_key"] != env["BATON_NOTIFY_PD_KEY"] {
		t.Fatalf("PagerDuty resolve %v, want resolve of dedup_key %s", res, doubtAlarm)
	}
	if msgs := slack.wait(t, 2, "Slack's resolve"); !strings.Contains(string(msgs[1].Body), "RESOLVED") {
		t.Fatalf("Slack's second message %s, want RESOLVED", msgs[1].Body)
	}
}

// A receiver that answers 503 gets the alarm once it answers again; the retries are recorded.
// Deliveries queued while one instance ran are delivered by a new one after it stopped.
func TestNotifyRetriesAndSurvivesRestart(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t)
	rc.status.Store(http.StatusServiceUnavailable)
	doubt, _ := settleJob("doubt", "amb")
	withKey := func(c *runner.NotifyConfig) {
		c.LookupEnvFunc = func(n string) (string, bool) { return "k3y", n == "BATON_NOTIFY_HOOK_KEY" }
	}
	cfg := b.Config()
	notifying(withKey)(&cfg)
	first := b.NewRunner(cfg, doubt)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = first.Run(ctx) }()
	c := channel(t, first, bt.ChannelInput{Name: ptr("hook"), Kind: bt.ChannelWebhook, URL: ptr(rc.URL), Secret: ptr("env:BATON_NOTIFY_HOOK_KEY")})
	route(t, first, bt.NotificationRoute{ChannelID: c.ID})
	b.succeed(first, runner.StartParams{Job: "doubt"})
	testenv.Eventually(t, 20*time.Second, "the first instance to try and fail twice", func() bool {
		return b.count(`SELECT count(*) FROM notification_outbox WHERE status = 'PENDING' AND attempts >= 2 AND last_error <> ''`) == 1
	})
	stop()
	<-done

	rc.status.Store(http.StatusOK)
	cfg = b.Config()
	cfg.Instance = "second"
	notifying(withKey)(&cfg)
	b.Runner(cfg, doubt)
	got := rc.wait(t, 1, "the new instance to deliver the queued alarm")
	if rc.refused.Load() < 2 {
		t.Fatalf("the receiver refused %d requests, want the first instance's 2 or more", rc.refused.Load())
	}
	if err := notify.Verify("k3y", got[0].Header.Get(notify.HeaderTimestamp), got[0].Header.Get(notify.HeaderSignature), got[0].Body, time.Now(), time.Minute); err != nil {
		t.Fatalf("delivered body does not verify with the key from the environment: %v", err)
	}
	b.waitSettled()
	if n := b.count(`SELECT count(*) FROM notification_outbox WHERE status = 'SENT' AND last_error IS NULL AND attempts >= 3`); n != 1 {
		t.Fatalf("%d sent deliveries with 3+ attempts, want 1", n)
	}
}

// A delivery that keeps failing is given up after its last attempt, with its error recorded.
func TestNotifyGivesUpAfterMaxAttempts(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	r := b.runner(notifying(func(c *runner.NotifyConfig) { c.MaxAttempts = 3 }))
	c := channel(t, r, bt.ChannelInput{Name: ptr("hook"), Kind: bt.ChannelWebhook, URL: ptr(rc.URL), Secret: ptr("s3cret")})
	d, err := r.Alarms().Notifications().SendTest(context.Background(), "alice", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.waitSettled()
	list, err := r.Alarms().Notifications().Deliveries(context.Background(), bt.DeliveryFilter{ChannelID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != d.ID || list[0].Status != bt.DeliveryFailed || list[0].Attempts != 3 || !strings.Contains(list[0].LastError, "500") {
		t.Fatalf("deliveries %+v, want the test FAILED after 3 attempts with the 500 recorded", list)
	}
	if n := rc.refused.Load(); n != 3 {
		t.Fatalf("the receiver was tried %d times, want 3", n)
	}
}

// Two instances record the same alarm, judging it over and over: the receiver gets one
// trigger, and the outbox holds one delivery.
func TestNotifyOncePerEpisodeAcrossInstances(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	doubt, _ := settleJob("doubt", "amb")
	one := b.runner(func(c *runner.Config) { c.Instance = "one"; notifying(nil)(c) }, doubt)
	two := b.runner(func(c *runner.Config) { c.Instance = "two"; notifying(nil)(c) }, doubt)
	c := channel(t, one, bt.ChannelInput{Name: ptr("hook"), Kind: bt.ChannelWebhook, URL: ptr(rc.URL), Secret: ptr("s3cret")})
	route(t, two, bt.NotificationRoute{ChannelID: c.ID})
	route(t, one, bt.NotificationRoute{ChannelID: c.ID, Kinds: []bt.AlertKind{bt.AlertAmbiguousEffect}}) // a second route to the same channel

	b.succeed(one, runner.StartParams{Job: "doubt"})
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			_, err := []*runner.Runner{one, two}[i%2].Alarms().Active(ctx)
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	rc.wait(t, 1, "the trigger")
	b.waitSettled()
	if got := rc.requests(); len(got) != 1 {
		t.Fatalf("the receiver got %d notifications, want 1", len(got))
	}
	if n := b.count(`SELECT count(*) FROM notification_outbox`); n != 1 {
		t.Fatalf("%d deliveries queued, want 1", n)
	}
}

// A channel's rate holds: deliveries beyond it wait for their turn, and none is lost.
func TestNotifyRateLimitPerChannel(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	r := b.runner(notifying(nil))
	c := channel(t, r, bt.ChannelInput{Name: ptr("slow"), Kind: bt.ChannelWebhook, URL: ptr(rc.URL), Secret: ptr("s3cret"),
		RatePerMinute: ptr(120), Burst: ptr(1)})
	const n = 4
	for range n {
		if _, err := r.Alarms().Notifications().SendTest(ctx, "alice", c.ID); err != nil {
			t.Fatal(err)
		}
	}
	got := rc.wait(t, n, "every test notification")
	b.waitSettled()
	if len(rc.requests()) != n {
		t.Fatalf("%d delivered, want %d", len(rc.requests()), n)
	}
	// 2 a second, one at a time: n deliveries span at least (n-1) half-seconds.
	if span := got[n-1].At.Sub(got[0].At); span < time.Duration(n-1)*500*time.Millisecond-100*time.Millisecond {
		t.Fatalf("%d deliveries within %s at 120 a minute, burst 1", n, span)
	}
}

// Routes choose by alarm kind, by job glob and by severity; a channel no route matches gets
// nothing.
func TestNotifyRoutesFilterByKindAndJob(t *testing.T) {
	b := setup(t)
	rcs := map[string]*receiver{}
	doubt, _ := settleJob("doubt", "amb")
	r := b.runner(notifying(nil), doubt)
	routes := map[string]bt.NotificationRoute{
		"kind-and-glob": {Kinds: []bt.AlertKind{bt.AlertAmbiguousEffect}, Jobs: []string{"nope", "dou*"}},
		"critical":      {MinSeverity: bt.SeverityCritical},
		"other-kind":    {Kinds: []bt.AlertKind{bt.AlertHeartbeatMissed, bt.AlertTargetRetried}},
		"other-job":     {Jobs: []string{"doubt?", "other"}},
	}
	ids := map[int64]string{}
	for name, rt := range routes {
		rcs[name] = newReceiver(t)
		c := channel(t, r, bt.ChannelInput{Name: ptr(name), Kind: bt.ChannelWebhook, URL: ptr(rcs[name].URL), Secret: ptr("s3cret")})
		rt.ChannelID = c.ID
		route(t, r, rt)
		ids[c.ID] = name
	}
	b.succeed(r, runner.StartParams{Job: "doubt"})
	rcs["kind-and-glob"].wait(t, 1, "the matching route's delivery")
	b.waitSettled()
	var got []string
	for _, name := range []string{"critical", "kind-and-glob", "other-job", "other-kind"} {
		if len(rcs[name].requests()) > 0 {
			got = append(got, name)
		}
	}
	if want := []string{"critical", "kind-and-glob"}; !slices.Equal(got, want) {
		t.Fatalf("channels notified %v, want %v", got, want)
	}
}

// A silenced alarm is not notified; once the silence is lifted, it is.
func TestNotifySilencedAlarmWaits(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	doubt, _ := settleJob("doubt", "amb")
	r := b.runner(notifying(nil), doubt)
	b.succeed(r, runner.StartParams{Job: "doubt"})
	if activeAlarm(t, r, doubtAlarm) == nil {
		t.Fatal("no alarm to silence")
	}
	if _, err := r.Alarms().Silence(ctx, doubtAlarm, time.Hour, "alice", "known"); err != nil {
		t.Fatal(err)
	}
	c := channel(t, r, bt.ChannelInput{Name: ptr("hook"), Kind: bt.ChannelWebhook, URL: ptr(rc.URL), Secret: ptr("s3cret")})
	route(t, r, bt.NotificationRoute{ChannelID: c.ID})
	if _, err := r.Alarms().Active(ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.count(`SELECT count(*) FROM notification_outbox`); n != 0 {
		t.Fatalf("%d deliveries queued for a silenced alarm, want 0", n)
	}
	if _, err := r.Alarms().Silence(ctx, doubtAlarm, 0, "alice", ""); err != nil {
		t.Fatal(err)
	}
	got := rc.wait(t, 1, "the alarm's trigger once its silence is lifted")
	if body := got[0].decode(t); body["event"] != "alert.trigger" {
		t.Fatalf("delivery %s, want the trigger", got[0].Body)
	}
}

// Bad channels and routes are refused with a coded error naming the field, and nothing is
// stored; secrets appear neither in what the service returns nor in the audit log.
func TestNotifyValidationAndSecrets(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	keyless := b.runner(nil)
	r := b.runner(notifying(nil))
	const secret = "literal-secret-never-shown-0123"
	cases := []struct {
		name  string
		r     *runner.Runner
		in    bt.ChannelInput
		code  bt.Code
		field string
	}{
		{"ftp URL", r, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelWebhook, URL: ptr("ftp://example.com/x"), Secret: ptr("s")}, bt.CodeInvalidInput, "url"},
		{"no host", r, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelWebhook, URL: ptr("http:///x"), Secret: ptr("s")}, bt.CodeInvalidInput, "url"},
		{"unknown kind", r, bt.ChannelInput{Name: ptr("a"), Kind: "EMAIL", URL: ptr("http://x"), Secret: ptr("s")}, bt.CodeInvalidInput, "kind"},
		{"no secret", r, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelWebhook, URL: ptr("http://x")}, bt.CodeInvalidInput, "secret"},
		{"slack url field", r, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelSlack, URL: ptr("https://hooks.example/x"), Secret: ptr("https://hooks.example/x")}, bt.CodeInvalidInput, "url"},
		{"slack secret not a URL", r, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelSlack, Secret: ptr("javascript:alert(1)")}, bt.CodeInvalidInput, "secret"},
		{"bad env name", r, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelWebhook, URL: ptr("http://x"), Secret: ptr("env:1-bad")}, bt.CodeInvalidInput, "secret"},
		{"huge secret", r, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelWebhook, URL: ptr("http://x"), Secret: ptr(strings.Repeat("s", 2000))}, bt.CodeInvalidInput, "secret"},
		{"rate 0", r, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelWebhook, URL: ptr("http://x"), Secret: ptr("s"), RatePerMinute: ptr(0)}, bt.CodeInvalidInput, "ratePerMinute"},
		{"bad name", r, bt.ChannelInput{Name: ptr("a b"), Kind: bt.ChannelWebhook, URL: ptr("http://x"), Secret: ptr("s")}, bt.CodeInvalidInput, "name"},
		{"literal without key", keyless, bt.ChannelInput{Name: ptr("a"), Kind: bt.ChannelWebhook, URL: ptr("http://x"), Secret: ptr(secret)}, runner.CodeSecretKeyMissing, "secret"},
	}
	for _, tc := range cases {
		_, err := tc.r.Alarms().Notifications().CreateChannel(ctx, "alice", tc.in)
		var e *bt.Error
		if bt.CodeOf(err) != tc.code || !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("%s: %v, want %s on field %s", tc.name, err, tc.code, tc.field)
		}
	}
	if n := b.count(`SELECT count(*) FROM notification_channels`); n != 0 {
		t.Fatalf("%d channels stored after refusals, want 0", n)
	}
	// Without a key an environment reference is taken.
	if _, err := keyless.Alarms().Notifications().CreateChannel(ctx, "alice", bt.ChannelInput{Name: ptr("env-only"), Kind: bt.ChannelWebhook, URL: ptr("http://x"), Secret: ptr("env:BATON_NOTIFY_HOOK")}); err != nil {
		t.Fatalf("env reference without a key: %v", err)
	}
	c := channel(t, r, bt.ChannelInput{Name: ptr("hook"), Kind: bt.ChannelWebhook, URL: ptr("https://example.com/h"), Secret: ptr(secret)})
	if _, err := r.Alarms().Notifications().CreateChannel(ctx, "alice", bt.ChannelInput{Name: ptr("hook"), Kind: bt.ChannelWebhook, URL: ptr("http://x"), Secret: ptr("s")}); bt.CodeOf(err) != bt.CodeConflict {
		t.Fatalf("a second channel named hook: %v, want CONFLICT", err)
	}
	if _, err := r.Alarms().Notifications().UpdateChannel(ctx, "alice", c.ID, bt.ChannelInput{Burst: ptr(5000)}); bt.CodeOf(err) != bt.CodeInvalidInput {
		t.Fatalf("burst 5000: %v, want INVALID_INPUT", err)
	}
	up, err := r.Alarms().Notifications().UpdateChannel(ctx, "alice", c.ID, bt.ChannelInput{RatePerMinute: ptr(10)})
	if err != nil || up.RatePerMinute != 10 || !up.SecretSet || up.SecretHint != "…"+secret[len(secret)-4:] {
		t.Fatalf("update keeping the secret: %+v, %v", up, err)
	}
	if n := b.count(`SELECT count(*) FROM notification_channels WHERE secret LIKE '%' || $1 || '%'`, secret); n != 0 {
		t.Fatal("the literal secret is stored in the clear")
	}
	for _, rt := range []bt.NotificationRoute{{ChannelID: c.ID, Kinds: []bt.AlertKind{"NOT_A_KIND"}}, {ChannelID: c.ID, Jobs: []string{"[bad"}},
		{ChannelID: c.ID, Jobs: []string{""}}, {ChannelID: c.ID, MinSeverity: "LOW"}} {
		if _, err := r.Alarms().Notifications().CreateRoute(ctx, "alice", rt); bt.CodeOf(err) != bt.CodeInvalidInput {
			t.Errorf("route %+v: %v, want INVALID_INPUT", rt, err)
		}
	}
	if _, err := r.Alarms().Notifications().CreateRoute(ctx, "alice", bt.NotificationRoute{ChannelID: c.ID + 100}); bt.CodeOf(err) != bt.CodeNotFound {
		t.Fatalf("route to no channel: %v, want NOT_FOUND", err)
	}
	if n := b.count(`SELECT count(*) FROM notification_routes`); n != 0 {
		t.Fatalf("%d routes stored after refusals, want 0", n)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE arguments::text LIKE '%' || $1 || '%'`, secret); n != 0 {
		t.Fatalf("%d audit rows hold the secret", n)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'createNotificationChannel'`); n != len(cases)+3 {
		t.Fatalf("%d audit rows of createNotificationChannel, want %d", n, len(cases)+3)
	}
	if err := r.Alarms().Notifications().DeleteChannel(ctx, "alice", c.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.Alarms().Notifications().DeleteChannel(ctx, "alice", c.ID); bt.CodeOf(err) != bt.CodeNotFound {
		t.Fatalf("deleting it again: %v, want NOT_FOUND", err)
	}
}

// An env: secret names only a variable with the prefix BATON_NOTIFY_: any other name (the
// database URL, the secret key) is refused with a coded error naming the field and the rule
// when the channel is saved, and a channel stored with one before is not delivered.
func TestNotifyEnvReferenceAllowList(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	env := map[string]string{"BATON_DATABASE_URL": "postgres://postgres:hunter2@127.0.0.1:5432/baton", "BATON_NOTIFY_PD_KEY": "R0UTINGKEY0123456789"}
	r := b.runner(notifying(func(c *runner.NotifyConfig) {
		c.LookupEnvFunc = func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	}))
	n := r.Alarms().Notifications()
	for _, name := range []string{"BATON_DATABASE_URL", "BATON_SECRET_KEY", "HOME", "BATON_NOTIFY_", "baton_notify_x", "BATON_NOTIFY_ALLOW_PRIVATE_NETWORKS"} {
		_, err := n.CreateChannel(ctx, "alice", bt.ChannelInput{Name: ptr("pd"), Kind: bt.ChannelPagerDuty, URL: ptr(rc.URL), Secret: ptr("env:" + name)})
		var e *bt.Error
		if bt.CodeOf(err) != runner.CodeSecretEnvRefused || !errors.As(err, &e) || e.Field != "secret" || !strings.Contains(e.Message, "BATON_NOTIFY_") {
			t.Errorf("env:%s: %v, want %s on field secret naming BATON_NOTIFY_", name, err, runner.CodeSecretEnvRefused)
		}
	}
	if c := b.count(`SELECT count(*) FROM notification_channels`); c != 0 {
		t.Fatalf("%d channels stored after refusals, want 0", c)
	}
	ok := channel(t, r, bt.ChannelInput{Name: ptr("pd-ok"), Kind: bt.ChannelPagerDuty, URL: ptr(rc.URL), Secret: ptr("env:BATON_NOTIFY_PD_KEY")})
	if _, err := n.UpdateChannel(ctx, "alice", ok.ID, bt.ChannelInput{Secret: ptr("env:BATON_DATABASE_URL")}); bt.CodeOf(err) != runner.CodeSecretEnvRefused {
		t.Fatalf("update to env:BATON_DATABASE_URL: %v, want %s", err, runner.CodeSecretEnvRefused)
	}
	// A channel stored before the rule (written straight to the table) is refused at delivery.
	if _, err := b.Pool.Exec(ctx, `UPDATE notification_channels SET secret = 'env:BATON_DATABASE_URL' WHERE id = $1`, ok.ID); err != nil {
		t.Fatal(err)
	}
	d, err := n.SendTest(ctx, "olivia", ok.ID)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the test delivery to fail", func() bool {
		return b.count(`SELECT count(*) FROM notification_outbox WHERE id = $1 AND attempts > 0 AND last_error LIKE '%BATON_NOTIFY_%'`, d.ID) == 1
	})
	for _, got := range rc.requests() {
		if strings.Contains(string(got.Body), "hunter2") {
			t.Fatalf("the receiver got the database URL: %s", got.Body)
		}
	}
	if len(rc.requests()) != 0 || rc.refused.Load() != 0 {
		t.Fatalf("the receiver was called %d times", len(rc.requests())+int(rc.refused.Load()))
	}
}

// A channel URL that carries credentials (userinfo, a query, a path) is stored sealed, shown
// beside its full form as scheme://host/…, written to the audit log only in that form, and
// still delivered to whole; a URL of scheme and host alone is stored and shown as it is.
// Without a secret key a credential URL is refused, and nothing is stored.
func TestNotifyCredentialURLSealedAndHidden(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	r := b.runner(notifying(nil))
	n := r.Alarms().Notifications()
	const token, sig = "T0KEN-4f1c9a7e", "s3cr3t-sig"
	full := rc.URL + "/hooks/" + token + "?sig=" + sig
	shown := rc.URL + "/…"
	c := channel(t, r, bt.ChannelInput{Name: ptr("hook"), Kind: bt.ChannelWebhook, URL: ptr(full), Secret: ptr("whsec-0123456789-abcdef")})
	if c.URL != full || c.URLShown != shown || !c.URLSecret {
		t.Fatalf("channel URL %q shown %q secret %v, want %q shown as %q", c.URL, c.URLShown, c.URLSecret, full, shown)
	}
	userinfo := channel(t, r, bt.ChannelInput{Name: ptr("basic"), Kind: bt.ChannelWebhook, URL: ptr("https://bot:pa55word@hooks.example.com"), Secret: ptr("whsec-0123456789-abcdef")})
	if userinfo.URLShown != "https://hooks.example.com/…" || !userinfo.URLSecret {
		t.Fatalf("userinfo URL shown %q secret %v", userinfo.URLShown, userinfo.URLSecret)
	}
	plain := channel(t, r, bt.ChannelInput{Name: ptr("plain"), Kind: bt.ChannelWebhook, URL: ptr(rc.URL), Secret: ptr("whsec-0123456789-abcdef")})
	if plain.URL != rc.URL || plain.URLShown != rc.URL || plain.URLSecret {
		t.Fatalf("plain URL %q shown %q secret %v", plain.URL, plain.URLShown, plain.URLSecret)
	}
	for _, leak := range []string{token, sig, "pa55word"} {
		if k := b.count(`SELECT count(*) FROM notification_channels WHERE url LIKE '%' || $1 || '%'`, leak); k != 0 {
			t.Errorf("%q is stored in the clear", leak)
		}
		if k := b.count(`SELECT count(*) FROM audit_log WHERE arguments::text LIKE '%' || $1 || '%' OR target LIKE '%' || $1 || '%'`, leak); k != 0 {
			t.Errorf("%d audit rows hold %q", k, leak)
		}
	}
	if k := b.count(`SELECT count(*) FROM notification_channels WHERE url = $1`, rc.URL); k != 1 {
		t.Errorf("the plain URL is not stored as it is")
	}
	if k := b.count(`SELECT count(*) FROM audit_log WHERE action = 'createNotificationChannel' AND arguments->>'url' = $1`, shown); k != 1 {
		t.Errorf("%d audit rows record the URL as %s, want 1", k, shown)
	}
	// A change of another field keeps the sealed URL, which still delivers whole.
	if up, err := n.UpdateChannel(ctx, "alice", c.ID, bt.ChannelInput{RatePerMinute: ptr(10)}); err != nil || up.URL != full {
		t.Fatalf("update keeping the URL: %+v, %v", up, err)
	}
	if _, err := n.SendTest(ctx, "olivia", c.ID); err != nil {
		t.Fatal(err)
	}
	if got := rc.wait(t, 1, "the test delivery"); got[0].Path != "/hooks/"+token+"?sig="+sig {
		t.Fatalf("delivered to %q, want the whole path", got[0].Path)
	}
	keyless := b.runner(nil)
	_, err := keyless.Alarms().Notifications().CreateChannel(ctx, "alice", bt.ChannelInput{Name: ptr("k"), Kind: bt.ChannelWebhook, URL: ptr(full), Secret: ptr("env:BATON_NOTIFY_K")})
	var e *bt.Error
	if bt.CodeOf(err) != runner.CodeSecretKeyMissing || !errors.As(err, &e) || e.Field != "url" {
		t.Fatalf("credential URL without a key: %v, want %s on url", err, runner.CodeSecretKeyMissing)
	}
	if k := b.count(`SELECT count(*) FROM notification_channels`); k != 3 {
		t.Fatalf("%d channels, want the 3 accepted", k)
	}
	// A keyless cluster still changes a channel whose URL, stored before, is left as it was.
	if _, err := b.Pool.Exec(ctx, `UPDATE notification_channels SET url = $1 WHERE id = $2`, full, plain.ID); err != nil {
		t.Fatal(err)
	}
	if up, err := keyless.Alarms().Notifications().UpdateChannel(ctx, "alice", plain.ID, bt.ChannelInput{Burst: ptr(3)}); err != nil || up.URLShown != shown {
		t.Fatalf("keyless update keeping a stored URL: %+v, %v", up, err)
	}
}

// A credential URL stored in the clear before URLs were sealed is sealed when an instance with
// the secret key starts, keeps its channel's last editor, and still delivers whole.
func TestNotifyLegacyCredentialURLSealedAtStart(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	full := rc.URL + "/hooks/L3GACY-T0KEN"
	first := b.runner(notifying(nil))
	c := channel(t, first, bt.ChannelInput{Name: ptr("old"), Kind: bt.ChannelWebhook, URL: ptr(rc.URL), Secret: ptr("whsec-0123456789-abcdef")})
	if _, err := b.Pool.Exec(ctx, `UPDATE notification_channels SET url = $1, updated_by = 'carol' WHERE id = $2`, full, c.ID); err != nil {
		t.Fatal(err)
	}
	r := b.runner(notifying(nil))
	testenv.Eventually(t, 20*time.Second, "the stored URL to be sealed", func() bool {
		return b.count(`SELECT count(*) FROM notification_channels WHERE id = $1 AND url LIKE 'enc:v1:%' AND updated_by = 'carol'`, c.ID) == 1
	})
	if k := b.count(`SELECT count(*) FROM audit_log WHERE arguments::text LIKE '%L3GACY%'`); k != 0 {
		t.Fatalf("%d audit rows hold the URL", k)
	}
	if _, err := r.Alarms().Notifications().SendTest(ctx, "olivia", c.ID); err != nil {
		t.Fatal(err)
	}
	if got := rc.wait(t, 1, "the test delivery"); got[0].Path != "/hooks/L3GACY-T0KEN" {
		t.Fatalf("delivered to %q", got[0].Path)
	}
}
