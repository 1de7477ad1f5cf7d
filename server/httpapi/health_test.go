package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/server/httpapi"
)

// TestHealthEndpoints checks the answers of /healthz and /readyz against the real
// PostgreSQL and Redis, and against a PostgreSQL that nothing listens for.
func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ropt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(ropt)
	t.Cleanup(func() { _ = rdb.Close() })
	gone, err := pgxpool.New(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/test?connect_timeout=1", testenv.FreePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gone.Close)

	pg := httpapi.Check{Name: "postgres", Ping: pool.Ping}
	rd := httpapi.Check{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}
	var draining atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpapi.Live())
	mux.Handle("GET /readyz", httpapi.Ready(draining.Load, pg, rd))
	mux.Handle("GET /readyz-gone", httpapi.Ready(draining.Load, httpapi.Check{Name: "postgres", Ping: gone.Ping}, rd))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, want string
		status     int
	}{
		{"/healthz", "ok\n", http.StatusOK},
		{"/readyz", "ready\n", http.StatusOK},
		{"/readyz-gone", "postgres: unreachable\n", http.StatusServiceUnavailable},
	} {
		if status, body := get(c.path); status != c.status || body != c.want {
			t.Errorf("GET %s: %d %q, want %d %q", c.path, status, body, c.status, c.want)
		}
	}
	draining.Store(true)
	if status, body := get("/readyz"); status != http.StatusServiceUnavailable || body != "draining\n" {
		t.Errorf("GET /readyz while draining: %d %q, want 503 \"draining\\n\"", status, body)
	}
	if status, _ := get("/healthz"); status != http.StatusOK {
		t.Errorf("GET /healthz while draining: %d, want 200 (the process is alive)", status)
	}
}
