package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// StopMetric names what a stop condition watches.
type StopMetric string

// Stop metrics, measured over the run's own calls in a sliding window.
const (
	// DownstreamErrorRate is the share of external calls that failed TRANSIENT or in doubt
	// (5xx, 429, timeouts).
	DownstreamErrorRate StopMetric = "DOWNSTREAM_ERROR_RATE"
	// RejectRate is the share of calls the outside system rejected (VALIDATION_REJECTED).
	RejectRate StopMetric = "REJECT_RATE"
)

// StopCondition makes a run stop itself at the next boundary when a rate crosses a threshold.
type StopCondition struct {
	Name      string
	Metric    StopMetric
	Threshold float64       // a fraction: 0.05 is 5%
	Window    time.Duration // 0 means one minute
	MinCalls  int           // no verdict on fewer calls in the window; 0 means 100
}

// DefaultStopConditions are used by jobs that declare none: stop when more than 5% of external
// calls fail downstream, or more than 10% of calls are rejected, over a minute (judged once
// the window holds at least 100 calls).
func DefaultStopConditions() []StopCondition {
	return []StopCondition{
		{Name: "downstream error rate", Metric: DownstreamErrorRate, Threshold: 0.05},
		{Name: "reject rate", Metric: RejectRate, Threshold: 0.10},
	}
}

// WithDefaults returns c with its zero Window, MinCalls and Name replaced by their defaults.
func (c StopCondition) WithDefaults() StopCondition {
	if c.Window <= 0 {
		c.Window = time.Minute
	}
	if c.MinCalls <= 0 {
		// Fewer calls make the ratio noise: at a true 2.5% error rate, a third of runs would
		// trip a 5% threshold within their first 20 calls.
		c.MinCalls = 100
	}
	if c.Name == "" {
		c.Name = string(c.Metric)
	}
	return c
}

// callStats counts a run's call outcomes per second of the instance's clock, for stop
// conditions and for the job_call_stats table (flushed about once a second). Both judge the
// counts by their age on that clock, never by its reading: a clock minutes off measures a
// minute's window as well as a right one, and the database places each flushed count in its
// own minute by the count's age (see store.CallStats).
//
// A shard's stop conditions judge its whole run (shared): every flush adds the shard's counts
// to the run's seconds in the database and brings back the seconds of every shard, so a rate
// is the run's as of the last flush, plus this shard's calls since.
type callStats struct {
	now    func() time.Time
	conds  []StopCondition
	shared bool

	mu      sync.Mutex
	buckets map[int64]*statBucket // unix second → counts
	unsent  map[int64]*statBucket // unix second → counts not yet flushed
	run     map[int64]*statBucket // shared: the whole run's counts at the last flush, by local second
	flushed time.Time
}

type statBucket struct{ calls, external, downstream, rejects int64 }

func (b *statBucket) add(o statBucket) {
	b.calls += o.calls
	b.external += o.external
	b.downstream += o.downstream
	b.rejects += o.rejects
}

func newCallStats(now func() time.Time, conds []StopCondition, shared bool) *callStats {
	return &callStats{now: now, conds: conds, shared: shared, buckets: map[int64]*statBucket{}, unsent: map[int64]*statBucket{},
		run: map[int64]*statBucket{}}
}

// lookback is the longest window of the conditions: how far back a shard needs its run's counts.
func (s *callStats) lookback() time.Duration {
	w := time.Duration(0)
	for _, c := range s.conds {
		w = max(w, c.WithDefaults().Window)
	}
	return w
}

func (s *callStats) record(err error, external bool) {
	state := bt.LedgerConfirmed
	if err != nil {
		state = ClassOf(err, external)
		var p panicError
		if errors.As(err, &p) {
			state = bt.LedgerBugSuspected
		}
	}
	downstream := external && (state == bt.LedgerTransient || state == bt.LedgerAmbiguous)
	reject := state == bt.LedgerValidationRejected
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tab := range []map[int64]*statBucket{s.buckets, s.unsent} {
		b := tab[now.Unix()]
		if b == nil {
			b = &statBucket{}
			tab[now.Unix()] = b
		}
		b.calls++
		if external {
			b.external++
		}
		if downstream {
			b.downstream++
		}
		if reject {
			b.rejects++
		}
	}
	// Keep at most an hour of seconds.
	if len(s.buckets) > 3600 {
		cut := now.Add(-time.Hour).Unix()
		for k := range s.buckets {
			if k < cut {
				delete(s.buckets, k)
			}
		}
	}
}

