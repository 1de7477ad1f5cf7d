// Package pubsubtest runs pubsub's Publisher and Hub for the length of a test, on a Redis
// client and an environment the test brings.
package pubsubtest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/pubsub"
)

// ReadyTimeout bounds how long Hub waits for a hub to subscribe.
const ReadyTimeout = 30 * time.Second

// Publisher returns a Publisher on env's channel, closed when the test ends: the messages it
// still holds are sent then, for up to 5 s.
func Publisher(tb testing.TB, client redis.UniversalClient, env string, opts pubsub.PublisherOptions) *pubsub.Publisher {
	p := pubsub.NewPublisher(client, env, opts)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

// Hub runs a Hub on env's channel until the test ends and returns it once it has subscribed.
// It fails tb when Run returns an error, or returns before the hub subscribed.
func Hub(tb testing.TB, client redis.UniversalClient, env string, opts pubsub.HubOptions) *pubsub.Hub {
	tb.Helper()
	h := pubsub.NewHub(client, env, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Hub.Run: %v", err)
		}
	})
	select {
	case <-h.Ready():
	case err := <-done:
		tb.Fatalf("Hub.Run returned before subscribing: %v", err)
	case <-time.After(ReadyTimeout):
		tb.Fatal("hub not subscribed after", ReadyTimeout)
	}
	return h
}
