package pubsub_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pubsub"
)

// TestClusterShardedPubSub: on Redis Cluster an event published through a client seeded
// with one node reaches a Hub whose client was seeded with another, over a sharded channel
// that only the master of the channel's slot serves.
func TestClusterShardedPubSub(t *testing.T) {
	t.Parallel()
	set := testenv.PrivateCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pubClient, subClient := set.Client(t, 0), set.Client(t, 2)
	for _, env := range []string{"alpha", "beta", "gamma"} { // different slots, likely different masters
		hub := pubsub.NewHub(subClient, env, pubsub.HubOptions{})
		hctx, hcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = hub.Run(hctx) }()
		sub := hub.Subscribe("run:1")
		pub := pubsub.NewPublisher(pubClient, env, pubsub.PublisherOptions{InstanceID: "a"})
		// The first message is the Resync of the Hub's connection.
		if m := nextMessage(t, sub); !m.Resync {
			t.Fatalf("%s: first message %+v, want the connection's Resync", env, m)
		}
		if err := pub.Publish(ctx, []string{"run:1"}, "run:1", []byte(`{"env":"`+env+`"}`), true); err != nil {
			t.Fatal(err)
		}
		if m := nextMessage(t, sub); m.Key != "run:1" || string(m.Payload) != `{"env":"`+env+`"}` {
			t.Fatalf("%s: got %+v, want the published final", env, m)
		}
		// Only the slot's master holds the subscription, as a shard channel.
		master, err := pubClient.MasterForKey(ctx, pubsub.Channel(env))
		if err != nil {
			t.Fatal(err)
		}
		if chans := master.PubSubShardChannels(ctx, "*").Val(); !slices.Contains(chans, pubsub.Channel(env)) {
			t.Errorf("%s: slot master's shard channels = %v, want %s", env, chans, pubsub.Channel(env))
		}
		if err := pubClient.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
			if n := c.PubSubNumSub(ctx, pubsub.Channel(env)).Val()[pubsub.Channel(env)]; n != 0 {
				t.Errorf("%s: %d plain subscribers on %s", env, n, c.Options().Addr)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		_ = pub.Close(ctx)
		hcancel()
		<-done
	}
}

func nextMessage(t *testing.T, sub *pubsub.Subscription) pubsub.Message {
	t.Helper()
	select {
	case m, ok := <-sub.C():
		if !ok {
			t.Fatal("subscription closed")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
	}
	panic("unreachable")
}

// TestClusterSlotMoveResubscribes: when the master of the channel's slot hands the slot to
// another master, Redis drops the sharded subscription; the Hub subscribes again on the new
// owner, sends a Resync, and events flow again.
func TestClusterSlotMoveResubscribes(t *testing.T) {
	t.Parallel()
	set := testenv.PrivateCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := set.Client(t, 0)
	const env = "moving"
	hub := pubsub.NewHub(c, env, pubsub.HubOptions{MaxBackoff: 200 * time.Millisecond})
	hctx, hcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = hub.Run(hctx) }()
	defer func() { hcancel(); <-done }()
	sub := hub.Subscribe("run:1")
	if m := nextMessage(t, sub); !m.Resync {
		t.Fatalf("first message %+v, want the connection's Resync", m)
	}
	pub := pubsub.NewPublisher(c, env, pubsub.PublisherOptions{MinInterval: -1})
	defer pub.Close(ctx)

	slot := c.ClusterKeySlot(ctx, pubsub.Channel(env)).Val()
	owner, err := c.MasterForKey(ctx, pubsub.Channel(env))
	if err != nil {
		t.Fatal(err)
	}
	var target *redis.Client
	var nodes []*redis.Client
	for _, n := range set.Nodes {
		nc := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", n.Port)})
		defer nc.Close()
		nodes = append(nodes, nc)
		if nc.Options().Addr != owner.Options().Addr && target == nil {
			target = nc
		}
	}
	targetID := target.Do(ctx, "CLUSTER", "MYID").Val()
	// The slot holds no keys, so it moves without MIGRATE: the new owner first, then the rest.
	for _, nc := range append([]*redis.Client{target}, nodes...) {
		if err := nc.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", targetID).Err(); err != nil {
			t.Fatalf("CLUSTER SETSLOT on %s: %v", nc.Options().Addr, err)
		}
	}
	resynced := false
	testenv.Eventually(t, 20*time.Second, "an event after the slot moved", func() bool {
		if err := pub.Publish(ctx, []string{"run:1"}, "run:1", []byte(`{}`), false); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-sub.C():
			if m.Resync {
				resynced = true
			}
			return resynced && !m.Resync
		case <-time.After(200 * time.Millisecond):
			return false
		}
	})
	if got, err := c.MasterForKey(ctx, pubsub.Channel(env)); err != nil || got.Options().Addr != target.Options().Addr {
		t.Fatalf("the channel's master is %v (%v); want %s", got, err, target.Options().Addr)
	}
}
