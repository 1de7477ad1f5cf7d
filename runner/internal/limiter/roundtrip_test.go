package limiter_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/runner/internal/limiter"
)

// commandCount counts the commands a client sends.
type commandCount struct{ n atomic.Int64 }

func (h *commandCount) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *commandCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *commandCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestOneRoundTrip: with a slot free, taking the slot, the rate turn and the quota count is
// one command, and Release another.
func TestOneRoundTrip(t *testing.T) {
	t.Parallel()
	ls, c := instances(t, 1, nil)
	hook := &commandCount{}
	c.AddHook(hook)
	lim := limiter.Limits{Rate: 1000, Burst: 100, Concurrency: 10, Quota: 1000, QuotaWindow: time.Hour}
	ctx := context.Background()
	warm, err := ls[0].Acquire(ctx, "provider", lim, time.Now().Add(time.Second)) // loads the script
	if err != nil {
		t.Fatal(err)
	}
	warm.Release()
	hook.n.Store(0)
	p, err := ls[0].Acquire(ctx, "provider", lim, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if n := hook.n.Load(); n != 1 {
		t.Errorf("Acquire sent %d commands, want 1", n)
	}
	p.Release()
	if n := hook.n.Load(); n != 2 {
		t.Errorf("Acquire and Release sent %d commands, want 2", n)
	}
}

// TestSlotThenTurn: callers waiting for slots that free together still start at the rate,
// because a caller takes its rate turn only with its slot.
func TestSlotThenTurn(t *testing.T) {
	t.Parallel()
	ls, _ := instances(t, 2, nil)
	lim := limiter.Limits{Rate: 10, Burst: 1, Concurrency: 4}
	ctx := context.Background()
	var holders []*limiter.Permit
	for i := range 4 {
		p, err := ls[i%2].Acquire(ctx, "provider", lim, time.Now().Add(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		holders = append(holders, p)
	}
	var got starts
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := ls[i%2].Acquire(ctx, "provider", lim, time.Now().Add(5*time.Second))
			if err != nil {
				t.Errorf("Acquire: %v", err)
				return
			}
			got.add(time.Now())
			p.Release()
		}()
	}
	time.Sleep(600 * time.Millisecond) // the holders' calls; the waiters poll for slots meanwhile
	for _, p := range holders {
		p.Release()
	}
	wg.Wait()
	// At 10/s with a burst of 1 the four waiters start 100ms apart, however long they waited.
	if most, at := got.maxInWindow(250 * time.Millisecond); most > 3 || len(at) != 4 {
		t.Errorf("%d of %d waiters started within 250ms of each other, want <= 3 at 10/s", most, len(at))
	}
}
