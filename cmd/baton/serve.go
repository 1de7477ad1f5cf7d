package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server"
)

const (
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/baton?sslmode=disable"
	defaultRedisURL    = "redis://127.0.0.1:6379/0"
)

// serveConfig is everything `baton serve` reads from flags and the environment.
type serveConfig struct {
	DatabaseURL     string
	RedisURL        string
	Env             string
	Addr            string
	Instance        string
	PoolSize        int
	Scheduler       bool
	PollInterval    time.Duration
	Lease           time.Duration
	ShutdownTimeout time.Duration
	Demo            bool
	Dev             bool
	LogFormat       string
	LogLevel        string
	AllowedOrigins  []string
	DBMaxConns      int
	// Retention periods in days, 0 keeping a table's rows forever.
	RetentionRunsDays, RetentionRunErrorsDays, RetentionScheduleEventsDays, RetentionCallStatsDays, RetentionAuditDays int
}

func parseServeFlags(args []string, stderr io.Writer) (*serveConfig, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &serveConfig{}
	fs.StringVar(&c.DatabaseURL, "database-url", envOr("DATABASE_URL", defaultDatabaseURL), "PostgreSQL URL (env DATABASE_URL)")
	fs.StringVar(&c.RedisURL, "redis-url", envOr("REDIS_URL", defaultRedisURL), "Redis URL (env REDIS_URL)")
	fs.StringVar(&c.Env, "env", envOr("BATON_ENV", "dev"), "environment name: the Redis key namespace baton:{env}: (env BATON_ENV)")
	fs.StringVar(&c.Addr, "addr", envOr("BATON_ADDR", ":8080"), "HTTP listen address (env BATON_ADDR)")
	fs.StringVar(&c.Instance, "instance", envOr("BATON_INSTANCE", ""), "instance name in runs and logs; default host-pid (env BATON_INSTANCE)")
	fs.IntVar(&c.PoolSize, "pool-size", envInt("BATON_POOL_SIZE", 4), "worker slots; 0 runs no jobs here (API-only instance) (env BATON_POOL_SIZE)")
	fs.BoolVar(&c.Scheduler, "scheduler", envBool("BATON_SCHEDULER", true), "run the cron scheduler and lease recoverer here (env BATON_SCHEDULER)")
	fs.DurationVar(&c.PollInterval, "poll-interval", envDuration("BATON_POLL_INTERVAL", 10*time.Second), "lease recovery and schedule safety poll (env BATON_POLL_INTERVAL)")
	fs.DurationVar(&c.Lease, "lease", envDuration("BATON_LEASE", 30*time.Second), "default lease for jobs that set none (env BATON_LEASE)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", envDuration("BATON_SHUTDOWN_TIMEOUT", 30*time.Second), "how long SIGTERM waits for jobs to reach a boundary (env BATON_SHUTDOWN_TIMEOUT)")
	fs.BoolVar(&c.Demo, "demo", envBool("BATON_DEMO", false), "register the demo jobs and print a ready admin token (env BATON_DEMO)")
	fs.BoolVar(&c.Dev, "dev", envBool("BATON_DEV", false), "development mode: playground and introspection for every role (env BATON_DEV)")
	fs.StringVar(&c.LogFormat, "log-format", envOr("BATON_LOG_FORMAT", "json"), "json or text (env BATON_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", envOr("BATON_LOG_LEVEL", "info"), "debug, info, warn or error (env BATON_LOG_LEVEL)")
	origins := fs.String("allowed-origins", envOr("BATON_ALLOWED_ORIGINS", ""), "comma-separated browser origins allowed besides the server's own (env BATON_ALLOWED_ORIGINS)")
	fs.IntVar(&c.DBMaxConns, "db-max-conns", envInt("BATON_DB_MAX_CONNS", 0), "PostgreSQL pool size; 0 = 2 × pool-size + 8 (env BATON_DB_MAX_CONNS)")
	fs.IntVar(&c.RetentionRunsDays, "retention-runs-days", envInt("BATON_RETENTION_RUNS_DAYS", 90), "days ended runs are kept; 0 keeps them forever (env BATON_RETENTION_RUNS_DAYS)")
	fs.IntVar(&c.RetentionRunErrorsDays, "retention-run-errors-days", envInt("BATON_RETENTION_RUN_ERRORS_DAYS", 30), "days run error rows are kept; 0 keeps them forever (env BATON_RETENTION_RUN_ERRORS_DAYS)")
	fs.IntVar(&c.RetentionScheduleEventsDays, "retention-schedule-events-days", envInt("BATON_RETENTION_SCHEDULE_EVENTS_DAYS", 30), "days skipped and missed fires are kept; 0 keeps them forever (env BATON_RETENTION_SCHEDULE_EVENTS_DAYS)")
	fs.IntVar(&c.RetentionCallStatsDays, "retention-call-stats-days", envInt("BATON_RETENTION_CALL_STATS_DAYS", 7), "days per-minute call statistics are kept; 0 keeps them forever (env BATON_RETENTION_CALL_STATS_DAYS)")
	fs.IntVar(&c.RetentionAuditDays, "retention-audit-days", envInt("BATON_RETENTION_AUDIT_DAYS", 400), "days audit rows are kept; 0 keeps them forever (env BATON_RETENTION_AUDIT_DAYS)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.AllowedOrigins = append(c.AllowedOrigins, o)
		}
	}
	switch {
	case c.PoolSize < 0:
		return nil, errors.New("serve: --pool-size must be >= 0")
	case c.PollInterval < 100*time.Millisecond:
		return nil, errors.New("serve: --poll-interval must be at least 100ms")
	case c.Lease < time.Second:
		return nil, errors.New("serve: --lease must be at least 1s")
	case c.LogFormat != "json" && c.LogFormat != "text":
		return nil, fmt.Errorf("serve: --log-format must be json or text, not %q", c.LogFormat)
	case min(c.RetentionRunsDays, c.RetentionRunErrorsDays, c.RetentionScheduleEventsDays, c.RetentionCallStatsDays, c.RetentionAuditDays) < 0:
		return nil, errors.New("serve: --retention-*-days must be >= 0 (0 keeps the rows forever)")
	}
	return c, nil
}

