package redislock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/redislock"
)

type testBundle struct {
	ctx    context.Context
	client *redis.Client
	env    string
	locker *redislock.Locker
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	client, env := testenv.Redis(t)
	return &testBundle{ctx: context.Background(), client: client, env: env, locker: redislock.New(client, env)}
}

func mustAcquire(t *testing.T, b *testBundle, name, token string, ttl time.Duration) bool {
	t.Helper()
	ok, err := b.locker.Acquire(b.ctx, name, token, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", name, token, err)
	}
	return ok
}

func holder(t *testing.T, b *testBundle, name string) string {
	t.Helper()
	tok, ok, err := b.locker.Holder(b.ctx, name)
	if err != nil {
		t.Fatalf("Holder(%q): %v", name, err)
	}
	if !ok && tok != "" {
		t.Fatalf("Holder(%q) = %q, false; want empty token when not held", name, tok)
	}
	return tok
}

func TestKey(t *testing.T) {
	t.Parallel()
	l := redislock.New(nil, "prod")
	if got, want := l.Key("demo-collect"), "baton:{prod}:lock:demo-collect"; got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
}

func TestAcquireHeldLockFails(t *testing.T) {
	t.Parallel()
	b := setup(t)

	if !mustAcquire(t, b, "job", "t1", 10*time.Second) {
		t.Fatal("first Acquire = false, want true")
	}
	if mustAcquire(t, b, "job", "t2", 10*time.Second) {
		t.Fatal("second Acquire by another token = true, want false")
	}
	if mustAcquire(t, b, "job", "t1", 10*time.Second) {
		t.Fatal("Acquire by the holder again = true, want false (not reentrant)")
	}
	if got := holder(t, b, "job"); got != "t1" {
		t.Fatalf("Holder = %q, want t1", got)
	}
	// The key is where the design says, with a TTL in the requested range.
	pttl, err := b.client.PTTL(b.ctx, "baton:{"+b.env+"}:lock:job").Result()
	if err != nil {
		t.Fatal(err)
	}
	if pttl <= 9*time.Second || pttl > 10*time.Second {
		t.Fatalf("PTTL = %s, want in (9s, 10s]", pttl)
	}
}

func TestExtend(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := b.locker.Key("job")

	if !mustAcquire(t, b, "job", "t1", 10*time.Second) {
		t.Fatal("Acquire = false")
	}

	ok, err := b.locker.Extend(b.ctx, "job", "intruder", time.Hour)
	if err != nil || ok {
		t.Fatalf("Extend with wrong token = %v, %v; want false, nil", ok, err)
	}
	if pttl := b.client.PTTL(b.ctx, key).Val(); pttl > 10*time.Second {
		t.Fatalf("PTTL after failed Extend = %s, want <= 10s (unchanged)", pttl)
	}

	ok, err = b.locker.Extend(b.ctx, "job", "t1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("Extend with right token = %v, %v; want true, nil", ok, err)
	}
	if pttl := b.client.PTTL(b.ctx, key).Val(); pttl <= 50*time.Second {
		t.Fatalf("PTTL after Extend(1m) = %s, want > 50s", pttl)
	}
	if got := holder(t, b, "job"); got != "t1" {
		t.Fatalf("Holder after Extend = %q, want t1", got)
	}

	ok, err = b.locker.Extend(b.ctx, "missing", "t1", time.Minute)
	if err != nil || ok {
		t.Fatalf("Extend of a missing key = %v, %v; want false, nil", ok, err)
	}
	if n := b.client.Exists(b.ctx, b.locker.Key("missing")).Val(); n != 0 {
		t.Fatal("Extend of a missing key created it")
	}
}

func TestRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := b.locker.Key("job")

	if !mustAcquire(t, b, "job", "t1", time.Minute) {
		t.Fatal("Acquire = false")
	}

	ok, err := b.locker.Release(b.ctx, "job", "intruder")
	if err != nil || ok {
		t.Fatalf("Release with wrong token = %v, %v; want false, nil", ok, err)
	}
	if got := holder(t, b, "job"); got != "t1" {
		t.Fatalf("Holder after wrong Release = %q, want t1", got)
	}

	ok, err = b.locker.Release(b.ctx, "job", "t1")
	if err != nil || !ok {
		t.Fatalf("Release with right token = %v, %v; want true, nil", ok, err)
	}
	if n := b.client.Exists(b.ctx, key).Val(); n != 0 {
		t.Fatal("key still exists after Release")
	}
	if tok, held, err := b.locker.Holder(b.ctx, "job"); err != nil || held || tok != "" {
		t.Fatalf("Holder after Release = %q, %v, %v; want \"\", false, nil", tok, held, err)
	}

	ok, err = b.locker.Release(b.ctx, "job", "t1")
	if err != nil || ok {
		t.Fatalf("second Release = %v, %v; want false, nil", ok, err)
	}
	if !mustAcquire(t, b, "job", "t2", time.Minute) {
		t.Fatal("Acquire after Release = false, want true")
	}
}

