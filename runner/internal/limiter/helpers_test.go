package limiter_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/internal/limiter"
)

// instances returns n limiters on n clients of the shared test Redis with one key prefix of
// the test's own, as n instances of one cluster would have. The first client is returned for
// reading the Redis clock.
func instances(t testing.TB, n int, adjust func(*limiter.Config)) ([]*limiter.Limiter, *redis.Client) {
	t.Helper()
	first, p := testenv.Redis(t)
	ls := make([]*limiter.Limiter, n)
	for i := range ls {
		c := first
		if i > 0 {
			c = newClient(t, testenv.RedisURL())
		}
		ls[i] = newLimiter(t, c, "baton:{"+p+"}:ds:", fmt.Sprintf("i%d", i), adjust)
	}
	return ls, first
}

func newClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

func newLimiter(t testing.TB, c redis.UniversalClient, prefix, instance string, adjust func(*limiter.Config)) *limiter.Limiter {
	t.Helper()
	cfg := limiter.Config{Redis: c, Prefix: prefix, Instance: instance,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if adjust != nil {
		adjust(&cfg)
	}
	l := limiter.New(cfg)
	t.Cleanup(l.Close)
	return l
}

// redisNow reads the Redis server's clock.
func redisNow(t testing.TB, c *redis.Client) time.Time {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("redis TIME: %v", err)
	}
	return now
}

// starts collects the times calls started, from many goroutines.
type starts struct {
	mu sync.Mutex
	at []time.Time
}

func (s *starts) add(t time.Time) {
	s.mu.Lock()
	s.at = append(s.at, t)
	s.mu.Unlock()
}

// maxInWindow returns the most starts in any window of length w, and the sorted starts.
func (s *starts) maxInWindow(w time.Duration) (int, []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return testenv.MostWithin(s.at, w)
}

// countLog counts log records by message.
type countLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *countLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countLog) WithGroup(string) slog.Handler            { return h }
func (h *countLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[r.Message]++
	return nil
}

func (h *countLog) count(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	total := 0
	for m, n := range h.n {
		if len(m) >= len(prefix) && m[:len(prefix)] == prefix {
			total += n
		}
	}
	return total
}
