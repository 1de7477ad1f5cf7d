package runner

import "github.com/baton-run/baton/runner/internal/pipeline"

// StopMetric names what a stop condition watches.
type StopMetric = pipeline.StopMetric

// Stop metrics, measured over the run's own calls in a sliding window.
const (
	// DownstreamErrorRate is the share of external calls that failed TRANSIENT or in doubt
	// (5xx, 429, timeouts).
	DownstreamErrorRate = pipeline.DownstreamErrorRate
	// RejectRate is the share of calls the outside system rejected (VALIDATION_REJECTED).
	RejectRate = pipeline.RejectRate
)

// StopCondition makes a run stop itself at the next boundary when a rate crosses a threshold.
// Its fields: Name, Metric, Threshold (a fraction: 0.05 is 5%), Window (0 means one minute)
// and MinCalls (no verdict on fewer calls in the window; 0 means 100).
type StopCondition = pipeline.StopCondition

// DefaultStopConditions are used by jobs that declare none: stop when more than 5% of external
// calls fail downstream, or more than 10% of calls are rejected, over a minute (judged once
// the window holds at least 100 calls).
func DefaultStopConditions() []StopCondition { return pipeline.DefaultStopConditions() }
