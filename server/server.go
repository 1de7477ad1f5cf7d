// Package server runs a complete Baton instance — migrations, the runner with its scheduler
// and workers, live events over Redis, the GraphQL API, the admin console and the health and
// metrics endpoints — around the jobs a Go program gives it. `baton serve` is this package
// with flags; a program embedding Baton calls Serve with its own jobs.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/frontend"
	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/migrations"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// Options configure an instance. DatabaseURL and RedisURL are required.
type Options struct {
	DatabaseURL string
	RedisURL    string
	// Env namespaces Redis keys and channels (baton:{Env}:...); default "dev".
	Env string
	// Addr to listen on; default ":8080". Use "127.0.0.1:0" for a free port.
	Addr string
	// Instance names this process in runs and logs; default host-pid.
	Instance string
	// PoolSize is the number of worker slots; 0 runs no jobs here (API-only instance).
	PoolSize int
	// Scheduler runs the cron scheduler and the lease recoverer here.
	Scheduler bool
	// PollInterval of the recoverer; default 10s.
	PollInterval time.Duration
	// Lease is the default lease of jobs that set none; default 30s.
	Lease time.Duration
	// ShutdownTimeout bounds how long shutdown waits for jobs to reach a boundary; default 30s.
	ShutdownTimeout time.Duration
	// DevMode opens the playground and introspection to every role.
	DevMode bool
	// AllowedOrigins are browser origins allowed besides the server's own.
	AllowedOrigins []string
	// DBMaxConns sizes the PostgreSQL pool; 0 means 2 × PoolSize + 8: a run may hold two
	// connections while its batch results are written behind (two writes in flight).
	DBMaxConns int
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Version is recorded on runs and shown by the console.
	Version string
	// Retention is how long the retention job keeps runs, run errors, schedule events, call
	// statistics and audit rows (see runner.Retention); zero periods mean the defaults.
	Retention runner.Retention
	// Jobs to register.
	Jobs []runner.Job
	// JobsFunc, if set, makes more jobs once the database pool is open (jobs that keep
	// their own tables use it).
	JobsFunc func(pool *pgxpool.Pool) ([]runner.Job, error)
	// AdminTokenName, when set, mints a fresh admin token under that name at start (revoking
	// the previous one of the name) and passes it to Ready. For development.
	AdminTokenName string
	// Ready, if set, is called once the instance serves, with its base URL and the minted
	// admin token (if any).
	Ready func(base, adminToken string)
	// Console serves the admin SPA under /admin/ and the playground at /playground; nil
	// means the console embedded in this module (package frontend).
	Console http.Handler
}

func (o *Options) setDefaults() {
	if o.Env == "" {
		o.Env = "dev"
	}
	if o.Addr == "" {
		o.Addr = ":8080"
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 10 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Instance == "" {
		host, _ := os.Hostname()
		o.Instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Version == "" {
		o.Version = "dev"
	}
}

// Serve runs an instance until ctx is done, then shuts down gracefully: readiness goes 503,
// the runner stops taking work and waits for jobs to reach a boundary, the HTTP server drains.
func Serve(ctx context.Context, o Options) error {
	o.setDefaults()
	log := o.Logger
	if o.DatabaseURL == "" || o.RedisURL == "" {
		return errors.New("server: DatabaseURL and RedisURL are required")
	}
	log.Info("migrating schema")
	if err := migrations.Up(ctx, o.DatabaseURL); err != nil {
		return err
	}
	pcfg, err := pgxpool.ParseConfig(o.DatabaseURL)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	pcfg.MaxConns = int32(2*o.PoolSize + 8)
	if o.DBMaxConns > 0 {
		pcfg.MaxConns = int32(o.DBMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer pool.Close()
	ropt, err := redis.ParseURL(o.RedisURL)
	if err != nil {
		return fmt.Errorf("parse redis url: %w", err)
	}
	// Without ContextTimeoutEnabled go-redis ignores context deadlines on socket reads: a
	// stalled Redis (accepting, never answering) would hold every lock call for ReadTimeout
	// and more, long enough to cost a run its lease although PostgreSQL, the fence, is healthy.
	ropt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(ropt)
	defer rdb.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	pub := pubsub.NewPublisher(rdb, o.Env, pubsub.PublisherOptions{InstanceID: o.Instance, Logger: log})
	hub := pubsub.NewHub(rdb, o.Env, pubsub.HubOptions{Logger: log})
	poolSize := o.PoolSize
	if poolSize == 0 {
		poolSize = -1
	}
	r, err := runner.New(runner.Config{
		DB: pool, Redis: rdb, Env: o.Env, Instance: o.Instance, PoolSize: poolSize, Scheduler: o.Scheduler,
		PollInterval: o.PollInterval, DefaultLease: o.Lease, ShutdownTimeout: o.ShutdownTimeout,
		Logger: log, Registerer: reg, Events: graph.NewEventPublisher(pub), WorkerVersion: o.Version,
		Retention: o.Retention,
	})
	if err != nil {
		return err
	}
	reg.MustRegister(r.AlertCollector())
	jobs := o.Jobs
	if o.JobsFunc != nil {
		more, err := o.JobsFunc(pool)
		if err != nil {
			return err
		}
		jobs = append(jobs, more...)
	}
	if err := r.Register(ctx, jobs...); err != nil {
		return err
	}

	var draining atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpapi.Live())
	mux.Handle("GET /readyz", httpapi.Ready(draining.Load,
		httpapi.Check{Name: "postgres", Ping: pool.Ping},
		httpapi.Check{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("/graphql", httpapi.NewHandler(httpapi.Config{AllowedOrigins: o.AllowedOrigins,
		GraphQL: graph.Config{Runner: r, Hub: hub, DevMode: o.DevMode, Logger: log}}))
	console := o.Console
	if console == nil {
		console = frontend.Handler()
	}
	mux.Handle("/admin/", console)
	mux.Handle("/playground", console)
	mux.Handle("/playground/", console)
	mux.Handle("GET /{$}", http.RedirectHandler("/admin/", http.StatusFound))

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()

	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(bg) }()
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(bg) }()

	base := "http://" + displayAddr(ln.Addr())
	log.Info("baton serving", "url", base, "instance", r.Instance(), "env", o.Env,
		"pool_size", o.PoolSize, "scheduler", o.Scheduler, "jobs", len(jobs))
	token := ""
	if o.AdminTokenName != "" {
		_, _ = r.Store().RevokeToken(ctx, o.AdminTokenName)
		t, _, err := httpapi.CreateToken(ctx, r.Store(), o.AdminTokenName, model.RoleAdmin)
		if err != nil {
			log.Error("mint admin token", "err", err)
		}
		token = t
	}
	if o.Ready != nil {
		o.Ready(base, token)
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing runs at their next boundary", "timeout", o.ShutdownTimeout)
	case err := <-srvErr:
		log.Error("http server stopped", "err", err)
	}
	draining.Store(true)
	stopBG()
	runErr := <-runDone
	<-hubDone
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	_ = pub.Close(shutdownCtx)
	if runErr != nil {
		log.Error("shutdown incomplete", "err", runErr)
		return runErr
	}
	log.Info("stopped cleanly")
	return nil
}

// displayAddr turns a listen address into one a browser can open.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if host == "" || host == "::" || host == "0.0.0.0" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
