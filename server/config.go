package server

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/tracing"
)

// Config is every setting of an instance, and what a program embedding Baton adds to it (its
// jobs, logger, hooks). Settings lists the settings, each with its flag, environment variable,
// default and help; `baton serve` reads them from there and DefaultConfig returns their
// defaults. Start from DefaultConfig, or leave a field zero: a zero Env, Addr, PollInterval,
// Lease, ShutdownTimeout, LogFormat or LogLevel takes its default in Serve. PoolSize,
// Scheduler and the flags keep their zero (no workers, no scheduler, off), which is why
// DefaultConfig is the way to get the defaults of `baton serve`.
type Config struct {
	// DatabaseURL is the PostgreSQL URL; required. It may list several hosts
	// (postgres://h1:5432,h2:5432/baton?target_session_attrs=read-write) and may point at
	// PgBouncer in transaction mode, given DatabaseDirectURL (see docs/deployment.md).
	DatabaseURL string
	// DatabaseDirectURL is a URL of the same database that bypasses any connection pooler; ""
	// means DatabaseURL. Set it when DatabaseURL points at PgBouncer in transaction mode: the
	// migrations (which hold a session-level advisory lock) and the LISTENs for schedule
	// changes and token revocations use it, and the pool on DatabaseURL then runs its queries
	// without server-side prepared statements (pgx's cache_describe mode, unless DatabaseURL
	// names a default_query_exec_mode of its own).
	DatabaseDirectURL string
	// RedisURL is the Redis URL; required. Its scheme picks the topology: redis:// or
	// rediss:// (TLS) for one server, redis+sentinel://h1,h2,h3/master for Sentinel,
	// redis+cluster://h1,h2,h3 for Cluster (see docs/deployment.md).
	RedisURL string
	// RedisCAFile is a PEM file of the CA certificates that sign the Redis servers'
	// certificates, for rediss URLs; "" trusts the system's roots.
	RedisCAFile string
	// Env namespaces Redis keys and channels (baton:{Env}:...); "" means runner.DefaultEnv.
	// Instances that share a Redis and a database must share it too.
	Env string
	// Addr to listen on; "" means ":8080". Use "127.0.0.1:0" for a free port.
	Addr string
	// Instance names this process in runs and logs; "" means host-pid.
	Instance string
	// PoolSize is the number of worker slots; 0 runs no jobs here (an API-only instance).
	PoolSize int
	// Scheduler runs the cron scheduler and the lease recoverer here.
	Scheduler bool
	// PollInterval of the recoverer and the scheduler's safety poll; 0 means
	// runner.DefaultPollInterval.
	PollInterval time.Duration
	// Lease is the default lease of jobs that set none; 0 means runner.DefaultJobLease.
	Lease time.Duration
	// ShutdownTimeout bounds how long shutdown waits for jobs to reach a boundary; 0 means
	// runner.DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// PublicURL is the instance's base URL as its users reach it (https://baton.example.com,
	// behind the load balancer): notifications link the console there. "" sends no links.
	PublicURL string
	// DrainDelay is how long an instance told to stop keeps answering with readiness 503
	// "draining" before it stops taking work and closes its listener, for load balancers to
	// take it out first; 0 closes at once. The shutdown timeout follows it.
	DrainDelay time.Duration
	// StartTimeout is how long start-up retries PostgreSQL (with backoff) when it cannot be
	// reached, answering /healthz 200 and /readyz 503 "starting" meanwhile; 0 tries once.
	StartTimeout time.Duration
	// Demo asks for the demo jobs and a ready admin token. Serve does not read it: the demo
	// jobs take their sizes from the environment, so `baton serve` (package main) wires them
	// through JobsFunc and AdminTokenName.
	Demo bool
	// DevMode opens the playground and introspection to every role.
	DevMode bool
	// LogFormat is "auto" (text when the log goes to a terminal, JSON otherwise), "json" or
	// "text", and LogLevel "debug", "info", "warn" or "error": the logger NewLogger makes.
	// Serve logs to Logger.
	LogFormat, LogLevel string
	// TracesExporter is where the instance's spans go: "none" (or "") for nowhere, or "otlp"
	// for an OTLP receiver, over http/protobuf or grpc as OTEL_EXPORTER_OTLP_PROTOCOL says,
	// at OTEL_EXPORTER_OTLP_ENDPOINT; the other standard OTEL_* variables apply (package
	// tracing). Ignored when TracerProvider is set.
	TracesExporter string
	// AllowedOrigins are browser origins allowed besides the server's own.
	AllowedOrigins []string
	// DBMaxConns sizes the PostgreSQL pool; 0 means 2 × PoolSize + 8: a run may hold two
	// connections while its batch results are written behind (two writes in flight).
	DBMaxConns int
	// Retention is how long the retention job keeps runs, run errors, schedule events, call
	// statistics and audit rows (see runner.Retention); zero periods mean the defaults,
	// negative ones keep the rows forever.
	Retention runner.Retention
	// SecretKey encrypts the notification channels' secrets at rest (AES-256-GCM): 32 bytes
	// as base64 or 64 hex digits, the same on every instance. "" stores no literal secret:
	// channels then take only env:BATON_NOTIFY_NAME references (docs/deployment.md).
	SecretKey string
	// NotifyAllowPrivateNetworks lets notification deliveries reach loopback, link-local and
	// private addresses (RFC 1918, ULA, carrier-grade NAT); without it they reach public
	// addresses only (docs/operator-runbook.md, "Threat model").
	NotifyAllowPrivateNetworks bool

	// The fields below are for a program embedding Baton; they are no settings of `baton
	// serve`.

	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Version is recorded on runs and shown by the console; "" means "dev".
	Version string
	// Jobs to register.
	Jobs []runner.Job
	// JobsFunc, if set, makes more jobs once the database pool is open (jobs that keep
	// their own tables use it).
	JobsFunc func(pool *pgxpool.Pool) ([]runner.Job, error)
	// AdminTokenName, when set, mints a fresh admin token of this instance's own at every
	// start and passes it to Ready: named AdminTokenName, the Instance and the start's number
	// (dev-admin-web-1.3), since token names are never reissued. It is revoked when the
	// instance stops cleanly; other instances' tokens are left alone. For development.
	AdminTokenName string
	// Ready, if set, is called once the instance serves, with its base URL and the minted
	// admin token (if any).
	Ready func(base, adminToken string)
	// Console serves the admin SPA under /admin/ and the playground at /playground; nil
	// means the console embedded in this module (package frontend).
	Console http.Handler
	// TracerProvider, if set, receives the instance's spans (runs and GraphQL operations)
	// instead of the provider TracesExporter would make: a program's own. Serve does not shut
	// it down.
	TracerProvider trace.TracerProvider

	// drainWait, when set, replaces the wait of DrainDelay (tests hold the delay open with it).
	drainWait func(time.Duration)
}

