package redisconn_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/redisconn"
	"github.com/baton-run/baton/internal/testenv"
)

// TestTLS: a rediss URL with the CA file that signed the server's certificate connects; the
// same URL without it is refused by certificate verification.
func TestTLS(t *testing.T) {
	t.Parallel()
	srv := testenv.PrivateTLSRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisconn.New(srv.TLSURL(), redisconn.Options{CAFile: srv.Certs.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	untrusted, err := redisconn.New(srv.TLSURL()+"?max_retries=-1", redisconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer untrusted.Close()
	if err := untrusted.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("PING without the CA file = %v; want a certificate error", err)
	}
}

// TestSentinelFollowsFailover: the client finds the master through the sentinels, and after
// the master is killed and the replica promoted it writes to the new master.
func TestSentinelFollowsFailover(t *testing.T) {
	t.Parallel()
	set := testenv.PrivateSentinel(t)
	c, err := redisconn.New(set.URL(), redisconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	set.Master.Kill(t)
	killed := time.Now()
	testenv.Eventually(t, 30*time.Second, "a write on the promoted replica", func() bool {
		wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer wcancel()
		return c.Set(wctx, "after", "1", 0).Err() == nil
	})
	t.Logf("writes resumed %s after the master was killed", time.Since(killed).Round(time.Millisecond))
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(set.Replica.Port)})
	defer rc.Close()
	role, err := rc.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] != "master" {
		t.Fatalf("replica's ROLE = %v, %v; want master", role, err)
	}
}

// TestClusterClient: the client reaches keys on every master through the seeds.
func TestClusterClient(t *testing.T) {
	t.Parallel()
	set := testenv.PrivateCluster(t)
	c, err := redisconn.New(set.URL(), redisconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !redisconn.IsCluster(c) {
		t.Fatal("IsCluster = false for a redis+cluster URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	var n atomic.Int32 // ForEachMaster calls concurrently
	if err := c.(*redis.ClusterClient).ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if m.DBSize(ctx).Val() > 0 {
			n.Add(1)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n.Load() < 2 {
		t.Fatalf("keys landed on %d masters; want them spread", n.Load())
	}
}