func TestAcquireRace(t *testing.T) {
	t.Parallel()
	b := setup(t)

	const racers = 64
	var (
		wins   atomic.Int32
		winner atomic.Value
		wg     sync.WaitGroup
		start  = make(chan struct{})
		errs   = make(chan error, racers)
	)
	for i := range racers {
		wg.Go(func() {
			token := fmt.Sprintf("racer-%d", i)
			<-start
			ok, err := b.locker.Acquire(b.ctx, "job", token, time.Minute)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				wins.Add(1)
				winner.Store(token)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Acquire: %v", err)
	}
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d of %d racers acquired the lock, want exactly 1", n, racers)
	}
	if got := holder(t, b, "job"); got != winner.Load().(string) {
		t.Fatalf("Holder = %q, want the winner %q", got, winner.Load())
	}
}

func TestEnvironmentsAreIsolated(t *testing.T) {
	t.Parallel()
	a := setup(t)
	b := setup(t)

	if !mustAcquire(t, a, "job", "a", time.Minute) {
		t.Fatal("Acquire in env a = false")
	}
	if !mustAcquire(t, b, "job", "b", time.Minute) {
		t.Fatal("Acquire of the same name in env b = false, want true")
	}
	if a.locker.Key("job") == b.locker.Key("job") {
		t.Fatalf("both environments use key %q", a.locker.Key("job"))
	}
	if ok, err := b.locker.Release(b.ctx, "job", "a"); err != nil || ok {
		t.Fatalf("Release in env b with env a's token = %v, %v; want false, nil", ok, err)
	}
	if got := holder(t, a, "job"); got != "a" {
		t.Fatalf("Holder in env a = %q, want a", got)
	}
	if got := holder(t, b, "job"); got != "b" {
		t.Fatalf("Holder in env b = %q, want b", got)
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)

	if !mustAcquire(t, b, "job", "t1", 50*time.Millisecond) {
		t.Fatal("Acquire = false")
	}
	if mustAcquire(t, b, "job", "t2", time.Minute) {
		t.Fatal("Acquire before expiry = true, want false")
	}
	testenv.Eventually(t, 5*time.Second, "the lock to expire and be taken by t2", func() bool {
		return mustAcquire(t, b, "job", "t2", time.Minute)
	})
	if got := holder(t, b, "job"); got != "t2" {
		t.Fatalf("Holder = %q, want t2", got)
	}
	// The old holder woke up late: it can neither prolong nor delete t2's lock.
	if ok, err := b.locker.Extend(b.ctx, "job", "t1", time.Hour); err != nil || ok {
		t.Fatalf("Extend by the expired holder = %v, %v; want false, nil", ok, err)
	}
	if ok, err := b.locker.Release(b.ctx, "job", "t1"); err != nil || ok {
		t.Fatalf("Release by the expired holder = %v, %v; want false, nil", ok, err)
	}
	if got := holder(t, b, "job"); got != "t2" {
		t.Fatalf("Holder = %q, want t2", got)
	}
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	b := setup(t)

	tests := []struct {
		name, lock, token string
		ttl               time.Duration
	}{
		{"empty name", "", "t", time.Second},
		{"empty token", "job", "", time.Second},
		{"zero ttl", "job", "t", 0},
		{"sub-millisecond ttl", "job", "t", time.Microsecond},
		{"negative ttl", "job", "t", -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := b.locker.Acquire(b.ctx, tt.lock, tt.token, tt.ttl); err == nil {
				t.Error("Acquire: nil error")
			}
			if _, err := b.locker.Extend(b.ctx, tt.lock, tt.token, tt.ttl); err == nil {
				t.Error("Extend: nil error")
			}
		})
	}
	if _, err := b.locker.Release(b.ctx, "job", ""); err == nil {
		t.Error("Release with empty token: nil error")
	}
	if n := b.client.Exists(b.ctx, b.locker.Key("job"), b.locker.Key("")).Val(); n != 0 {
		t.Fatal("an invalid call wrote a key")
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	tb := setup(b)
	n := 0
	for b.Loop() {
		ok, err := tb.locker.Acquire(tb.ctx, "job", "t", time.Minute)
		if err != nil || !ok {
			b.Fatalf("Acquire = %v, %v", ok, err)
		}
		ok, err = tb.locker.Release(tb.ctx, "job", "t")
		if err != nil || !ok {
			b.Fatalf("Release = %v, %v", ok, err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkExtend(b *testing.B) {
	tb := setup(b)
	if ok, err := tb.locker.Acquire(tb.ctx, "job", "t", time.Minute); err != nil || !ok {
		b.Fatalf("Acquire = %v, %v", ok, err)
	}
	n := 0
	for b.Loop() {
		ok, err := tb.locker.Extend(tb.ctx, "job", "t", time.Minute)
		if err != nil || !ok {
			b.Fatalf("Extend = %v, %v", ok, err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "ops/s")
}
