package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/runner/redislock"
)

// programFields are the fields of Config that a program sets and `baton serve` does not.
var programFields = map[string]bool{"Logger": true, "Version": true, "Jobs": true, "JobsFunc": true,
	"AdminTokenName": true, "Ready": true, "Console": true, "TracerProvider": true,
	"drainWait": true} // the tests' hook on the drain delay

// Every setting writes one field of Config of its own, every field but a program's is a
// setting, and no flag or variable name is used twice.
func TestSettingsCoverConfig(t *testing.T) {
	t.Parallel()
	sample := map[string]string{"string": "x", "int": "7", "bool": "true", "duration": "3s", "list": "a,b", "days": "5"}
	covered := map[string]string{}
	names := map[string]bool{}
	for _, s := range Settings() {
		for _, n := range []string{s.Name, s.Env, s.OldEnv} {
			if n != "" && names[n] {
				t.Errorf("setting %s: name %s used twice", s.Name, n)
			}
			names[n] = true
		}
		if s.Usage == "" {
			t.Errorf("setting %s has no help", s.Name)
		}
		var c Config
		text, ok := sample[s.Type]
		if !ok {
			t.Fatalf("setting %s: unknown type %q", s.Name, s.Type)
		}
		if err := s.Value(&c).Set(text); err != nil {
			t.Fatalf("setting %s: set %q: %v", s.Name, text, err)
		}
		changed := changedFields(reflect.ValueOf(c), "")
		if len(changed) != 1 {
			t.Fatalf("setting %s changed fields %v, want one", s.Name, changed)
		}
		if other, dup := covered[changed[0]]; dup {
			t.Errorf("settings %s and %s both set %s", other, s.Name, changed[0])
		}
		covered[changed[0]] = s.Name
		if got := s.Value(&c).String(); got != text {
			t.Errorf("setting %s: set %q, reads back %q", s.Name, text, got)
		}
	}
	for _, f := range allFields(reflect.TypeOf(Config{}), "") {
		if _, ok := covered[f]; !ok && !programFields[f] {
			t.Errorf("Config.%s is neither a setting nor a program's field", f)
		}
	}
}

// changedFields lists the fields of v (a struct, Retention's fields by their path) that are
// not zero.
func changedFields(v reflect.Value, prefix string) []string {
	var out []string
	for i := range v.NumField() {
		f, name := v.Field(i), prefix+v.Type().Field(i).Name
		if f.Kind() == reflect.Struct && f.Type() == reflect.TypeOf(runner.Retention{}) {
			out = append(out, changedFields(f, name+".")...)
		} else if !f.IsZero() {
			out = append(out, name)
		}
	}
	return out
}

func allFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == reflect.TypeOf(runner.Retention{}) {
			out = append(out, allFields(f.Type, prefix+f.Name+".")...)
		} else {
			out = append(out, prefix+f.Name)
		}
	}
	return out
}

// The defaults of `baton serve` are the runner's, and a zero Config takes them in Serve
// where a zero is no valid value.
func TestDefaultConfigIsTheRunners(t *testing.T) {
	t.Parallel()
	d := DefaultConfig()
	want := runner.Retention{Runs: runner.DefaultRunRetention, RunErrors: runner.DefaultRunErrorRetention,
		ScheduleEvents: runner.DefaultScheduleEventRetention, CallStats: runner.DefaultCallStatsRetention,
		AuditLog: runner.DefaultAuditRetention}
	switch {
	case d.Env != runner.DefaultEnv || d.PoolSize != runner.DefaultPoolSize || d.PollInterval != runner.DefaultPollInterval ||
		d.Lease != runner.DefaultJobLease || d.ShutdownTimeout != runner.DefaultShutdownTimeout || !d.Scheduler:
		t.Fatalf("DefaultConfig %+v differs from the runner's defaults", d)
	case d.Retention != want:
		t.Fatalf("DefaultConfig retention %+v, want the runner's %+v", d.Retention, want)
	}
	var z Config
	z.setDefaults()
	if z.Env != d.Env || z.Addr != d.Addr || z.PollInterval != d.PollInterval || z.Lease != d.Lease ||
		z.ShutdownTimeout != d.ShutdownTimeout || z.LogFormat != d.LogFormat || z.LogLevel != d.LogLevel || z.Instance == "" {
		t.Fatalf("a zero Config in Serve: %+v, want the defaults %+v", z, d)
	}
}

// A runner embedded without an Env locks in the namespace that `baton serve` uses by default,
// so the two kinds of instance, sharing a Redis and a database, exclude each other.
func TestRunnerWithoutEnvSharesServeNamespace(t *testing.T) {
	t.Parallel()
	url := testenv.Schema(t)
	rc, _ := testenv.Redis(t)
	r, err := runner.New(runner.Config{DB: testenv.Pool(t, url), Redis: rc, PoolSize: 1, MaintenanceCron: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	job := testenv.RandomName("envjob")
	gate := make(chan struct{})
	err = r.Register(context.Background(), runner.NewJob(runner.JobInfo{Name: job, Description: "Holds its lock until the test ends.", Version: "1"},
		func(ctx context.Context, _ *runner.Run) error {
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { close(gate); cancel(); <-done })
	if _, err := r.Start(context.Background(), runner.StartParams{Job: job}); err != nil {
		t.Fatal(err)
	}
	env := DefaultConfig().Env
	testenv.Eventually(t, 10*time.Second, "the run's lock under baton:{"+env+"}:", func() bool {
		_, held, err := redislock.New(rc, env).Holder(context.Background(), job)
		return err == nil && held
	})
}

// The log is JSON unless it goes to a terminal or log-format says text; "auto" is the default.
func TestNewLoggerFormats(t *testing.T) {
	t.Parallel()
	if d := DefaultConfig().LogFormat; d != "auto" {
		t.Fatalf("default log-format %q, want auto", d)
	}
	for _, c := range []struct {
		format string
		json   bool
	}{{"auto", true}, {"", true}, {"json", true}, {"text", false}} {
		var buf bytes.Buffer
		log, err := Config{LogFormat: c.format}.NewLogger(&buf)
		if err != nil {
			t.Fatalf("format %q: %v", c.format, err)
		}
		log.Info("hello", "run_id", 7)
		line := strings.TrimSpace(buf.String())
		if isJSON := strings.HasPrefix(line, "{"); isJSON != c.json {
			t.Errorf("format %q to a buffer logged %q; JSON: %v, want %v", c.format, line, isJSON, c.json)
		}
	}
	if _, err := (Config{LogFormat: "yaml"}).NewLogger(io.Discard); err == nil || !strings.Contains(err.Error(), "log-format") {
		t.Errorf("log-format yaml: %v, want an error naming log-format", err)
	}
}

// The secret key reads as 32 bytes of hex or base64, and anything else is refused.
func TestSecretKeyDecodes(t *testing.T) {
	t.Parallel()
	hexKey := strings.Repeat("ab", 32)
	b64Key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for _, tc := range []struct {
		text string
		n    int
		ok   bool
	}{{"", 0, true}, {hexKey, 32, true}, {b64Key, 32, true}, {"short", 0, false}, {strings.Repeat("ab", 16), 0, false}} {
		c := Config{SecretKey: tc.text}
		key, err := c.secretKey()
		if (err == nil) != tc.ok || len(key) != tc.n {
			t.Errorf("secret key %q: %d bytes, %v; want %d bytes, ok %v", tc.text, len(key), err, tc.n, tc.ok)
		}
	}
}
