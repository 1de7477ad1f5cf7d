package storetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Concurrent syncs of the same alarm open one episode; a sync without it resolves it; the
// next firing opens a new, unacknowledged episode; an acknowledgement and a silence are read
// back with the open episodes.
func testAlertEpisodesOpenOnce(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	alarm := bt.Alert{ID: "TARGET_RETRIED:job:j", Kind: bt.AlertTargetRetried, Severity: "WARNING", JobName: "j",
		Message: "1 target retried", Value: 1, Since: time.Now()}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.SyncAlerts(ctx, []bt.Alert{alarm}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var n int
	if err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM alert_history`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d episodes after 16 concurrent syncs of one alarm, want 1", n)
	}
	acked, err := s.AckAlert(ctx, alarm.ID, "alice")
	if err != nil || acked.AckedBy != "alice" {
		t.Fatalf("ack: %+v, %v", acked, err)
	}
	if _, err := s.SilenceAlert(ctx, alarm.ID, time.Hour, "bob", "noisy"); err != nil {
		t.Fatal(err)
	}
	got, err := s.SyncAlerts(ctx, []bt.Alert{alarm})
	if err != nil || len(got) != 1 || got[0].AckedBy != "alice" || got[0].SilencedBy != "bob" || got[0].SilencedUntil == nil {
		t.Fatalf("open episodes %+v, %v: want the one acknowledged by alice, silenced by bob", got, err)
	}
	if got, err = s.SyncAlerts(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("after the alarm cleared: %+v, %v", got, err)
	}
	if _, err := s.AckAlert(ctx, alarm.ID, "alice"); bt.CodeOf(err) != bt.CodeNotFound {
		t.Fatalf("ack of a resolved alarm: %v, want NOT_FOUND", err)
	}
	got, err = s.SyncAlerts(ctx, []bt.Alert{alarm})
	if err != nil || len(got) != 1 || got[0].AckedBy != "" || got[0].EpisodeID == acked.EpisodeID {
		t.Fatalf("the alarm again: %+v, %v: want a new, unacknowledged episode", got, err)
	}
	hist, err := s.AlertHistory(ctx, bt.AlertHistoryFilter{Key: alarm.ID, Limit: 10})
	if err != nil || len(hist) != 2 || hist[1].ResolvedAt == nil {
		t.Fatalf("history %+v, %v: want 2 episodes, the older resolved", hist, err)
	}
}

// Audit stores the sanitized record: secrets redacted and arguments capped, whoever calls it.
func testAuditStoredSanitized(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	if err := s.Audit(ctx, store.AuditRecord{Actor: "a", Action: "x", Target: "job:j", Outcome: "ok",
		Arguments: map[string]any{"password": "hunter2", "reason": strings.Repeat("r", 40<<10)}}); err != nil {
		t.Fatal(err)
	}
	var size int
	var raw string
	if err := s.Pool.QueryRow(ctx, `SELECT octet_length(arguments::text), arguments::text FROM audit_log`).Scan(&size, &raw); err != nil {
		t.Fatal(err)
	}
	if size > 9<<10 || strings.Contains(raw, "hunter2") || !strings.Contains(raw, `"_truncated": true`) {
		t.Fatalf("stored %d bytes: %.200s; want capped, marked truncated, password redacted", size, raw)
	}
}
