package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// fakeSystem is an outside system the tests' jobs call: it records when every call arrived
// and the peak in flight, and may enforce a true rate limit of its own, answering "429" with
// the time until its next token past it.
type fakeSystem struct {
	latency time.Duration

	mu        sync.Mutex
	calls     []time.Time // accepted calls, as they arrived
	throttled []time.Time // calls answered 429
	inFlight  int
	peak      int
	rate      float64 // the true limit; 0 none
	burst     float64
	tokens    float64
	last      time.Time
}

var errTooMany = errors.New("429 too many requests")

// setLimit sets the system's true limit (rate 0 lifts it).
func (f *fakeSystem) setLimit(rate, burst float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rate, f.burst, f.tokens, f.last = rate, burst, burst, time.Now()
}

// call is one call, made by an item: a 429 (Throttled, with Retry-After) past the true limit.
func (f *fakeSystem) call(ctx context.Context) error {
	f.mu.Lock()
	now := time.Now()
	if f.rate > 0 {
		f.tokens = math.Min(f.burst, f.tokens+now.Sub(f.last).Seconds()*f.rate)
		f.last = now
		if f.tokens < 1 {
			f.throttled = append(f.throttled, now)
			wait := time.Duration((1 - f.tokens) / f.rate * float64(time.Second))
			f.mu.Unlock()
			return runner.Throttled(errTooMany, wait)
		}
		f.tokens--
	}
	f.calls = append(f.calls, now)
	f.inFlight++
	f.peak = max(f.peak, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if f.latency > 0 {
		t := time.NewTimer(f.latency)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// snapshot returns the accepted and throttled calls' times, and the peak in flight.
func (f *fakeSystem) snapshot() (calls, throttled []time.Time, peak int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.calls...), append([]time.Time(nil), f.throttled...), f.peak
}

// maxInWindow returns the most calls that arrived within any window w.
func maxInWindow(ts []time.Time, w time.Duration) int {
	most, _ := testenv.MostWithin(ts, w)
	return most
}

// between returns the times in [from, to).
func between(ts []time.Time, from, to time.Time) []time.Time {
	var out []time.Time
	for _, t := range ts {
		if !t.Before(from) && t.Before(to) {
			out = append(out, t)
		}
	}
	return out
}

// dsJob calls its system once per item, in batches of batch items with parallelism calls in
// flight, through downstream ds, until n items or a stop.
type dsJob struct {
	name        string
	ds          string
	defaults    *bt.DownstreamLimits // declared with the job when set
	sys         *fakeSystem
	n           int
	batch       int
	parallelism int
	lease       time.Duration
	attempts    int
}

func (j *dsJob) Info() runner.JobInfo {
	info := runner.JobInfo{Name: j.name, Lease: j.lease, Version: "1", StopConditions: []runner.StopCondition{},
		Retry: runner.RetryPolicy{MaxAttempts: max(j.attempts, 1), InitialBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}}
	if j.defaults != nil {
		info.Downstreams = []runner.Downstream{{Name: j.ds, Defaults: *j.defaults}}
	}
	return info
}

func (j *dsJob) Run(ctx context.Context, run *runner.Run) error {
	start := 0
	if cp := run.Checkpoint(); cp != "" {
		start, _ = strconv.Atoi(cp)
	}
	for i := start; i < j.n; i += j.batch {
		items := make([]runner.Item, 0, j.batch)
		for k := i; k < min(i+j.batch, j.n); k++ {
			items = append(items, runner.Item{Target: fmt.Sprintf("t%d", k), Checkpoint: strconv.Itoa(k + 1), External: true, Downstream: j.ds})
		}
		err := run.ProcessBatch(ctx, items, j.parallelism, func(ctx context.Context, _ runner.Item, a *runner.Attempt) error {
			return j.sys.call(ctx)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// setLimits sets downstream name's limits through r, failing the test on an error.
func setLimits(t *testing.T, r *runner.Runner, u bt.DownstreamUpdate) *bt.DownstreamState {
	t.Helper()
	d, err := r.Downstreams().Update(context.Background(), "test-operator", u)
	if err != nil {
		t.Fatalf("update downstream %s: %v", u.Name, err)
	}
	return d
}

// stopRuns cancels runs and waits until each has ended.
func stopRuns(b *bundle, r *runner.Runner, ids ...int64) {
	b.T.Helper()
	for _, id := range ids {
		if _, err := r.Runs().Cancel(context.Background(), id, "test"); err != nil && code(err) != bt.CodeNotActive {
			b.T.Fatalf("cancel run %d: %v", id, err)
		}
	}
	for _, id := range ids {
		b.waitStatus(id, bt.StatusCancelled, bt.StatusSucceeded, bt.StatusFailed)
	}
}

// waitCalls polls until the system has accepted at least n calls.
func waitCalls(t *testing.T, f *fakeSystem, n int, within time.Duration) {
	t.Helper()
	testenv.Eventually(t, within, fmt.Sprintf("%d calls to arrive", n), func() bool {
		c, _, _ := f.snapshot()
		return len(c) >= n
	})
}

// counterValue returns the value of the counter name with labels in reg (0 when absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
