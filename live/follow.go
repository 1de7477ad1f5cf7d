package live

import (
	"context"
	"time"

	"github.com/baton-run/baton/pubsub"
)

// followed says how to follow the states of one thing (a run, a reconcile request).
type followed[T any] struct {
	topic  string
	read   func(ctx context.Context) (*T, error) // the snapshot, and re-reads
	reread func(ctx context.Context) *T          // a re-read, nil (and logged) on failure
	decode func(m pubsub.Message) (*T, bool)     // the state m carries, if it is one of this thing
	newer  func(next, prev *T) bool              // next supersedes prev (nil: none sent yet)
	final  func(v *T) bool                       // nothing follows v
}

// follow streams the states of one thing until its final one: snapshot first, then events,
// re-reading on Resync and after a quiet spell without an event (in case an event was lost
// without a reconnection).
//
// Latest wins: while the consumer is still busy with an earlier state, newer states replace
// each other in pending, so the consumer gets the newest state next, never a backlog, and the
// feed's buffer is drained at the rate events arrive. The final state supersedes every other
// and is never replaced, so it always arrives.
func follow[T any](ctx context.Context, feed Feed, quiet time.Duration, f followed[T]) (<-chan *T, error) {
	sub := feed.Subscribe(f.topic)
	snap, err := f.read(ctx)
	if err != nil {
		sub.Close()
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
					next = f.reread(ctx)
				} else if decoded, ok := f.decode(m); ok {
					next = decoded
				}
			case <-timer.C:
				next = f.reread(ctx)
			}
			timer.Reset(quiet)
			newest := last
			if pending != nil {
				newest = pending
			}
			if next != nil && f.newer(next, newest) {
				pending = next
			}
		}
	}()
	return ch, nil
}
