package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/redisconn"
	"github.com/baton-run/baton/notify"
	"github.com/baton-run/baton/server/httpapi"
)

// frontServer is the instance's HTTP server. It listens from the start: until the instance
// is up it answers /healthz 200 and everything else 503 "starting" (startingHandler), then
// the instance's routes (use).
type frontServer struct {
	ln      net.Listener
	srv     *http.Server
	handler atomic.Pointer[http.Handler]
	errc    chan error
}

func listen(addr string) (*frontServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	f := &frontServer{ln: ln, errc: make(chan error, 1)}
	f.use(startingHandler())
	f.srv = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*f.handler.Load()).ServeHTTP(w, r) }),
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
	}
	go func() { f.errc <- f.srv.Serve(ln) }()
	return f, nil
}

// use makes h answer the requests from now on.
func (f *frontServer) use(h http.Handler) { f.handler.Store(&h) }

// base is the URL a browser opens.
func (f *frontServer) base() string { return "http://" + displayAddr(f.ln.Addr()) }

// stop closes the listener and waits up to 5 seconds for the requests in progress.
func (f *frontServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
}

// startingHandler answers while the instance connects: alive, not ready.
func startingHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpapi.Live())
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		http.Error(w, "starting", http.StatusServiceUnavailable)
	})
	return mux
}

// permanent marks a start-up error no retry can cure: a URL that does not parse.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Backoff of the start-up retries: doubling from startRetryFirst up to startRetryMax.
const (
	startRetryFirst = 250 * time.Millisecond
	startRetryMax   = 5 * time.Second
)

// connectWithin connects as connect does, retrying with backoff while the error may pass (the
// database not up yet) until StartTimeout has passed since the first attempt or ctx ends.
func connectWithin(ctx context.Context, o Config) (databases, redis.UniversalClient, error) {
	deadline := time.Now().Add(o.StartTimeout)
	wait := startRetryFirst
	for attempt := 1; ; attempt++ {
		dbs, rdb, err := connect(ctx, o)
		if err == nil {
			return dbs, rdb, nil
		}
		var perm permanent
		if errors.As(err, &perm) || ctx.Err() != nil {
			return databases{}, nil, err
		}
		if o.StartTimeout <= 0 || time.Now().Add(wait).After(deadline) {
			return databases{}, nil, fmt.Errorf("%w (%d attempts; start-timeout %v)", err, attempt, o.StartTimeout)
		}
		o.Logger.Warn("cannot connect at start; retrying", "err", err, "attempt", attempt, "retry_in", wait, "start_timeout", o.StartTimeout)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return databases{}, nil, err
		case <-t.C:
		}
		wait = min(2*wait, startRetryMax)
	}
}

// drain holds the instance in draining — readiness 503, every other request still answered —
// for DrainDelay, so that load balancers stop sending it requests before its listener closes.
func (o Config) drain() {
	if o.drainWait != nil {
		o.drainWait(o.DrainDelay)
		return
	}
	if o.DrainDelay <= 0 {
		return
	}
	o.Logger.Info("draining: readiness says 503 before the instance stops", "drain_delay", o.DrainDelay)
	time.Sleep(o.DrainDelay)
}

// check refuses, before anything listens, a Config Serve cannot run: no database or Redis
// URL, a Redis URL or CA file that cannot be used, a negative drain delay or start timeout.
func (o Config) check() error {
	if o.DatabaseURL == "" || o.RedisURL == "" {
		return errors.New("server: DatabaseURL and RedisURL are required")
	}
	if _, err := redisconn.Parse(o.RedisURL, redisconn.Options{CAFile: o.RedisCAFile}); err != nil {
		return fmt.Errorf("redis url: %w", err)
	}
	if _, err := o.consoleURL(); err != nil {
		return err
	}
	if o.DrainDelay < 0 {
		return fmt.Errorf("drain-delay (BATON_DRAIN_DELAY) must be 0 or more, not %v", o.DrainDelay)
	}
	if o.StartTimeout < 0 {
		return fmt.Errorf("start-timeout (BATON_START_TIMEOUT) must be 0 or more, not %v", o.StartTimeout)
	}
	return nil
}

// consoleURL is the console's base under PublicURL ("" without one), for the links of
// notifications. A PublicURL that is no absolute http(s) URL is an error naming the setting.
func (o Config) consoleURL() (string, error) {
	if o.PublicURL == "" {
		return "", nil
	}
	u, err := url.Parse(o.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("public-url (BATON_PUBLIC_URL) must be an absolute http or https URL without query, such as https://baton.example.com, not %q", o.PublicURL)
	}
	return strings.TrimRight(o.PublicURL, "/") + "/admin", nil
}

// notifySender is the sender of the instance's notifications, linking the console under
// PublicURL.
func (o Config) notifySender() *notify.Sender {
	console, _ := o.consoleURL() // checked by Serve
	return &notify.Sender{ConsoleURL: console, AllowPrivateNetworks: o.NotifyAllowPrivateNetworks}
}
