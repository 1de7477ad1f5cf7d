package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/internal/limiter"
)

// A call waiting for a slot is revoked: Revoke returns its note, and the wait ends with no
// turn even when the slot comes free. A call granted its turn is not revoked.
func TestRevokeWaitingIntentNeverGranted(t *testing.T) {
	ls, _ := instances(t, 2, nil)
	lim := limiter.Limits{Concurrency: 1}
	ctx := context.Background()
	first, err := ls[0].Acquire(ctx, "solo", lim, time.Now().Add(time.Second), limiter.Intent{ID: "granted", Note: "TRANSIENT"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		p, err := ls[1].Acquire(ctx, "solo", lim, time.Now().Add(20*time.Second), limiter.Intent{ID: "waiting", Note: "CONFLICT"})
		if err == nil {
			p.Release()
		}
		done <- err
	}()
	var revoked map[string]string
	testenv.Eventually(t, 10*time.Second, "the waiting call to be revoked", func() bool {
		revoked, err = limiter.Revoke(ctx, ls[0], []string{"granted", "waiting", "unknown"}, time.Minute)
		return err == nil && len(revoked) > 0
	})
	if len(revoked) != 1 || revoked["waiting"] != "CONFLICT" {
		t.Fatalf("revoked %v; want only the waiting intent, with its note", revoked)
	}
	first.Release() // the slot comes free: the revoked call still gets no turn
	select {
	case err := <-done:
		if !errors.Is(err, limiter.ErrNoTurn) {
			t.Fatalf("the revoked call's Acquire returned %v; want no turn", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the revoked call's Acquire did not return")
	}
	// Revoking again is the same answer, and a revoked intent asking anew gets no turn.
	if again, err := limiter.Revoke(ctx, ls[0], []string{"waiting"}, time.Minute); err != nil || again["waiting"] != "CONFLICT" {
		t.Fatalf("a second Revoke: %v, %v; want the intent revoked still", again, err)
	}
	if _, err := ls[0].Acquire(ctx, "solo", lim, time.Now().Add(time.Second), limiter.Intent{ID: "waiting"}); !errors.Is(err, limiter.ErrNoTurn) {
		t.Fatalf("a revoked intent asking again: %v; want no turn", err)
	}
}

// A turn granted with a rate wait is not taken until the wait is over: revoked during the
// wait, it is never taken, and the call gets no turn; not revoked, it is taken (granted).
// A turn granted with no wait is taken at once, with no step more.
func TestRevokeDuringRateWaitNeverTaken(t *testing.T) {
	stalled, release := make(chan struct{}), make(chan struct{})
	ls, _ := instances(t, 1, func(c *limiter.Config) {
		c.Waited = func(id string) {
			if id != "stalled" {
				if id != "taken" {
					t.Errorf("intent %q took its turn after a wait; it was granted with none", id)
				}
				return
			}
			close(stalled)
			<-release
		}
	})
	lim := limiter.Limits{Rate: 5, Burst: 1}
	ctx := context.Background()
	first, err := ls[0].Acquire(ctx, "paced", lim, time.Now().Add(time.Second), limiter.Intent{ID: "first", Note: "TRANSIENT"})
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	done := make(chan error, 1)
	go func() {
		p, err := ls[0].Acquire(ctx, "paced", lim, time.Now().Add(10*time.Second), limiter.Intent{ID: "stalled", Note: "CONFLICT"})
		if err == nil {
			p.Release()
		}
		done <- err
	}()
	select {
	case <-stalled:
	case <-time.After(15 * time.Second):
		t.Fatal("the second call's rate wait did not end")
	}
	revoked, err := limiter.Revoke(ctx, ls[0], []string{"first", "stalled", "unknown"}, time.Minute)
	if err != nil || len(revoked) != 1 || revoked["stalled"] != "CONFLICT" {
		t.Fatalf("revoked %v (%v); want only the intent granted with a wait, with its note", revoked, err)
	}
	close(release)
	select {
	case err := <-done:
		if !errors.Is(err, limiter.ErrNoTurn) {
			t.Fatalf("the revoked call's Acquire returned %v; want no turn", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the revoked call's Acquire did not return")
	}
	if again, err := limiter.Revoke(ctx, ls[0], []string{"stalled"}, time.Minute); err != nil || again["stalled"] != "CONFLICT" {
		t.Fatalf("a second Revoke: %v, %v; want the intent revoked still", again, err)
	}
	// Not revoked, a turn granted with a wait is taken: Revoke leaves it.
	p, err := ls[0].Acquire(ctx, "paced", lim, time.Now().Add(10*time.Second), limiter.Intent{ID: "taken", Note: "TRANSIENT"})
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	if revoked, err := limiter.Revoke(ctx, ls[0], []string{"taken"}, time.Minute); err != nil || len(revoked) != 0 {
		t.Fatalf("revoked %v (%v) after the turn was taken; want none", revoked, err)
	}
}
