package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// leaseLog is an EventSink that keeps the first RUNNING event of a run and the first one after
// it whose lease and heartbeat both moved on.
type leaseLog struct {
	mu             sync.Mutex
	first, renewed *bt.RunRecord
}

func (l *leaseLog) RunChanged(ev runner.RunEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	run := ev.Run
	switch {
	case run.Status != bt.StatusRunning:
	case l.first == nil:
		l.first = &run
	case l.renewed == nil && run.LeaseUntil.After(l.first.LeaseUntil) && run.HeartbeatAt.After(l.first.HeartbeatAt):
		l.renewed = &run
	}
}

func (l *leaseLog) get() (first, renewed *bt.RunRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first, l.renewed
}

// TestRunEventsCarryTheRenewedLease: the events a running run publishes carry the lease end
// and heartbeat the database has after each write, so a live page follows the renewals. They
// used to carry the run's start values for its whole life, and a healthy run looked expired.
func TestRunEventsCarryTheRenewedLease(t *testing.T) {
	b := setup(t)
	sink := &leaseLog{}
	job := newItemsJob("beating", 1_000_000)
	job.reached = make(chan int)
	r := b.runner(func(c *runner.Config) { c.Events = sink }, job) // 2s lease: renewed after 1s
	id := mustStart(t, r, runner.StartParams{Job: "beating"})

	deadline := time.After(20 * time.Second)
	var first, renewed *bt.RunRecord
	for renewed == nil {
		select {
		case <-job.reached:
		case <-deadline:
			first, _ := sink.get()
			t.Fatalf("no event of run %d carried a renewed lease within 20s; first event: %+v", id, first)
		}
		first, renewed = sink.get()
	}
	var dbLease, dbBeat time.Time
	if err := b.Pool.QueryRow(context.Background(), `SELECT lease_until, heartbeat_at FROM job_runs WHERE id = $1`, id).Scan(&dbLease, &dbBeat); err != nil {
		t.Fatal(err)
	}
	if renewed.LeaseUntil.After(dbLease) || renewed.HeartbeatAt.After(dbBeat) {
		t.Fatalf("event's lease %v / heartbeat %v are ahead of the database's %v / %v", renewed.LeaseUntil, renewed.HeartbeatAt, dbLease, dbBeat)
	}
	if left := renewed.LeaseUntil.Sub(renewed.HeartbeatAt); left <= 0 || left > 2*time.Second {
		t.Fatalf("event's lease ends %v after its heartbeat; want within the 2s lease (first event: %v / %v)", left, first.LeaseUntil, first.HeartbeatAt)
	}

	if _, err := r.Runs().Cancel(context.Background(), id, "test"); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range job.reached {
		}
	}()
	b.waitStatus(id, bt.StatusCancelled)
}
