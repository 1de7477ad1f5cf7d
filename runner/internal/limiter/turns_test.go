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
