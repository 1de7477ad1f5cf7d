package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
)

// TestLeaseOverrideIsTheRunsLease: the lease an operator sets with
// updateJobSchedule(leaseSeconds:) is the lease the job's next run holds — in its row (where
// activation and every renewal take it from), through the API and on its Redis lock — and
// clearing it (0) gives runs the job's default again.
func TestLeaseOverrideIsTheRunsLease(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	reached := make(chan int, 4)
	// The job declares no lease: the instance's DefaultLease (5s) is its default.
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "leased", n: 1, gate: gate, reached: reached}}})
	op := b.token(model.RoleOperator)
	ctx := context.Background()

	setLease := func(secs int) {
		t.Helper()
		var data struct {
			UpdateJobSchedule struct {
				Job        *struct{ LeaseSeconds *int }
				UserErrors []userError
			}
		}
		i.post(t, op, `mutation($s: Int) { updateJobSchedule(input: {name: "leased", leaseSeconds: $s}) {
			job { leaseSeconds } userErrors { code message field } } }`, map[string]any{"s": secs}).decode(t, &data)
		if len(data.UpdateJobSchedule.UserErrors) > 0 || data.UpdateJobSchedule.Job == nil {
			t.Fatalf("updateJobSchedule(leaseSeconds: %d): %+v", secs, data.UpdateJobSchedule.UserErrors)
		}
	}
	// runLease starts the job, waits until its run is RUNNING at the item's gate and returns
	// the run's lease as the database holds it and as the API shows it.
	runLease := func() (id string, stored int, byDB, byAPI time.Duration) {
		t.Helper()
		// RESTART: a new generation, so the item runs again rather than being found done.
		var start struct {
			StartJob struct {
				Run        *struct{ ID string }
				UserErrors []userError
			}
		}
		i.post(t, op, `mutation { startJob(input: {name: "leased", mode: RESTART}) { run { id } userErrors { code message } } }`, nil).
			decode(t, &start)
		if start.StartJob.Run == nil {
			t.Fatalf("startJob: %+v", start.StartJob.UserErrors)
		}
		id = start.StartJob.Run.ID
		select {
		case <-reached:
		case <-time.After(20 * time.Second):
			t.Fatal("the run did not reach its item")
		}
		var secs float64
		if err := b.Pool.QueryRow(ctx, `SELECT lease_seconds, EXTRACT(EPOCH FROM lease_until - heartbeat_at)::float8
			FROM job_runs WHERE job_name = 'leased' AND status = 'RUNNING'`).Scan(&stored, &secs); err != nil {
			t.Fatal(err)
		}
		var data struct {
			Run struct{ LeaseUntil, HeartbeatAt time.Time }
		}
		i.post(t, op, `query($id: ID!) { run(id: $id) { leaseUntil heartbeatAt } }`, map[string]any{"id": id}).decode(t, &data)
		return id, stored, time.Duration(secs * float64(time.Second)), data.Run.LeaseUntil.Sub(data.Run.HeartbeatAt)
	}

	setLease(120)
	id, stored, byDB, byAPI := runLease()
	// heartbeat_at moves on with any fenced write (SetTotal), lease_until only with a renewal,
	// so the two differ from the lease by the moments between those writes.
	near := func(d, want time.Duration) bool { return d > want-2*time.Second && d <= want }
	if stored != 120 || !near(byDB, 120*time.Second) || !near(byAPI, 120*time.Second) {
		t.Fatalf("with a 120s override the run holds lease_seconds %d, lease_until - heartbeat_at %s (API: %s); want 120s",
			stored, byDB, byAPI)
	}
	ttl, err := b.Redis.PTTL(ctx, "baton:{"+b.Env+"}:lock:leased").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 5*time.Second {
		t.Fatalf("the run's Redis lock lives %s, the default lease, not the 120s override", ttl)
	}
	release(t, gate)
	i.waitRunStatus(t, op, id, "SUCCEEDED")
	// The worker releases the lock just after the final status commits.
	testenv.Eventually(t, 10*time.Second, "the run's lock to be released", func() bool {
		n, err := b.Redis.Exists(ctx, "baton:{"+b.Env+"}:lock:leased").Result()
		return err == nil && n == 0
	})

	setLease(0)
	id, stored, byDB, _ = runLease()
	if stored != 5 || !near(byDB, 5*time.Second) {
		t.Fatalf("with the override cleared the run holds lease_seconds %d (%s), want the default 5s", stored, byDB)
	}
	release(t, gate)
	i.waitRunStatus(t, op, id, "SUCCEEDED")
}
