package limiter_test

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/runner/internal/limiter"
)

// The path of one call to a downstream: wait for a permit, make the call, tell the limiter
// how it went, release the permit.
func Example() {
	l := limiter.New(limiter.Config{
		Redis:    redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true}),
		Prefix:   "baton:{dev}:ds:",
		Instance: "host-1",
		Share:    func() int { return 3 }, // live instances, from the database
	})
	defer l.Close()
	lim := limiter.Limits{Rate: 50, Burst: 10, Concurrency: 5} // from the database, cached
	ctx := context.Background()

	p, err := l.Acquire(ctx, "provider", lim, time.Now().Add(30*time.Second)) // the item's lease
	var held *limiter.HeldError
	switch {
	case errors.As(err, &held):
		return // quota spent: hold the item until held.Until
	case errors.Is(err, limiter.ErrNoTurn):
		return // no turn within the lease: retry the item later, it did not fail
	case err != nil:
		return
	}
	defer p.Release()
	status, retryAfter := call(ctx)
	switch status {
	case 429, 503:
		l.Pushback(ctx, "provider", lim, retryAfter)
		l.Record("provider", limiter.OutcomeThrottled, p.Waited)
	case 200:
		l.Record("provider", limiter.OutcomeOK, p.Waited)
	default:
		l.Record("provider", limiter.OutcomeError, p.Waited)
	}
}

func call(context.Context) (status int, retryAfter time.Duration) { return 200, 0 }
