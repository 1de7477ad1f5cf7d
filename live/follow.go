package live

import (
	"context"
	"time"

	"github.com/baton-run/baton/pubsub"
)

// followed says how to follow the states of one thing (a run, a reconcile request). Each
// function is handed the newest state the stream has (sent or pending; nil before the
// snapshot) and returns a newer one, or nil when it has nothing newer: a state is built from
// the one before it, as a sharded run's is from its shards' latest.
type followed[T any] struct {
	// start subscribes to the feed and then reads the snapshot, in that order, so that nothing
	// published after the snapshot is missed.
	start  func(ctx context.Context) (Subscription, *T, error)
	apply  func(ctx context.Context, cur *T, m pubsub.Message) *T // the state after event m
	reread func(ctx context.Context, cur *T) *T                   // the database's state, logged on failure
	final  func(v *T) bool                                        // nothing follows v
}

// subscribeThenRead is the usual start: subscribe to topic, then read.
func subscribeThenRead[T any](feed Feed, topic string, read func(ctx context.Context) (*T, error)) func(ctx context.Context) (Subscription, *T, error) {
	return func(ctx context.Context) (Subscription, *T, error) {
		sub := feed.Subscribe(topic)
		v, err := read(ctx)
		if err != nil {
			sub.Close()
			return nil, nil, err
		}
		return sub, v, nil
	}
}

// follow streams the states of one thing until its final one: snapshot first, then events,
// re-reading on Resync and after a quiet spell without an event (in case an event was lost
// without a reconnection).
//
// Latest wins: while the consumer is still busy with an earlier state, newer states replace
// each other in pending, so the consumer gets the newest state next, never a backlog, and the
// feed's buffer is drained at the rate events arrive. The final state supersedes every other
// and is never replaced, so it always arrives.
func follow[T any](ctx context.Context, quiet time.Duration, f followed[T]) (<-chan *T, error) {
	sub, snap, err := f.start(ctx)
	if err != nil {
		return nil, err
	}
	ch := make(chan *T, 1)
	go func() {
		defer close(ch)
		defer sub.Close()
		var last *T     // the last state sent
		pending := snap // the newest state not yet sent, if any
		timer := time.NewTimer(quiet)
		defer timer.Stop()
		for {
			var out chan<- *T
			if pending != nil {
				out = ch
			}
			newest := last
			if pending != nil {
				newest = pending
			}
			var next *T
			select {
			case <-ctx.Done():
				return
			case out <- pending:
				last, pending = pending, nil
				if f.final(last) {
					return
				}
				continue
			case m, ok := <-sub.C():
				if !ok {
					return // the feed stopped: the instance is shutting down
				}
				if m.Resync {
					next = f.reread(ctx, newest)
				} else {
					next = f.apply(ctx, newest, m)
				}
			case <-timer.C:
				next = f.reread(ctx, newest)
			}
			timer.Reset(quiet)
			if next != nil {
				pending = next
			}
		}
	}()
	return ch, nil
}