// Options is the former name of Config.
//
// Deprecated: use Config.
type Options = Config

// Setting is one setting of an instance: the Config field it sets, the flag and environment
// variable `baton serve` reads it from, its default and its help line.
type Setting struct {
	// Name is the flag's name, without dashes ("pool-size").
	Name string
	// Env is the environment variable: BATON_ and the name in capitals (BATON_POOL_SIZE).
	Env string
	// OldEnv is an older variable still read when Env is unset; "" if none.
	OldEnv string
	// Type names the value for help output: string, int, bool, duration, list or days.
	Type string
	// Default is the default as the flag spells it; "" when there is none (or it is
	// computed, as Instance's host-pid is).
	Default string
	// Usage is the help line.
	Usage string

	value func(c *Config) Value
}

// Value is a setting's field of one Config, read and written as text. Its methods are those
// of flag.Value, so a flag set can hold it; a bool's value also reports IsBoolFlag.
type Value interface {
	String() string
	Set(text string) error
}

// Value returns the setting's field of c.
func (s Setting) Value(c *Config) Value { return s.value(c) }

// Settings returns every setting of an instance, in the order of `baton serve -h`.
func Settings() []Setting { return append([]Setting(nil), settings...) }

// settings is the one table of settings: names, defaults and help. The runner's defaults come
// from its constants, so an embedded runner and `baton serve` cannot disagree.
var settings = []Setting{
	stringSetting("database-url", "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/baton?sslmode=disable",
		"PostgreSQL URL; may list several hosts (with target_session_attrs=read-write) or point at PgBouncer in transaction mode",
		func(c *Config) *string { return &c.DatabaseURL }),
	stringSetting("database-direct-url", "", "",
		"PostgreSQL URL bypassing PgBouncer, for migrations and LISTEN, when database-url points at PgBouncer in transaction mode; empty means database-url",
		func(c *Config) *string { return &c.DatabaseDirectURL }),
	stringSetting("redis-url", "REDIS_URL", "redis://127.0.0.1:6379/0",
		"Redis URL: redis://, rediss:// (TLS), redis+sentinel://h1,h2,h3/master or redis+cluster://h1,h2,h3",
		func(c *Config) *string { return &c.RedisURL }),
	stringSetting("redis-ca-file", "", "", "PEM file of the CA that signs the Redis servers' certificates (rediss URLs); empty trusts the system's",
		func(c *Config) *string { return &c.RedisCAFile }),
	stringSetting("env", "", runner.DefaultEnv,
		"environment name: the Redis key namespace baton:{env}:", func(c *Config) *string { return &c.Env }),
	stringSetting("addr", "", ":8080", "HTTP listen address", func(c *Config) *string { return &c.Addr }),
	stringSetting("instance", "", "", "instance name in runs and logs; empty means host-pid",
		func(c *Config) *string { return &c.Instance }),
	setting("pool-size", "int", runner.DefaultPoolSize, "worker slots; 0 runs no jobs here (an API-only instance)",
		func(c *Config) *int { return &c.PoolSize }, newIntValue),
	setting("scheduler", "bool", true, "run the cron scheduler and lease recoverer here",
		func(c *Config) *bool { return &c.Scheduler }, newBoolValue),
	setting("poll-interval", "duration", runner.DefaultPollInterval, "lease recovery and schedule safety poll",
		func(c *Config) *time.Duration { return &c.PollInterval }, newDurationValue),
	setting("lease", "duration", runner.DefaultJobLease, "default lease for jobs that set none",
		func(c *Config) *time.Duration { return &c.Lease }, newDurationValue),
	setting("shutdown-timeout", "duration", runner.DefaultShutdownTimeout, "how long SIGTERM waits for jobs to reach a boundary",
		func(c *Config) *time.Duration { return &c.ShutdownTimeout }, newDurationValue),
	stringSetting("public-url", "", "", "base URL users reach the instance at (https://baton.example.com); notifications link the console's run, target and alarm pages there; empty sends no links",
		func(c *Config) *string { return &c.PublicURL }),
	setting("drain-delay", "duration", 5*time.Second, "on SIGTERM, how long readiness says 503 draining while the instance still answers, before it stops; 0 stops at once",
		func(c *Config) *time.Duration { return &c.DrainDelay }, newDurationValue),
	setting("start-timeout", "duration", time.Minute, "how long start-up retries an unreachable PostgreSQL (readiness 503 starting meanwhile); 0 tries once",
		func(c *Config) *time.Duration { return &c.StartTimeout }, newDurationValue),
	setting("demo", "bool", false, "register the demo jobs and print a ready admin token",
		func(c *Config) *bool { return &c.Demo }, newBoolValue),
	setting("dev", "bool", false, "development mode: playground and introspection for every role",
		func(c *Config) *bool { return &c.DevMode }, newBoolValue),
	stringSetting("log-format", "", "auto", "auto (text on a terminal, JSON otherwise), json or text", func(c *Config) *string { return &c.LogFormat }),
	stringSetting("log-level", "", "info", "debug, info, warn or error", func(c *Config) *string { return &c.LogLevel }),
	otelSetting(stringSetting("traces-exporter", "", tracing.ExporterNone,
		"where spans go: none, or otlp (OTLP over http/protobuf or grpc per OTEL_EXPORTER_OTLP_PROTOCOL, to OTEL_EXPORTER_OTLP_ENDPOINT; the other OTEL_* variables apply)",
		func(c *Config) *string { return &c.TracesExporter }), "OTEL_TRACES_EXPORTER"),
	setting("allowed-origins", "list", nil, "comma-separated browser origins allowed besides the server's own",
		func(c *Config) *[]string { return &c.AllowedOrigins }, newListValue),
	setting("db-max-conns", "int", 0, "PostgreSQL pool size; 0 means 2 × pool-size + 8",
		func(c *Config) *int { return &c.DBMaxConns }, newIntValue),
	stringSetting("secret-key", "", "", "key encrypting notification channel secrets at rest: 32 bytes as base64 or 64 hex digits, the same on every instance; empty refuses literal secrets (env:BATON_NOTIFY_NAME references still work)",
		func(c *Config) *string { return &c.SecretKey }),
	setting("notify-allow-private-networks", "bool", false, "let notification deliveries reach loopback, link-local and private addresses; off, they reach public addresses only",
		func(c *Config) *bool { return &c.NotifyAllowPrivateNetworks }, newBoolValue),
	daysSetting("retention-runs-days", runner.DefaultRunRetention, "days ended runs are kept; 0 keeps them forever",
		func(c *Config) *time.Duration { return &c.Retention.Runs }),
	daysSetting("retention-run-errors-days", runner.DefaultRunErrorRetention, "days run error rows are kept; 0 keeps them forever",
		func(c *Config) *time.Duration { return &c.Retention.RunErrors }),
	daysSetting("retention-schedule-events-days", runner.DefaultScheduleEventRetention, "days skipped and missed fires are kept; 0 keeps them forever",
		func(c *Config) *time.Duration { return &c.Retention.ScheduleEvents }),
	daysSetting("retention-call-stats-days", runner.DefaultCallStatsRetention, "days per-minute call statistics are kept; 0 keeps them forever",
		func(c *Config) *time.Duration { return &c.Retention.CallStats }),
	daysSetting("retention-audit-days", runner.DefaultAuditRetention, "days audit rows (and resolved alarm episodes) are kept; 0 keeps them forever",
		func(c *Config) *time.Duration { return &c.Retention.AuditLog }),
}

