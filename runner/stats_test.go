package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// An instance whose clock is ten minutes off either way still trips the downstream error-rate
// stop condition on its own calls, and preflight, judging the job's calls of the last five
// minutes by the database clock, still sees every one of them.
func TestDownstreamStatsWithSkewedClock(t *testing.T) {
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(fmt.Sprintf("skew %s", skew), func(t *testing.T) {
			b := setup(t)
			ctx := context.Background()
			targets := make([]string, 40)
			for i := range targets {
				targets[i] = fmt.Sprintf("p%02d", i+1)
			}
			job := newLedgerJob("payouts", targets...)
			job.info.StopConditions = []runner.StopCondition{{Name: "downstream failing", Metric: runner.DownstreamErrorRate,
				Threshold: 0.2, MinCalls: 10, Window: time.Minute}}
			// The first 5 calls succeed, every later one meets a failing downstream: the 10th
			// call makes the rate 50% over 10 calls and the run stops there.
			job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
				if target > "p05" {
					return runner.Transient(errors.New("HTTP 503"))
				}
				return nil
			}
			r := b.runner(func(c *runner.Config) { c.NowFunc = func() time.Time { return time.Now().Add(skew) } }, job)
			rec := b.finish(r, mustStart(t, r, runner.StartParams{Job: "payouts"}))
			if rec.Status != bt.StatusFailed || rec.StopReason != bt.StopCondition || !strings.Contains(rec.Message, "downstream failing") {
				t.Fatalf("run ended %s / %s / %q, want FAILED / STOP_CONDITION naming the condition", rec.Status, rec.StopReason, rec.Message)
			}
			var calls int64
			for _, target := range targets {
				calls += int64(job.callsOf(target))
			}
			if calls != 10 {
				t.Fatalf("%d calls made, want 10 (the stop condition judges after each)", calls)
			}
			pf, err := r.Replays().Preflight(ctx, rec.ID, bt.ScopeTransient)
			if err != nil {
				t.Fatal(err)
			}
			if pf.DownstreamCalls != calls || math.Abs(pf.DownstreamErrorRate-0.5) > 1e-9 {
				t.Fatalf("preflight saw %d calls at rate %v, want %d at 0.5", pf.DownstreamCalls, pf.DownstreamErrorRate, calls)
			}
			if !pf.Blocked || !hasCheck(pf, "downstream failing", bt.VerdictBlock) {
				t.Fatalf("preflight not blocked by the downstream rate: %+v", pf.Checks)
			}
			// The minute the calls were counted in is the database's, not the instance's.
			if n := b.count(`SELECT count(*) FROM job_call_stats WHERE job_name = 'payouts'
				AND minute > now() - interval '2 minutes' AND minute <= now()`); n == 0 {
				t.Fatalf("no call-stats bucket within the database's last two minutes")
			}
		})
	}
}