func envInt(key string, def int) int {
	if v := os.Getenv(key); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func envBool(key string, def bool) bool {
	if v := os.Getenv(key); v != "" {
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v := os.Getenv(key); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

// retention turns the retention flags into the runner's periods: a day count of 0 keeps the
// rows forever, which the runner spells as a negative period (its zero means the default).
func (c *serveConfig) retention() runner.Retention {
	days := func(n int) time.Duration {
		if n == 0 {
			return -1
		}
		return time.Duration(n) * 24 * time.Hour
	}
	return runner.Retention{Runs: days(c.RetentionRunsDays), RunErrors: days(c.RetentionRunErrorsDays),
		ScheduleEvents: days(c.RetentionScheduleEventsDays), CallStats: days(c.RetentionCallStatsDays),
		AuditLog: days(c.RetentionAuditDays)}
}

func newLogger(c *serveConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	slog.SetDefault(log)
	o := server.Options{
		DatabaseURL: c.DatabaseURL, RedisURL: c.RedisURL, Env: c.Env, Addr: c.Addr, Instance: c.Instance,
		PoolSize: c.PoolSize, Scheduler: c.Scheduler, PollInterval: c.PollInterval, Lease: c.Lease,
		ShutdownTimeout: c.ShutdownTimeout, DevMode: c.Dev, AllowedOrigins: c.AllowedOrigins,
		DBMaxConns: c.DBMaxConns, Logger: log, Version: version,
		Retention: c.retention(),
	}
	if c.Demo {
		cfg, err := demoConfig()
		if err != nil {
			return err
		}
		o.JobsFunc = demoJobsFunc(ctx, cfg)
		o.AdminTokenName = "dev-admin"
	}
	o.Ready = func(base, token string) {
		fmt.Fprintf(stdout, "\nBaton is up.\n  admin console  %s/admin/\n  GraphQL        %s/graphql\n  playground     %s/playground\n  health         %s/healthz  %s/readyz  %s/metrics\n",
			base, base, base, base, base, base)
		if token != "" {
			fmt.Fprintf(stdout, "  admin token    %s\n\nLog in to the console with the admin token above.\n", token)
		}
	}
	return server.Serve(ctx, o)
}