// DefaultConfig returns the defaults of every setting, those of `baton serve`.
func DefaultConfig() Config {
	var c Config
	for _, s := range settings {
		if err := s.value(&c).Set(s.Default); err != nil {
			panic(fmt.Sprintf("server: default of setting %s: %v", s.Name, err))
		}
	}
	return c
}

// setDefaults fills the fields whose zero is no valid value with their defaults.
func (o *Config) setDefaults() {
	d := DefaultConfig()
	if o.Env == "" {
		o.Env = d.Env
	}
	if o.Addr == "" {
		o.Addr = d.Addr
	}
	if o.PollInterval <= 0 {
		o.PollInterval = d.PollInterval
	}
	if o.Lease <= 0 {
		o.Lease = d.Lease
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = d.ShutdownTimeout
	}
	if o.LogFormat == "" {
		o.LogFormat = d.LogFormat
	}
	if o.LogLevel == "" {
		o.LogLevel = d.LogLevel
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Instance == "" {
		o.Instance = defaultInstance()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
}

// secretKey decodes SecretKey: nil for none, else 32 bytes from base64 or hex.
func (o *Config) secretKey() ([]byte, error) {
	text := strings.TrimSpace(o.SecretKey)
	if text == "" {
		return nil, nil
	}
	if b, err := hex.DecodeString(text); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(text); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("secret-key must be 32 bytes as base64 or 64 hex digits (openssl rand -base64 32)")
}

// defaultInstance names this process when Instance is empty.
func defaultInstance() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// NewLogger returns the logger of LogFormat and LogLevel, writing to w: text for "text", and
// for "auto" (or "") when w is a terminal; JSON otherwise. A line logged with a context that
// holds a span carries its trace_id and span_id (tracing.LogHandler). An unknown format or
// level is an error, naming the setting.
func (o Config) NewLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if o.LogLevel != "" {
		if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
			return nil, fmt.Errorf("log-level must be debug, info, warn or error, not %q", o.LogLevel)
		}
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationsAsText}
	var h slog.Handler
	switch o.LogFormat {
	case "", "auto":
		if isTerminal(w) {
			h = slog.NewTextHandler(w, opts)
		} else {
			h = slog.NewJSONHandler(w, opts)
		}
	case "json":
		h = slog.NewJSONHandler(w, opts)
	case "text":
		h = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("log-format must be auto, json or text, not %q", o.LogFormat)
	}
	return slog.New(tracing.LogHandler(h)), nil
}

