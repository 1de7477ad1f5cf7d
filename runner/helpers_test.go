package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/redislock"
)

// bundle is one test's slice of PostgreSQL and Redis (the shared bundle), and the runners
// made on it.
type bundle struct {
	*testbundle.Bundle
}

func setup(t *testing.T) *bundle {
	t.Helper()
	tb := testbundle.Setup(t, testenv.Schema)
	b := &bundle{Bundle: tb}
	if _, err := b.Pool.Exec(context.Background(), `CREATE TABLE job_output (target text PRIMARY KEY, run_id bigint)`); err != nil {
		t.Fatal(err)
	}
	return b
}

// runner makes a Runner on the bundle's database and Redis, with a 2s lease unless mod says
// otherwise, running until the test ends.
func (b *bundle) runner(mod func(*runner.Config), jobs ...runner.Job) *runner.Runner {
	b.T.Helper()
	cfg := b.Config()
	cfg.DefaultLease = 2 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	return b.Runner(cfg, jobs...)
}

func (b *bundle) run(id int64) *bt.RunRecord {
	b.T.Helper()
	var r *bt.RunRecord
	rows, err := b.Pool.Query(context.Background(), `SELECT status, processed, succeeded, failed, checkpoint, COALESCE(stop_reason, ''), message, generation, mode, trigger FROM job_runs WHERE id = $1`, id)
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var status, stop, mode, trigger string
		r = &bt.RunRecord{ID: id}
		if err := rows.Scan(&status, &r.Processed, &r.Succeeded, &r.Failed, &r.Checkpoint, &stop, &r.Message, &r.Generation, &mode, &trigger); err != nil {
			b.T.Fatal(err)
		}
		r.Status, r.StopReason, r.Mode, r.Trigger = bt.RunStatus(status), bt.StopReason(stop), bt.Mode(mode), bt.Trigger(trigger)
	}
	if r == nil {
		b.T.Fatalf("run %d not found", id)
	}
	return r
}

// waitStatus polls until run id reaches one of statuses.
func (b *bundle) waitStatus(id int64, statuses ...bt.RunStatus) *bt.RunRecord {
	b.T.Helper()
	var last *bt.RunRecord
	testenv.Eventually(b.T, 20*time.Second, fmt.Sprintf("run %d to reach %v", id, statuses), func() bool {
		last = b.run(id)
		for _, s := range statuses {
			if last.Status == s {
				return true
			}
		}
		return false
	})
	if !last.Status.Active() {
		// The worker releases the run's Redis lock just after the final status commits; a
		// start made in between would meet the lock.
		var job, token string
		if err := b.Pool.QueryRow(context.Background(), `SELECT job_name, lease_token FROM job_runs WHERE id = $1`, id).Scan(&job, &token); err != nil {
			b.T.Fatal(err)
		}
		testenv.Eventually(b.T, 10*time.Second, fmt.Sprintf("run %d's lock to be released", id), func() bool {
			held, ok, err := lockHolder(b, job)
			return err == nil && (!ok || held != token)
		})
	}
	return last
}

func (b *bundle) count(sql string, args ...any) int {
	b.T.Helper()
	return testbundle.Count(b.T, b.Pool, sql, args...)
}

// itemsJob walks items 1..n, resuming after its checkpoint. Each item may be held at a gate,
// and writes a row to job_output through the item transaction.
type itemsJob struct {
	name  string
	n     int
	lease time.Duration
	cron  string

	mu       sync.Mutex
	calls    map[int]int // item → times its function ran
	bodies   atomic.Int32
	gate     func(item int) <-chan struct{} // nil: no gate
	reached  chan int                       // item numbers as they start, if non-nil
	external bool
	itemErr  func(item int) error
}

func newItemsJob(name string, n int) *itemsJob {
	return &itemsJob{name: name, n: n, calls: map[int]int{}}
}

func (j *itemsJob) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Description: "test job", Lease: j.lease, Cron: j.cron, Version: "1",
		Retry: runner.RetryPolicy{MaxAttempts: 1}}
}

func (j *itemsJob) Run(ctx context.Context, run *runner.Run) error {
	j.bodies.Add(1)
	start := 1
	if cp := run.Checkpoint(); cp != "" {
		n, err := strconv.Atoi(cp)
		if err != nil {
			return err
		}
		start = n + 1
	}
	if err := run.SetTotal(ctx, int64(j.n)); err != nil {
		return err
	}
	for i := start; i <= j.n; i++ {
		item := runner.Item{Target: fmt.Sprintf("t%d", i), Checkpoint: strconv.Itoa(i), External: j.external, Input: i}
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			j.mu.Lock()
			j.calls[i]++
			j.mu.Unlock()
			if j.reached != nil {
				j.reached <- i
			}
			if j.gate != nil {
				if g := j.gate(i); g != nil {
					<-g
				}
			}
			if j.itemErr != nil {
				if err := j.itemErr(i); err != nil {
					return err
				}
			}
			runID := run.ID()
			target := item.Target
			a.Tx(func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO job_output (target, run_id) VALUES ($1, $2)
					ON CONFLICT (target) DO UPDATE SET run_id = EXCLUDED.run_id`, target, runID)
				return err
			})
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *itemsJob) callsOf(i int) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls[i]
}

func code(err error) bt.Code { return bt.CodeOf(err) }

func mustStart(t testing.TB, r *runner.Runner, p runner.StartParams) int64 {
	t.Helper()
	run, err := r.Start(context.Background(), p)
	if err != nil {
		t.Fatalf("start %s: %v", p.Job, err)
	}
	if run == nil {
		t.Fatalf("start %s: no run", p.Job)
	}
	return run.ID
}

var errBoom = errors.New("boom")

func lockHolder(b *bundle, job string) (string, bool, error) {
	return redislock.New(b.Redis, b.Env).Holder(context.Background(), job)
}
