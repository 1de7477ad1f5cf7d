package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	bt "github.com/baton-run/baton/runner/batontype"
)

// A run's outcome follows from what the job returned and how the run was ending: a panic and
// a lost lease win over any stop request, a stop request decides the status of a job that
// returned because of it, and any other error fails the run.
func TestOutcome(t *testing.T) {
	t.Parallel()
	stopped := fmt.Errorf("process: %w", bt.ErrStopped)
	tripped := &bt.Check{Name: "downstream", Detail: "50.0% of 10 calls over 1m0s", Threshold: 0.2}
	for _, tc := range []struct {
		name   string
		jobErr error
		e      ending
		status bt.RunStatus
		reason bt.StopReason
		msg    string // a part of the message
	}{
		{"done", nil, ending{}, bt.StatusSucceeded, "", ""},
		{"panic", panicError{"boom"}, ending{stop: bt.StopCancelled}, bt.StatusFailed, bt.StopPanic, "internal error (ref "},
		{"lease lost", stopped, ending{lost: true, stop: bt.StopCancelled}, bt.StatusFailed, bt.StopLeaseExpired, "lease lost"},
		{"cancelled", stopped, ending{stop: bt.StopCancelled}, bt.StatusCancelled, bt.StopCancelled, "cancelled at an item boundary"},
		{"paused", stopped, ending{stop: bt.StopPaused, checkpoint: "p7"}, bt.StatusPaused, bt.StopPaused, `checkpoint "p7"`},
		{"maintenance", context.Canceled, ending{stop: bt.StopMaintenance}, bt.StatusPaused, bt.StopMaintenance, "paused at checkpoint"},
		{"shutdown", stopped, ending{stop: bt.StopShutdown, checkpoint: "p7"}, bt.StatusFailed, bt.StopShutdown, "start with RESUME"},
		{"stop condition", stopped, ending{stop: bt.StopCondition, tripped: tripped}, bt.StatusFailed, bt.StopCondition, `"downstream" tripped: 50.0% of 10 calls over 1m0s (threshold 20.0%)`},
		{"stop condition unnamed", stopped, ending{stop: bt.StopCondition}, bt.StatusFailed, bt.StopCondition, "a stop condition tripped"},
		{"stopped unasked", stopped, ending{}, bt.StatusFailed, bt.StopError, "run asked to stop"},
		{"job error", errors.New("payee 17 has no account"), ending{stop: bt.StopCancelled}, bt.StatusFailed, bt.StopError, "payee 17"},
	} {
		status, reason, msg := outcome(slog.New(slog.DiscardHandler), tc.jobErr, tc.e)
		if status != tc.status || reason != tc.reason || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %s / %s / %q, want %s / %s / …%q…", tc.name, status, reason, msg, tc.status, tc.reason, tc.msg)
		}
	}
}
