package pubsub

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Redis Cluster broadcasts a plain PUBLISH to every node of the cluster; a sharded one
// (SPUBLISH) goes only to the master of the channel's hash slot and its replicas, where the
// subscribers (SSUBSCRIBE) are. On a Cluster client the Publisher and the Hub therefore use
// sharded pub/sub; on one server or Sentinel, which have no shards, plain pub/sub.

// sharded reports whether c is a Cluster client.
func sharded(c redis.UniversalClient) bool {
	_, ok := c.(*redis.ClusterClient)
	return ok
}

// publish queues the publication of msg on channel in pipe, sharded on a Cluster client.
func publish(ctx context.Context, c redis.UniversalClient, pipe redis.Pipeliner, channel string, msg []byte) {
	if sharded(c) {
		pipe.SPublish(ctx, channel, msg)
		return
	}
	pipe.Publish(ctx, channel, msg)
}

// subscribe returns a PubSub subscribed to channel, sharded on a Cluster client, and the
// kind of the confirmation Redis sends for the subscription ("ssubscribe" or "subscribe").
func subscribe(ctx context.Context, c redis.UniversalClient, channel string) (ps *redis.PubSub, kind string, err error) {
	if sharded(c) {
		ps = c.SSubscribe(ctx)
		return ps, "ssubscribe", ps.SSubscribe(ctx, channel)
	}
	ps = c.Subscribe(ctx)
	return ps, "subscribe", ps.Subscribe(ctx, channel)
}
