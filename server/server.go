// Package server runs a complete Baton instance — migrations, the runner with its scheduler
// and workers, live events over Redis, the GraphQL API, the admin console and the health and
// metrics endpoints — around the jobs a Go program gives it. `baton serve` is this package
// with flags; a program embedding Baton calls Serve with its own jobs.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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
	"github.com/baton-run/baton/internal/redisconn"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/migrations"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// Serve runs an instance until ctx is done, then shuts down gracefully: readiness goes 503,
// the runner stops taking work and waits for jobs to reach a boundary, the HTTP server drains.
func Serve(ctx context.Context, o Config) error {
	o.setDefaults()
	log := o.Logger
	if o.DatabaseURL == "" || o.RedisURL == "" {
		return errors.New("server: DatabaseURL and RedisURL are required")
	}
	pool, rdb, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer rdb.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	pub := pubsub.NewPublisher(rdb, o.Env, pubsub.PublisherOptions{InstanceID: o.Instance, Logger: log})
	hub := pubsub.NewHub(rdb, o.Env, pubsub.HubOptions{Logger: log})
	r, jobs, err := newRunner(ctx, o, pool, rdb, reg, pub)
	if err != nil {
		return err
	}

	var draining atomic.Bool
	tokens := httpapi.NewTokenStore(pool)
	mux := routes(o, r, hub, pool, rdb, reg, tokens, draining.Load)

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
		_, _ = tokens.RevokeToken(ctx, o.AdminTokenName)
		t, _, err := httpapi.CreateToken(ctx, tokens, o.AdminTokenName, model.RoleAdmin)
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

// connect migrates the schema and opens the PostgreSQL pool and the Redis client.
func connect(ctx context.Context, o Config) (*pgxpool.Pool, redis.UniversalClient, error) {
	// The client has ContextTimeoutEnabled set: without it a stalled Redis would hold every
	// lock call past its deadline, long enough to cost a run its lease. A bad Redis URL or CA
	// file stops here, before anything touches the database.
	rdb, err := redisconn.New(o.RedisURL, redisconn.Options{CAFile: o.RedisCAFile})
	if err != nil {
		return nil, nil, fmt.Errorf("redis url: %w", err)
	}
	o.Logger.Info("migrating schema")
	if err := migrations.Up(ctx, o.DatabaseURL); err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	pcfg, err := pgxpool.ParseConfig(o.DatabaseURL)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("parse database url: %w", err)
	}
	pcfg.MaxConns = int32(2*o.PoolSize + 8)
	if o.DBMaxConns > 0 {
		pcfg.MaxConns = int32(o.DBMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	return pool, rdb, nil
}

// newRunner builds the runner over pool and rdb, its metrics in reg and its events through
// pub, and registers the instance's jobs (o.Jobs and those of o.JobsFunc), which it returns.
func newRunner(ctx context.Context, o Config, pool *pgxpool.Pool, rdb redis.UniversalClient, reg *prometheus.Registry, pub *pubsub.Publisher) (*runner.Runner, []runner.Job, error) {
	poolSize := o.PoolSize
	if poolSize == 0 {
		poolSize = -1
	}
	r, err := runner.New(runner.Config{
		DB: pool, Redis: rdb, Env: o.Env, Instance: o.Instance, PoolSize: poolSize, Scheduler: o.Scheduler,
		PollInterval: o.PollInterval, DefaultLease: o.Lease, ShutdownTimeout: o.ShutdownTimeout,
		Logger: o.Logger, Registerer: reg, Events: live.NewEventPublisher(pub), WorkerVersion: o.Version,
		Retention: o.Retention,
	})
	if err != nil {
		return nil, nil, err
	}
	reg.MustRegister(r.AlertCollector())
	jobs := o.Jobs
	if o.JobsFunc != nil {
		more, err := o.JobsFunc(pool)
		if err != nil {
			return nil, nil, err
		}
		jobs = append(jobs, more...)
	}
	if err := r.Register(ctx, jobs...); err != nil {
		return nil, nil, err
	}
	return r, jobs, nil
}

// routes lays out the instance's HTTP endpoints: health, readiness (503 once draining
// reports true), metrics, GraphQL and the console.
func routes(o Config, r *runner.Runner, hub *pubsub.Hub, pool *pgxpool.Pool, rdb redis.UniversalClient, reg *prometheus.Registry, tokens *httpapi.TokenStore, draining func() bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpapi.Live())
	mux.Handle("GET /readyz", httpapi.Ready(draining,
		httpapi.Check{Name: "postgres", Ping: pool.Ping},
		httpapi.Check{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("/graphql", httpapi.NewHandler(httpapi.Config{AllowedOrigins: o.AllowedOrigins, Tokens: tokens,
		GraphQL: graph.Config{Runner: r, Hub: hub, DevMode: o.DevMode, Logger: o.Logger}}))
	console := o.Console
	if console == nil {
		console = frontend.Handler()
	}
	mux.Handle("/admin/", console)
	mux.Handle("/playground", console)
	mux.Handle("/playground/", console)
	mux.Handle("GET /{$}", http.RedirectHandler("/admin/", http.StatusFound))
	return mux
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
