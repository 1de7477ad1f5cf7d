package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/server"
)

// `baton serve -h` names every setting with its flag, variable and default.
func TestServeHelpListsEverySetting(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"serve", "-h"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("serve -h: %v, want flag.ErrHelp", err)
	}
	help := stdout.String()
	for _, s := range server.Settings() {
		env, def := s.Env, s.Default
		if s.OldEnv != "" {
			env += " or " + s.OldEnv
		}
		if def == "" {
			def = "none"
		}
		if !strings.Contains(help, "--"+s.Name+" ") && !strings.Contains(help, "--"+s.Name+"[") {
			t.Errorf("serve -h lacks the flag --%s:\n%s", s.Name, help)
		}
		if line := fmt.Sprintf("%s (env %s; default %s)", s.Usage, env, def); !strings.Contains(help, line) {
			t.Errorf("serve -h lacks %q:\n%s", line, help)
		}
	}
}

// README's settings table lists the settings of server.Settings, in order, with the same
// flags, variables, defaults and help.
func TestReadmeSettingsTable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `--") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	var want []string
	for _, s := range server.Settings() {
		want = append(want, readmeRow(s))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("README's settings table differs from server.Settings; its rows should read:\n%s\n\nREADME has:\n%s",
			strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// readmeRow is a setting's row of README's table.
func readmeRow(s server.Setting) string {
	env := "`" + s.Env + "`"
	if s.OldEnv != "" {
		env += " (or `" + s.OldEnv + "`)"
	}
	def := "none"
	if s.Default != "" {
		def = "`" + s.Default + "`"
	}
	return fmt.Sprintf("| `--%s` | %s | %s | %s |", s.Name, env, def, s.Usage)
}

// Flags win over variables, variables over defaults; an older variable name still works; a
// variable that does not parse is refused with its name, not silently replaced by the default.
func TestServeConfigFromEnvironment(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	c, err := parseServeConfig(nil, env(nil), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if d := server.DefaultConfig(); c.Env != d.Env || c.PoolSize != d.PoolSize || !c.Scheduler || c.Lease != d.Lease {
		t.Fatalf("no flags nor variables: %+v, want the defaults %+v", c, d)
	}
	c, err = parseServeConfig([]string{"--pool-size", "7", "--scheduler=false"}, env(map[string]string{
		"BATON_POOL_SIZE": "3", "BATON_LEASE": "45s", "DATABASE_URL": "postgres://old", "REDIS_URL": "redis://old",
		"BATON_REDIS_URL": "redis://new", "BATON_ALLOWED_ORIGINS": " https://a.example, ,https://b.example",
		"BATON_RETENTION_AUDIT_DAYS": "0", "BATON_NOTIFY_ALLOW_PRIVATE_NETWORKS": "true",
	}), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.PoolSize != 7 || c.Scheduler:
		t.Errorf("flags --pool-size 7 --scheduler=false over BATON_POOL_SIZE=3: pool %d, scheduler %v", c.PoolSize, c.Scheduler)
	case c.Lease != 45*time.Second:
		t.Errorf("BATON_LEASE=45s: lease %v", c.Lease)
	case c.DatabaseURL != "postgres://old" || c.RedisURL != "redis://new":
		t.Errorf("DATABASE_URL alone, REDIS_URL beside BATON_REDIS_URL: %q, %q; want the old name read and the new one winning", c.DatabaseURL, c.RedisURL)
	case strings.Join(c.AllowedOrigins, " ") != "https://a.example https://b.example":
		t.Errorf("BATON_ALLOWED_ORIGINS: %q", c.AllowedOrigins)
	case c.Retention.AuditLog >= 0:
		t.Errorf("BATON_RETENTION_AUDIT_DAYS=0: %v, want kept forever", c.Retention.AuditLog)
	case !c.NotifyAllowPrivateNetworks:
		t.Errorf("BATON_NOTIFY_ALLOW_PRIVATE_NETWORKS=true: private networks still refused")
	}
	if d := server.DefaultConfig(); d.NotifyAllowPrivateNetworks {
		t.Errorf("private networks are allowed by default")
	}
	for k, v := range map[string]string{"BATON_POOL_SIZE": "four", "BATON_SCHEDULER": "maybe", "BATON_POLL_INTERVAL": "10",
		"BATON_RETENTION_RUNS_DAYS": "-2", "BATON_LOG_LEVEL": "loud", "BATON_NOTIFY_ALLOW_PRIVATE_NETWORKS": "sometimes"} {
		name := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "BATON_")), "_", "-")
		if _, err := parseServeConfig(nil, env(map[string]string{k: v}), io.Discard, io.Discard); err == nil ||
			!strings.Contains(strings.ReplaceAll(strings.ToLower(err.Error()), "_", "-"), name) {
			t.Errorf("%s=%s: %v, want refused naming it", k, v, err)
		}
	}
}