// durationsAsText writes a time.Duration as Go spells it ("30s", "1m30s") instead of its
// nanoseconds, which the JSON handler writes otherwise (30000000000).
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// isTerminal reports whether w is a terminal, where a person reads text better than JSON.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// setting makes a Setting of a field of type T; wrap turns the field into its Value, which
// also spells the default.
func setting[T any](name, typ string, def T, usage string, field func(*Config) *T, wrap func(*T) Value) Setting {
	return Setting{
		Name: name, Env: "BATON_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")),
		Type: typ, Default: wrap(&def).String(), Usage: usage,
		value: func(c *Config) Value { return wrap(field(c)) },
	}
}

// otelSetting is s read from a standard OpenTelemetry variable rather than a BATON_ one.
func otelSetting(s Setting, env string) Setting {
	s.Env = env
	return s
}

func stringSetting(name, oldEnv, def, usage string, field func(*Config) *string) Setting {
	s := setting(name, "string", def, usage, field, newStringValue)
	s.OldEnv = oldEnv
	return s
}

func daysSetting(name string, def time.Duration, usage string, field func(*Config) *time.Duration) Setting {
	return setting(name, "days", def, usage, field, newDaysValue)
}

type stringValue struct{ p *string }

func newStringValue(p *string) Value        { return stringValue{p} }
func (v stringValue) String() string        { return *v.p }
func (v stringValue) Set(text string) error { *v.p = text; return nil }

