// Package node starts the instances the end-to-end suites run (e2e/cluster/cmd/stormnode,
// e2e/load/cmd/loadnode): signals, the JSON log, and the environment of `baton serve` read
// into server.Options. It is test code: nothing here is for production.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/baton-run/baton/server"
)

// Main runs run until SIGINT or SIGTERM, logging JSON to stderr (the default logger too). If
// run fails, Main logs the error under name and exits 1.
func Main(name string, run func(ctx context.Context, log *slog.Logger) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	slog.SetDefault(log)
	if err := run(ctx, log); err != nil {
		log.Error(name, "err", err)
		os.Exit(1)
	}
}

// Env reads numbers and durations from the environment, keeping the first error in Err.
type Env struct{ Err error }

// Int returns the number in key, def when key is unset. A value that is not a number >= 0
// sets e.Err.
func (e *Env) Int(key string, def int) int {
	v := os.Getenv(key)
	if v == "" || e.Err != nil {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		e.Err = fmt.Errorf("%s must be a number >= 0, not %q", key, v)
	}
	return n
}

// Duration returns the duration in key, def when key is unset. A value that is not a duration
// >= 0 sets e.Err.
func (e *Env) Duration(key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" || e.Err != nil {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.Err = fmt.Errorf("%s must be a duration such as 500ms, not %q", key, v)
	}
	return d
}

// Defaults are a node's values for the settings of `baton serve` its environment leaves unset.
type Defaults struct {
	PoolSize        int
	PollInterval    time.Duration
	Lease           time.Duration
	ShutdownTimeout time.Duration
}

// Options reads the environment of `baton serve` (DATABASE_URL, REDIS_URL, BATON_ENV,
// BATON_ADDR, BATON_INSTANCE, BATON_POOL_SIZE, BATON_SCHEDULER, BATON_POLL_INTERVAL,
// BATON_LEASE, BATON_SHUTDOWN_TIMEOUT) into the options of node name, which logs to log. The
// scheduler is on unless BATON_SCHEDULER is "false".
func (e *Env) Options(name string, log *slog.Logger, d Defaults) server.Options {
	return server.Options{
		DatabaseURL:     os.Getenv("DATABASE_URL"),
		RedisURL:        os.Getenv("REDIS_URL"),
		Env:             os.Getenv("BATON_ENV"),
		Addr:            os.Getenv("BATON_ADDR"),
		Instance:        os.Getenv("BATON_INSTANCE"),
		PoolSize:        e.Int("BATON_POOL_SIZE", d.PoolSize),
		Scheduler:       os.Getenv("BATON_SCHEDULER") != "false",
		PollInterval:    e.Duration("BATON_POLL_INTERVAL", d.PollInterval),
		Lease:           e.Duration("BATON_LEASE", d.Lease),
		ShutdownTimeout: e.Duration("BATON_SHUTDOWN_TIMEOUT", d.ShutdownTimeout),
		Logger:          log,
		Version:         name,
	}
}
