package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/notify"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// The notify command's help exits 0 and its bad command lines exit 2 before any call.
func TestNotifyUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{{"notify", "-h"}, {"notify", "channels", "-h"}, {"notify", "routes", "add", "--help"}} {
		if res := baton(ctx, args...); res.code != exitOK || !strings.HasPrefix(res.stdout, "usage:\n  baton notify") {
			t.Errorf("baton %s: exit %d (%v), want its usage and exit 0", strings.Join(args, " "), res.code, res.err)
		}
	}
	api := []string{"--url", "http://127.0.0.1:1", "--token", "bt_unused"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"notify"}, "no subcommand given"},
		{[]string{"notify", "email"}, `unknown subcommand "email"`},
		{[]string{"notify", "channels", "add", "x", "--kind", "email", "--secret", "s"}, "--kind must be webhook, slack or pagerduty"},
		{[]string{"notify", "channels", "add", "x", "--kind", "webhook"}, "give --secret or --secret-file"},
		{[]string{"notify", "channels", "add", "x", "--kind", "webhook", "--secret", "a", "--secret-file", "/dev/null"}, "not both"},
		{[]string{"notify", "channels", "set", "x"}, "nothing to change"},
		{[]string{"notify", "routes", "add"}, "give --channel"},
		{[]string{"notify", "routes", "add", "--channel", "x", "--min-severity", "low"}, "--min-severity must be"},
		{[]string{"notify", "deliveries", "--status", "lost"}, "--status must be"},
	} {
		args := c.args
		if len(args) > 1 {
			args = append(args, api...)
		}
		res := baton(ctx, args...)
		if res.code != exitUsage || res.err == nil || !strings.Contains(res.err.Error(), c.want) {
			t.Errorf("baton %s: exit %d (%v), want exit 2 and %q", strings.Join(c.args, " "), res.code, res.err, c.want)
		}
	}
}

// Channels and routes through the CLI against a real server: added, listed without their
// secret, tested (the receiver gets it), refused with the API's exit code, removed.
func TestNotifyCommands(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(rcv.Close)
	ctx, _, tokens, srv := cliServerWith(t, func(c *runner.Config) {
		c.Notify = runner.NotifyConfig{Sender: &notify.Sender{AllowPrivateNetworks: true}, SecretKey: []byte("0123456789abcdef0123456789abcdef"), Interval: 50 * time.Millisecond}
	})
	admin, _, err := httpapi.CreateToken(ctx, tokens, "cli-notify-admin", "ADMIN")
	if err != nil {
		t.Fatal(err)
	}
	as := func(want int, args ...string) cliResult {
		t.Helper()
		res := baton(ctx, append(args, "--url", srv.URL, "--token", admin)...)
		if res.code != want {
			t.Fatalf("baton %s: exit %d (%v), want %d\n%s", strings.Join(args, " "), res.code, res.err, want, res.stdout)
		}
		return res
	}
	const secret = "cli-secret-never-printed-77"
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	as(exitOK, "notify", "channels", "add", "ops", "--kind", "webhook", "--endpoint", rcv.URL, "--secret-file", file, "--rate", "60")
	as(exitAPI, "notify", "channels", "add", "bad", "--kind", "webhook", "--endpoint", "gopher://x", "--secret", "s")
	as(exitOK, "notify", "routes", "add", "--channel", "ops", "--kinds", "ambiguous_effect,heartbeat_missed", "--jobs", "pay-*")
	as(exitNotFound, "notify", "routes", "add", "--channel", "nope")
	res := as(exitOK, "notify", "channels", "list")
	if !strings.Contains(res.stdout, "ops") || !strings.Contains(res.stdout, "60/min") || strings.Contains(res.stdout, secret) {
		t.Fatalf("channels list:\n%s", res.stdout)
	}
	var list struct{ Channels []wireChannel }
	if err := json.Unmarshal([]byte(as(exitOK, "notify", "channels", "list", "--output", "json").stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Channels) != 1 || len(list.Channels[0].Routes) != 1 || strings.Join(list.Channels[0].Routes[0].Kinds, ",") != "HEARTBEAT_MISSED,AMBIGUOUS_EFFECT" &&
		strings.Join(list.Channels[0].Routes[0].Kinds, ",") != "AMBIGUOUS_EFFECT,HEARTBEAT_MISSED" {
		t.Fatalf("channels list --output json: %+v", list)
	}
	if res := as(exitOK, "notify", "routes", "list"); !strings.Contains(res.stdout, "pay-*") {
		t.Fatalf("routes list:\n%s", res.stdout)
	}
	as(exitNotFound, "notify", "routes", "remove", "nope")
	as(exitOK, "notify", "routes", "add", "--channel", "ops", "--min-severity", "critical")
	as(exitOK, "notify", "routes", "remove", list.Channels[0].Routes[0].ID)
	if res := as(exitOK, "notify", "routes", "list", "--channel", "ops"); strings.Contains(res.stdout, "pay-*") || !strings.Contains(res.stdout, "CRITICAL") {
		t.Fatalf("routes list after removing the first:\n%s", res.stdout)
	}
	as(exitOK, "notify", "channels", "test", "ops")
	testenv.Eventually(t, 20*time.Second, "the test notification", func() bool { return hits.Load() == 1 })
	testenv.Eventually(t, 20*time.Second, "the delivery to read SENT", func() bool {
		return strings.Contains(as(exitOK, "notify", "deliveries", "--channel", "ops").stdout, "SENT")
	})
	// Each delivery names its channel.
	lines := strings.Split(strings.TrimSpace(as(exitOK, "notify", "deliveries").stdout), "\n")
	if len(lines) != 2 || strings.Fields(lines[0])[1] != "CHANNEL" || strings.Fields(lines[1])[1] != "ops" {
		t.Fatalf("notify deliveries: want a CHANNEL column naming ops:\n%s", strings.Join(lines, "\n"))
	}
	as(exitOK, "notify", "channels", "set", "ops", "--burst", "2")
	as(exitOK, "notify", "channels", "remove", "ops")
	as(exitNotFound, "notify", "channels", "remove", "ops")
}