type intValue struct{ p *int }

func newIntValue(p *int) Value    { return intValue{p} }
func (v intValue) String() string { return strconv.Itoa(*v.p) }
func (v intValue) Set(text string) error {
	n, err := strconv.Atoi(text)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", text)
	}
	*v.p = n
	return nil
}

type boolValue struct{ p *bool }

func newBoolValue(p *bool) Value   { return boolValue{p} }
func (v boolValue) String() string { return strconv.FormatBool(*v.p) }

// IsBoolFlag lets a flag set take the bare --name for true.
func (v boolValue) IsBoolFlag() bool { return true }
func (v boolValue) Set(text string) error {
	b, err := strconv.ParseBool(text)
	if err != nil {
		return fmt.Errorf("%q is not true or false", text)
	}
	*v.p = b
	return nil
}

type durationValue struct{ p *time.Duration }

func newDurationValue(p *time.Duration) Value { return durationValue{p} }
func (v durationValue) String() string        { return v.p.String() }
func (v durationValue) Set(text string) error {
	d, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 10s", text)
	}
	*v.p = d
	return nil
}

// listValue is a comma-separated list; blank entries are dropped.
type listValue struct{ p *[]string }

func newListValue(p *[]string) Value { return listValue{p} }
func (v listValue) String() string   { return strings.Join(*v.p, ",") }
func (v listValue) Set(text string) error {
	*v.p = nil
	for _, e := range strings.Split(text, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*v.p = append(*v.p, e)
		}
	}
	return nil
}

// daysValue is a retention period in whole days. 0 days keeps the rows forever, which
// runner.Retention spells as a negative period (its zero means the default).
type daysValue struct{ p *time.Duration }

const day = 24 * time.Hour

func newDaysValue(p *time.Duration) Value { return daysValue{p} }
func (v daysValue) String() string {
	if *v.p == 0 {
		return "" // unset: the runner's default
	}
	if *v.p < 0 {
		return "0"
	}
	return strconv.FormatInt(int64(*v.p/day), 10)
}
func (v daysValue) Set(text string) error {
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return fmt.Errorf("retention must be a whole number of days >= 0 (0 keeps the rows forever), not %q", text)
	}
	*v.p = time.Duration(n) * day
	if n == 0 {
		*v.p = -1
	}
	return nil
}