// rate returns the metric's value over window and the number of calls it is over: the run's
// own calls, or a shard's whole run's.
func (s *callStats) rate(m StopMetric, window time.Duration) (float64, int64) {
	cut := s.now().Add(-window).Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	var calls, hits int64
	counted := []map[int64]*statBucket{s.buckets}
	if s.shared {
		counted = []map[int64]*statBucket{s.run, s.unsent}
	}
	for _, tab := range counted {
		for at, b := range tab {
			if at <= cut {
				continue
			}
			switch m {
			case DownstreamErrorRate:
				calls += b.external
				hits += b.downstream
			case RejectRate:
				calls += b.calls
				hits += b.rejects
			}
		}
	}
	if calls == 0 {
		return 0, 0
	}
	return float64(hits) / float64(calls), calls
}

// take returns and clears the unsent counts, each with its age on the instance's clock.
func (s *callStats) take(force bool) []store.CallCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.unsent) == 0 || (!force && now.Sub(s.flushed) < time.Second) {
		return nil
	}
	out := make([]store.CallCounts, 0, len(s.unsent))
	for at, b := range s.unsent {
		if b.external == 0 && b.rejects == 0 && !s.shared {
			continue // only internal calls that did not fail: nothing the table counts
		}
		out = append(out, store.CallCounts{Age: now.Sub(time.Unix(at, 0)), Calls: b.external, Downstream: b.downstream,
			Rejects: b.rejects, All: b.calls})
	}
	s.unsent = map[int64]*statBucket{}
	s.flushed = now
	return out
}

// giveBack returns counts whose write failed to the unsent ones, at the second they were
// made, so the next flush tries them again.
func (s *callStats) giveBack(counts []store.CallCounts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range counts {
		at := s.flushed.Add(-c.Age).Unix()
		b := s.unsent[at]
		if b == nil {
			b = &statBucket{}
			s.unsent[at] = b
		}
		b.add(statBucket{calls: c.All, external: c.Calls, downstream: c.Downstream, rejects: c.Rejects})
	}
}

// sawRun replaces the shared view of the run with its seconds as the database had them before
// this shard's flush, plus the counts that flush added.
func (s *callStats) sawRun(run, flushed []store.CallCounts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run = make(map[int64]*statBucket, len(run))
	for _, tab := range [][]store.CallCounts{run, flushed} {
		for _, c := range tab {
			at := s.flushed.Add(-c.Age).Unix()
			b := s.run[at]
			if b == nil {
				b = &statBucket{}
				s.run[at] = b
			}
			b.add(statBucket{calls: c.All, external: c.Calls, downstream: c.Downstream, rejects: c.Rejects})
		}
	}
}

// flush writes the unsent call counts to job_call_stats, fenced on the run's lease; force
// writes them however recently the last flush was. A run that lost its lease drops them: its
// calls are no longer its to report.
func (s *callStats) flush(ctx context.Context, st Store, f store.Fence, log *slog.Logger, force bool) {
	counts := s.take(force)
	if len(counts) == 0 {
		return
	}
	var lookback time.Duration
	if s.shared {
		lookback = s.lookback()
	}
	run, err := st.AddCallStats(ctx, f, counts, lookback)
	if err != nil {
		log.Warn("flush call stats", "err", err)
		if !errors.Is(err, bt.ErrLeaseLost) {
			s.giveBack(counts)
		}
		return
	}
	if s.shared {
		s.sawRun(run, counts)
	}
}

func (s *callStats) check(c StopCondition) bt.Check {
	v, n := s.rate(c.Metric, c.Window)
	ch := bt.Check{Name: c.Name, Value: v, Threshold: c.Threshold, Verdict: bt.VerdictOK,
		Detail: fmt.Sprintf("%.1f%% of %d calls over %s", v*100, n, c.Window)}
	if n < int64(c.MinCalls) {
		ch.Detail += fmt.Sprintf(" (no verdict under %d calls)", c.MinCalls)
	} else if v > c.Threshold {
		ch.Verdict = bt.VerdictBlock
	}
	return ch
}

// tripped returns the first of the run's stop conditions that blocks, if any. It runs after
// every batch of calls, so it formats nothing unless a condition trips.
func (s *callStats) tripped() (bt.Check, bool) {
	for _, c := range s.conds {
		c = c.WithDefaults()
		if v, n := s.rate(c.Metric, c.Window); n >= int64(c.MinCalls) && v > c.Threshold {
			ch := s.check(c)
			ch.Verdict = bt.VerdictBlock
			return ch, true
		}
	}
	return bt.Check{}, false
}
