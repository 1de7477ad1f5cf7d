package live

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

func TestSupersedes(t *testing.T) {
	t.Parallel()
	run := func(status bt.RunStatus, processed int64) *bt.RunRecord {
		return &bt.RunRecord{ID: 1, Status: status, Processed: processed}
	}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	beat := func(r *bt.RunRecord, leaseUntil, heartbeat time.Time) *bt.RunRecord {
		r.LeaseUntil, r.HeartbeatAt = leaseUntil, heartbeat
		return r
	}
	for _, tc := range []struct {
		next, prev *bt.RunRecord
		want       bool
	}{
		{run(bt.StatusRunning, 0), nil, true},
		{run(bt.StatusRunning, 2), run(bt.StatusRunning, 1), true},
		{run(bt.StatusRunning, 1), run(bt.StatusRunning, 2), false}, // progress never goes back
		{run(bt.StatusRunning, 2), run(bt.StatusRunning, 2), false}, // nothing new
		{run(bt.StatusSucceeded, 2), run(bt.StatusRunning, 2), true},
		{run(bt.StatusRunning, 3), run(bt.StatusFailed, 2), false}, // final is final
		// A renewed lease is news even when no item moved: a page must not show the old one.
		{beat(run(bt.StatusRunning, 2), t0.Add(time.Minute), t0.Add(30*time.Second)), beat(run(bt.StatusRunning, 2), t0.Add(30*time.Second), t0), true},
		// A state older than the one sent (its heartbeat is earlier) is not.
		{beat(run(bt.StatusRunning, 2), t0.Add(30*time.Second), t0), beat(run(bt.StatusRunning, 2), t0.Add(time.Minute), t0.Add(30*time.Second)), false},
	} {
		if got := supersedes(tc.next, tc.prev); got != tc.want {
			t.Errorf("supersedes(%+v, %+v) = %v", tc.next, tc.prev, got)
		}
	}
}

func TestAlertWatcherSharesOnePoller(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	active := []bt.Alert{{ID: "old"}}
	var polls atomic.Int32
	polled := make(chan struct{}, 100)
	w := NewAlertWatcher(5*time.Millisecond, func(context.Context) ([]bt.Alert, error) {
		polls.Add(1)
		select {
		case polled <- struct{}{}:
		default:
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]bt.Alert(nil), active...), nil
	}, slog.New(slog.DiscardHandler))

	c1, stop1 := w.Subscribe()
	c2, stop2 := w.Subscribe()
	<-polled // the baseline poll: "old" is already active and not announced
	<-polled
	mu.Lock()
	active = append(active, bt.Alert{ID: "new", Kind: bt.AlertAmbiguousEffect})
	mu.Unlock()
	for _, c := range []<-chan bt.Alert{c1, c2} {
		select {
		case a := <-c:
			if a.ID != "new" {
				t.Fatalf("raised %q, want new", a.ID)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no alert raised")
		}
	}
	// Nothing more: "new" stays active, "old" was never announced.
	for range 3 {
		<-polled
	}
	select {
	case a := <-c1:
		t.Fatalf("raised %q again", a.ID)
	default:
	}
	stop1()
	stop2()
	stop2()
	w.mu.Lock()
	running := w.stop != nil
	w.mu.Unlock()
	if running {
		t.Fatal("the poller still runs without subscribers")
	}
}

func TestFlightSharesReads(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release, started := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f := NewFlight(time.Hour, func(ctx context.Context, k int) (int, error) {
		calls.Add(1)
		once.Do(func() { close(started) })
		<-release
		return k * 2, nil
	})
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := f.Get(context.Background(), 21); v != 42 || err != nil {
				t.Errorf("get = %d, %v", v, err)
			}
		}()
	}
	<-started // readers arriving later wait for this fetch, or take its cached result
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d fetches for 10 concurrent readers, want 1", n)
	}
}
