package runner_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestMain lets the test binary double as a Baton worker process for the shutdown test.
func TestMain(m *testing.M) { testenv.WorkerMain(m, childWorker) }

// slowJob walks n items of a few milliseconds each, resuming after its checkpoint.
func slowJob(n int) runner.Job {
	return runner.NewJob(runner.JobInfo{Name: "slow", Lease: 5 * time.Second}, func(ctx context.Context, run *runner.Run) error {
		start := 1
		if cp := run.Checkpoint(); cp != "" {
			c, _ := strconv.Atoi(cp)
			start = c + 1
		}
		for i := start; i <= n; i++ {
			err := run.Process(ctx, runner.Item{Target: fmt.Sprint(i), Checkpoint: fmt.Sprint(i)}, func(ctx context.Context, a *runner.Attempt) error {
				select { // the item's own work
				case <-time.After(5 * time.Millisecond):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func childWorker() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pool, rc, env, err := testenv.WorkerDeps()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r, err := runner.New(runner.Config{DB: pool, Redis: rc, Env: env, PoolSize: 1,
		ShutdownTimeout: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	job := slowJob(100000)
	if os.Getenv("BATON_TEST_CHILD_JOB") == "slots" {
		job = slotHolderJob()
	}
	if err := r.Register(context.Background(), job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	started, err := r.Start(context.Background(), runner.StartParams{Job: job.Info().Name})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	id := started.ID
	fmt.Printf("run %d\n", id)
	if err := r.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

func TestSIGTERMLeavesRunResumable(t *testing.T) {
	b := setup(t)
	w := testenv.StartWorker(t, "child", b.URL, b.Env)
	cmd, id := w.Cmd, w.Run
	testenv.Eventually(t, 10*time.Second, "the child to commit some items", func() bool {
		return b.run(id).Processed >= 20
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child exited with %v: %s", err, w.Stderr())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("child did not exit within 30s of SIGTERM")
	}
	got := b.run(id)
	if got.Status != bt.StatusFailed || got.StopReason != bt.StopShutdown || got.Checkpoint == "" {
		t.Fatalf("after SIGTERM: %s (%s) at %q; want FAILED, SHUTDOWN, a checkpoint", got.Status, got.StopReason, got.Checkpoint)
	}
	if _, held, _ := lockHolder(b, "slow"); held {
		t.Fatalf("the lock is still held after a graceful shutdown")
	}
	cp, _ := strconv.Atoi(got.Checkpoint)
	if int64(cp) != got.Processed {
		t.Fatalf("checkpoint %d but %d items processed", cp, got.Processed)
	}
	// A fresh instance resumes after the checkpoint, with items short enough to finish.
	r := b.runner(nil, slowJob(cp+10))
	res := b.waitStatus(mustStart(t, r, runner.StartParams{Job: "slow", Mode: bt.ModeResume}), bt.StatusSucceeded)
	if res.Processed != 10 || res.Generation != got.Generation {
		t.Fatalf("RESUME processed %d items in generation %d; want 10 in %d", res.Processed, res.Generation, got.Generation)
	}
}
