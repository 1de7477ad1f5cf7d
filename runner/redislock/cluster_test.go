package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner/redislock"
)

// TestLockOnCluster: the keys of an environment share a slot, and Acquire, Extend (a Lua script) and Release work through a Cluster
// client, for environments whose slots live on different masters than the seed.
func TestLockOnCluster(t *testing.T) {
	t.Parallel()
	set := testenv.PrivateCluster(t)
	c := set.Client(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Every key and channel of one environment hashes, by Redis' own count, to the slot of
	// the environment's name, so Cluster keeps them on one master.
	l := redislock.New(c, "prod")
	for _, k := range []string{l.Key("a"), l.Key("demo-collect"), l.Key("x{y}z"), pubsub.Channel("prod"),
		redislock.Namespace("prod") + "starts", redislock.Namespace("prod") + "start-reply:abc"} {
		if got, want := c.ClusterKeySlot(ctx, k).Val(), c.ClusterKeySlot(ctx, "prod").Val(); got != want {
			t.Errorf("slot of %q = %d, want %d (the slot of the hash tag prod)", k, got, want)
		}
	}
	masters := map[string]bool{}
	for _, env := range []string{"alpha", "beta", "gamma", "delta"} {
		l := redislock.New(c, env)
		if ok, err := l.Acquire(ctx, "job", "t1", time.Minute); err != nil || !ok {
			t.Fatalf("%s: Acquire = %v, %v", env, ok, err)
		}
		if ok, err := l.Acquire(ctx, "job", "t2", time.Minute); err != nil || ok {
			t.Fatalf("%s: second Acquire = %v, %v; want held", env, ok, err)
		}
		if ok, err := l.Extend(ctx, "job", "t1", 2*time.Minute); err != nil || !ok {
			t.Fatalf("%s: Extend = %v, %v", env, ok, err)
		}
		if ok, err := l.Extend(ctx, "job", "t2", time.Minute); err != nil || ok {
			t.Fatalf("%s: Extend by another token = %v, %v", env, ok, err)
		}
		if pttl := c.PTTL(ctx, l.Key("job")).Val(); pttl <= time.Minute {
			t.Fatalf("%s: PTTL %s after Extend to 2m", env, pttl)
		}
		if ok, err := l.Release(ctx, "job", "t1"); err != nil || !ok {
			t.Fatalf("%s: Release = %v, %v", env, ok, err)
		}
		if _, held, err := l.Holder(ctx, "job"); err != nil || held {
			t.Fatalf("%s: Holder after Release = %v, %v", env, held, err)
		}
		m, err := c.MasterForKey(ctx, l.Key("job"))
		if err != nil {
			t.Fatal(err)
		}
		masters[m.Options().Addr] = true
	}
	t.Logf("the environments' locks lived on %d masters", len(masters))
}
