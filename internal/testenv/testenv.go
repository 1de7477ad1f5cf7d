// Package testenv gives tests their own slice of the shared PostgreSQL and Redis: a fresh,
// migrated schema and a unique Redis key prefix per test, so tests run in parallel.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/migrations"
)

// DefaultDatabaseURL and DefaultRedisURL are used when DATABASE_URL / REDIS_URL are unset.
const (
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
)

// DatabaseURL reports the server tests use.
func DatabaseURL() string {
	if v := os.Getenv("DATABASE_URL"); v != "" {
		return v
	}
	return DefaultDatabaseURL
}

// RedisURL reports the Redis server tests use.
func RedisURL() string {
	if v := os.Getenv("REDIS_URL"); v != "" {
		return v
	}
	return DefaultRedisURL
}

// RandomName returns prefix followed by 12 random hex characters, safe as an SQL identifier.
func RandomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Schema creates a new schema on the test server, migrates it and returns a database URL whose
// connections use it. The schema is dropped when the test ends.
func Schema(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := DatabaseURL()
	name := RandomName("t_")
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", base, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
	})
	u := WithSearchPath(base, name)
	if err := migrations.Up(ctx, u); err != nil {
		t.Fatalf("migrate schema %s: %v", name, err)
	}
	return u
}

// WithSearchPath returns databaseURL with its search_path set to schema.
func WithSearchPath(databaseURL, schema string) string {
	u, err := url.Parse(databaseURL)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Pool opens a pgx pool on databaseURL, closed when the test ends.
func Pool(t testing.TB, databaseURL string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		t.Fatalf("parse database url: %v", err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Postgres returns a pool on a fresh migrated schema.
func Postgres(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Pool(t, Schema(t))
}

// Redis returns a client on the test Redis server and a key prefix no other test uses. Keys
// under the prefix are deleted when the test ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("parse redis url: %v", err)
	}
	opt.ContextTimeoutEnabled = true // as server.Serve builds its client
	c := redis.NewClient(opt)
	prefix := RandomName("bt")
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping redis: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "baton:{"+prefix+"}:*", 100).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		c.Close()
	})
	return c, prefix
}

// Eventually polls cond until it returns true or the deadline passes, then fails the test.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(within, cond) {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
}

// Within polls cond until it returns true (true) or within has passed (false), for a caller
// that must not fail the test from where it is (a job's goroutine).
func Within(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	wait := 5 * time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
}

// Contains reports whether s contains sub, ignoring case.
func Contains(s, sub string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(sub)) }

// ModuleRoot finds the directory holding go.mod, upwards from the working directory (a test
// runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
