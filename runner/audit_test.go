package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// The audit log stores arguments capped and redacted when it writes them: a 50 KB refused
// payload is never stored whole, and a token never stored at all.
func TestAuditCapsAndRedactsAtWrite(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r := b.runner(nil)
	token := "bt_" + strings.Repeat("Q", 43)
	payload := map[string]any{"name": "charge", "reason": strings.Repeat("r", 50<<10), "token": token, "authorization": "Bearer " + token}
	if err := r.Audit().Record(ctx, "mallory", "updateJobSchedule", "job:charge", payload, "INVALID_INPUT"); err != nil {
		t.Fatal(err)
	}
	var size int
	var raw string
	if err := b.Pool.QueryRow(ctx, `SELECT octet_length(arguments::text), arguments::text FROM audit_log WHERE actor = 'mallory'`).Scan(&size, &raw); err != nil {
		t.Fatal(err)
	}
	if size > 9<<10 {
		t.Fatalf("stored %d bytes of arguments, want them capped near 8 KB", size)
	}
	if strings.Contains(raw, token) || strings.Contains(raw, "Bearer") {
		t.Fatalf("a token was stored: %.300s", raw)
	}
	entries, err := r.Audit().Log(ctx, bt.AuditFilter{Actor: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !entries[0].Truncated() || entries[0].Arguments["token"] != "[REDACTED]" || entries[0].Arguments["name"] != "charge" {
		t.Fatalf("entries %+v, want one truncated entry with the token redacted and the name kept", entries)
	}
	if n, _ := entries[0].Arguments["_originalBytes"].(float64); n < 50<<10 {
		t.Fatalf("original size %v, want the 50 KB asked", entries[0].Arguments["_originalBytes"])
	}
}

// Each audit filter narrows the log to what it names, alone and together, and pages by keyset.
func TestAuditLogFilters(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r := b.runner(nil)
	rows := []struct{ actor, action, target, outcome string }{
		{"alice", "startJob", "job:a", "ok"},
		{"alice", "cancelRun", "run:7", "ok"},
		{"bob", "startJob", "job:a", "FORBIDDEN"},
		{"bob", "pauseJob", "job:b", "ok"},
		{"carol", "startJob", "job:b", "ALREADY_RUNNING"},
	}
	for _, e := range rows {
		if err := r.Audit().Record(ctx, e.actor, e.action, e.target, nil, e.outcome); err != nil {
			t.Fatal(err)
		}
	}
	// The first two happened a day ago.
	if _, err := b.Pool.Exec(ctx, `UPDATE audit_log SET created_at = now() - interval '1 day' WHERE id IN (SELECT id FROM audit_log ORDER BY id LIMIT 2)`); err != nil {
		t.Fatal(err)
	}
	var now time.Time
	if err := b.Pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	hourAgo := now.Add(-time.Hour)
	list := func(f bt.AuditFilter) string {
		t.Helper()
		got, err := r.Audit().Log(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range got {
			out = append(out, fmt.Sprintf("%s %s %s %s", e.Actor, e.Action, e.Target, e.Outcome))
		}
		return strings.Join(out, "; ")
	}
	cases := []struct {
		name string
		f    bt.AuditFilter
		want string
	}{
		{"all, newest first", bt.AuditFilter{}, "carol startJob job:b ALREADY_RUNNING; bob pauseJob job:b ok; bob startJob job:a FORBIDDEN; alice cancelRun run:7 ok; alice startJob job:a ok"},
		{"actor", bt.AuditFilter{Actor: "alice"}, "alice cancelRun run:7 ok; alice startJob job:a ok"},
		{"action", bt.AuditFilter{Action: "startJob"}, "carol startJob job:b ALREADY_RUNNING; bob startJob job:a FORBIDDEN; alice startJob job:a ok"},
		{"target", bt.AuditFilter{Target: "job:b"}, "carol startJob job:b ALREADY_RUNNING; bob pauseJob job:b ok"},
		{"outcome", bt.AuditFilter{Outcome: "FORBIDDEN"}, "bob startJob job:a FORBIDDEN"},
		{"since", bt.AuditFilter{Since: &hourAgo}, "carol startJob job:b ALREADY_RUNNING; bob pauseJob job:b ok; bob startJob job:a FORBIDDEN"},
		{"until", bt.AuditFilter{Until: &hourAgo}, "alice cancelRun run:7 ok; alice startJob job:a ok"},
		{"together", bt.AuditFilter{Action: "startJob", Target: "job:a", Since: &hourAgo}, "bob startJob job:a FORBIDDEN"},
		{"nothing matches", bt.AuditFilter{Actor: "nobody"}, ""},
		{"page", bt.AuditFilter{Action: "startJob", Limit: 1}, "carol startJob job:b ALREADY_RUNNING"},
	}
	for _, c := range cases {
		if got := list(c.f); got != c.want {
			t.Errorf("%s: [%s], want [%s]", c.name, got, c.want)
		}
	}
	first, err := r.Audit().Log(ctx, bt.AuditFilter{Action: "startJob", Limit: 1})
	if err != nil || len(first) != 1 {
		t.Fatal(first, err)
	}
	if got := list(bt.AuditFilter{Action: "startJob", BeforeID: first[0].ID}); got != "bob startJob job:a FORBIDDEN; alice startJob job:a ok" {
		t.Fatalf("next page [%s]", got)
	}
}
