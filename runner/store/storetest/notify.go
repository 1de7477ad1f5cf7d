package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// A channel is created with its routes in one step, or not at all; a name is one channel's;
// an update replaces the routes (keeping the id of a route it keeps) or, refused, changes
// nothing; deleting a channel takes its routes and deliveries with it; every call on what does
// not exist says so.
func testNotificationChannelsAndRoutes(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	if has, err := s.HasRoutes(ctx); err != nil || has {
		t.Fatalf("HasRoutes on an empty store: %v, %v", has, err)
	}
	retried := bt.NotificationRoute{Kinds: []bt.AlertKind{bt.AlertTargetRetried}, Jobs: []string{"pay-*"}, MinSeverity: bt.SeverityWarning}
	stalled := bt.NotificationRoute{Kinds: []bt.AlertKind{bt.AlertCheckpointStalled}, Jobs: []string{}, MinSeverity: bt.SeverityCritical}
	ops, err := s.CreateChannel(ctx, channel("ops"), []bt.NotificationRoute{retried, stalled}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if ops.ID == 0 || ops.Name != "ops" || ops.Secret != "env:OPS_HOOK_SECRET" || ops.UpdatedBy != "alice" {
		t.Fatalf("created channel %+v", ops)
	}
	routes := channelRoutes(t, s, ops.ID)
	if len(routes) != 2 || routes[0].CreatedBy != "alice" || routes[0].ChannelID != ops.ID {
		t.Fatalf("routes after create: %+v", routes)
	}
	if has, err := s.HasRoutes(ctx); err != nil || !has {
		t.Fatalf("HasRoutes with two routes: %v, %v", has, err)
	}

	// A second channel of the same name is refused, and lands none of its routes.
	if _, err := s.CreateChannel(ctx, channel("ops"), []bt.NotificationRoute{stalled}, "bob"); bt.CodeOf(err) != bt.CodeConflict {
		t.Fatalf("a second channel named ops: %v, want CONFLICT", err)
	}
	if all, err := s.NotificationRoutes(ctx, 0); err != nil || len(all) != 2 {
		t.Fatalf("routes after the refused create: %d, %v; want 2", len(all), err)
	}

	// An update keeps the route it keeps (same id), drops the other and adds the new one.
	paged := bt.NotificationRoute{Kinds: []bt.AlertKind{bt.AlertAmbiguousEffect}, Jobs: []string{}, MinSeverity: bt.SeverityWarning}
	newRoutes := []bt.NotificationRoute{retried, paged}
	updated, err := s.UpdateChannel(ctx, ops.ID, "bob", func(c *store.StoredChannel) error {
		c.RatePerMinute, c.Burst = 60, 10
		return nil
	}, &newRoutes)
	if err != nil || updated.RatePerMinute != 60 || updated.Burst != 10 || updated.UpdatedBy != "bob" {
		t.Fatalf("update: %+v, %v", updated, err)
	}
	after := channelRoutes(t, s, ops.ID)
	if len(after) != 2 || after[0].ID != routes[0].ID || !slices.Equal(after[1].Kinds, paged.Kinds) {
		t.Fatalf("routes after the update: %+v; want route %d kept and the AMBIGUOUS_EFFECT one added", after, routes[0].ID)
	}

	// A refused change, and a rename onto another channel's name, change nothing.
	dev, err := s.CreateChannel(ctx, channel("dev"), nil, "alice")
	if err != nil {
		t.Fatal(err)
	}
	refusal := errors.New("refused by the caller")
	if _, err := s.UpdateChannel(ctx, ops.ID, "eve", func(c *store.StoredChannel) error {
		c.Burst = 1
		return refusal
	}, nil); !errors.Is(err, refusal) {
		t.Fatalf("a refused change: %v, want the caller's error", err)
	}
	if _, err := s.UpdateChannel(ctx, dev.ID, "eve", func(c *store.StoredChannel) error {
		c.Name = "ops"
		return nil
	}, &[]bt.NotificationRoute{}); bt.CodeOf(err) != bt.CodeConflict {
		t.Fatalf("renaming dev to ops: %v, want CONFLICT", err)
	}
	chans, err := s.NotificationChannels(ctx)
	if err != nil || len(chans) != 2 || chans[0].Name != "dev" || chans[1].Name != "ops" || chans[1].Burst != 10 || chans[1].UpdatedBy != "bob" {
		t.Fatalf("channels after two refused updates: %+v, %v", chans, err)
	}

	checkRoutesAndDeletion(t, s, ops.ID, dev.ID)
}

// checkRoutesAndDeletion adds and deletes one route of channel dev, deletes channel ops (taking
// its routes and deliveries) and sees every call on what no longer exists refused as not found.
func checkRoutesAndDeletion(t *testing.T, s DB, opsID, devID int64) {
	t.Helper()
	ctx := context.Background()
	// Routes one by one.
	r, err := s.CreateRoute(ctx, bt.NotificationRoute{ChannelID: devID, Kinds: []bt.AlertKind{bt.AlertHeartbeatMissed}, Jobs: []string{}, MinSeverity: bt.SeverityWarning, CreatedBy: "carol"})
	if err != nil || r.ID == 0 || r.ChannelID != devID {
		t.Fatalf("create route: %+v, %v", r, err)
	}
	if err := s.DeleteRoute(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoute(ctx, r.ID); bt.CodeOf(err) != bt.CodeNotFound {
		t.Fatalf("deleting a deleted route: %v, want not found", err)
	}

	// Deleting a channel takes its routes and deliveries with it.
	if _, err := s.QueueTest(ctx, opsID, testPayload("ops")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteChannel(ctx, opsID); err != nil {
		t.Fatal(err)
	}
	if all, err := s.NotificationRoutes(ctx, 0); err != nil || len(all) != 0 {
		t.Fatalf("routes after the channel was deleted: %+v, %v", all, err)
	}
	if ds, err := s.Deliveries(ctx, bt.DeliveryFilter{}); err != nil || len(ds) != 0 {
		t.Fatalf("deliveries after the channel was deleted: %+v, %v", ds, err)
	}
	if has, err := s.HasRoutes(ctx); err != nil || has {
		t.Fatalf("HasRoutes with no route left: %v, %v", has, err)
	}

	// What does not exist.
	const missing = 1 << 40
	for what, err := range map[string]error{
		"DeleteChannel": s.DeleteChannel(ctx, opsID),
		"UpdateChannel": func() error {
			_, err := s.UpdateChannel(ctx, missing, "x", func(*store.StoredChannel) error { return nil }, nil)
			return err
		}(),
		"CreateRoute": func() error {
			_, err := s.CreateRoute(ctx, bt.NotificationRoute{ChannelID: missing, Kinds: []bt.AlertKind{bt.AlertHeartbeatMissed}, Jobs: []string{}, MinSeverity: bt.SeverityWarning})
			return err
		}(),
		"QueueTest": func() error { _, err := s.QueueTest(ctx, missing, testPayload("x")); return err }(),
	} {
		if bt.CodeOf(err) != bt.CodeNotFound {
			t.Errorf("%s on a channel that does not exist: %v, want not found", what, err)
		}
	}
}

// Instances claiming at once never take the same delivery, and take no more than the
// channel's bucket holds; a claimed delivery is due again after its hold unless settled; a
// settled one is SENT, or PENDING later with its error, or FAILED.
func testDeliveriesClaimedOnceWithinTheBucket(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	// A bucket of 3 that refills one token a minute: the test sees no refill.
	slow := channel("slow")
	slow.RatePerMinute, slow.Burst = 1, 3
	ch, err := s.CreateChannel(ctx, slow, nil, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := s.QueueTest(ctx, ch.ID, testPayload("slow")); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var claimed []int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, pending, err := s.ClaimDeliveries(ctx, 10, time.Hour)
			if err != nil || pending != 5 {
				t.Errorf("claim: pending %d, %v; want 5 pending", pending, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, d := range got {
				if d.Channel.ID != ch.ID || d.Channel.Secret != slow.Secret || d.Attempts != 1 {
					t.Errorf("claimed %+v", d)
				}
				claimed = append(claimed, d.ID)
			}
		}()
	}
	wg.Wait()
	slices.Sort(claimed)
	if len(claimed) != 3 || len(slices.Compact(slices.Clone(claimed))) != 3 {
		t.Fatalf("4 instances claimed %v from a bucket of 3: want 3 distinct deliveries", claimed)
	}
	if got, _, err := s.ClaimDeliveries(ctx, 10, time.Hour); err != nil || len(got) != 0 {
		t.Fatalf("a claim with the bucket empty took %d, %v", len(got), err)
	}

	settleThree(t, s, ch.ID, claimed)
	checkHeldForNoTime(t, s)
}

// settleThree settles claimed (three deliveries of channel chID): the first sent, the second
// to retry in an hour, the third given up; and sees a settled delivery not settled again.
func settleThree(t *testing.T, s DB, chID int64, claimed []int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.FinishDelivery(ctx, claimed[0], "", 0, false); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishDelivery(ctx, claimed[1], "503 from the receiver", time.Hour, false); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishDelivery(ctx, claimed[2], "410 from the receiver", 0, true); err != nil {
		t.Fatal(err)
	}
	byID := map[int64]bt.Delivery{}
	all, err := s.Deliveries(ctx, bt.DeliveryFilter{ChannelID: chID, Limit: 10})
	if err != nil || len(all) != 5 {
		t.Fatalf("deliveries: %d, %v; want 5", len(all), err)
	}
	for _, d := range all {
		byID[d.ID] = d
	}
	if d := byID[claimed[0]]; d.Status != bt.DeliverySent || d.SentAt == nil || d.LastError != "" {
		t.Errorf("the sent delivery: %+v", d)
	}
	if d := byID[claimed[1]]; d.Status != bt.DeliveryPending || d.LastError != "503 from the receiver" || time.Until(d.NextAttemptAt) < 50*time.Minute {
		t.Errorf("the delivery to retry: %+v; want PENDING for about an hour, with its error", d)
	}
	if d := byID[claimed[2]]; d.Status != bt.DeliveryFailed || d.LastError != "410 from the receiver" {
		t.Errorf("the delivery given up: %+v", d)
	}
	if failed, err := s.Deliveries(ctx, bt.DeliveryFilter{Status: bt.DeliveryFailed}); err != nil || len(failed) != 1 || failed[0].ID != claimed[2] {
		t.Errorf("the FAILED filter: %+v, %v", failed, err)
	}
	// A settled delivery is not settled again.
	if err := s.FinishDelivery(ctx, claimed[0], "late error", time.Minute, false); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Deliveries(ctx, bt.DeliveryFilter{ChannelID: chID, BeforeID: claimed[0] + 1, Limit: 1}); err != nil || len(d) != 1 || d[0].Status != bt.DeliverySent || d[0].LastError != "" {
		t.Errorf("the sent delivery after a late error: %+v, %v", d, err)
	}

}

// checkHeldForNoTime sees a claim held for no time, on a channel with room, due again at once,
// one attempt on.
func checkHeldForNoTime(t *testing.T, s DB) {
	t.Helper()
	ctx := context.Background()
	fast, err := s.CreateChannel(ctx, channel("fast"), nil, "alice")
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.QueueTest(ctx, fast.ID, testPayload("fast"))
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		got, _, err := s.ClaimDeliveries(ctx, 10, 0)
		if err != nil || len(got) != 1 || got[0].ID != d.ID || got[0].Attempts != attempt {
			t.Fatalf("claim %d with no hold: %+v, %v; want delivery %d, attempt %d", attempt, got, err, d.ID, attempt)
		}
	}
}

// An episode's RESOLVE waits, on each channel, until its TRIGGER there is settled.
func testResolveWaitsForItsTrigger(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	route := bt.NotificationRoute{Kinds: []bt.AlertKind{bt.AlertTargetRetried}, Jobs: []string{}, MinSeverity: bt.SeverityWarning}
	ch, err := s.CreateChannel(ctx, channel("ops"), []bt.NotificationRoute{route}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	alarm := bt.Alert{ID: "TARGET_RETRIED:job:j", Kind: bt.AlertTargetRetried, Severity: "WARNING", JobName: "j",
		Message: "1 target retried", Value: 1, Since: time.Now()}
	if _, err := s.SyncAlerts(ctx, []bt.Alert{alarm}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SyncAlerts(ctx, nil); err != nil { // the alarm clears: its episode resolves
		t.Fatal(err)
	}
	queued, err := s.Deliveries(ctx, bt.DeliveryFilter{ChannelID: ch.ID})
	if err != nil || len(queued) != 2 {
		t.Fatalf("deliveries after the episode opened and resolved: %+v, %v; want a TRIGGER and a RESOLVE", queued, err)
	}
	got, pending, err := s.ClaimDeliveries(ctx, 10, 0)
	if err != nil || pending != 2 || len(got) != 1 || got[0].Kind != bt.NotifyTrigger || got[0].Alert.Key != alarm.ID {
		t.Fatalf("first claim: %+v (pending %d), %v; want the TRIGGER alone", got, pending, err)
	}
	trigger := got[0].ID
	// Held for no time, the TRIGGER is due again; the RESOLVE still waits behind it.
	got, _, err = s.ClaimDeliveries(ctx, 10, time.Hour)
	if err != nil || len(got) != 1 || got[0].ID != trigger {
		t.Fatalf("second claim, the TRIGGER unsettled: %+v, %v; want the TRIGGER again, no RESOLVE", got, err)
	}
	if err := s.FinishDelivery(ctx, trigger, "", 0, false); err != nil {
		t.Fatal(err)
	}
	got, _, err = s.ClaimDeliveries(ctx, 10, time.Hour)
	if err != nil || len(got) != 1 || got[0].Kind != bt.NotifyResolve || got[0].Alert.ResolvedAt == nil {
		t.Fatalf("claim after the TRIGGER was sent: %+v, %v; want the RESOLVE, with its time", got, err)
	}
}

// channel is a webhook channel named name whose secret is read from the environment.
func channel(name string) store.StoredChannel {
	return store.StoredChannel{NotificationChannel: bt.NotificationChannel{Name: name, Kind: bt.ChannelWebhook,
		URL: "https://hooks.example.com/" + name, RatePerMinute: 60, Burst: 5}, Secret: "env:OPS_HOOK_SECRET"}
}

// testPayload is the alarm of a test delivery.
func testPayload(key string) bt.AlertPayload {
	return bt.AlertPayload{Key: "TEST:" + key, Kind: bt.AlertHeartbeatMissed, Severity: "WARNING", Message: "a test", FiredAt: time.Now()}
}

// channelRoutes returns channel id's routes, failing t on an error.
func channelRoutes(t *testing.T, s DB, id int64) []bt.NotificationRoute {
	t.Helper()
	routes, err := s.NotificationRoutes(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return routes
}
