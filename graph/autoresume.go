package graph

import (
	"context"
	"time"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// maxBackoffSeconds bounds updateJobAutoResume's backoffSeconds (24 h), as the runner does; it
// is checked here too because a larger number of seconds could overflow a time.Duration.
const maxBackoffSeconds = 86400

// autoResumeUpdate turns the mutation's input into the runner's update, or refuses a backoff
// out of range (audited like the runner's refusals, nothing written).
func (r *mutationResolver) autoResumeUpdate(ctx context.Context, in model.UpdateJobAutoResumeInput) (runner.AutoResumeUpdate, []*model.UserError) {
	u := runner.AutoResumeUpdate{Enabled: in.Enabled, MaxAttempts: in.MaxAttempts, On: in.On, Actor: actor(ctx)}
	if in.BackoffSeconds != nil {
		secs := *in.BackoffSeconds
		if secs < 0 || secs > maxBackoffSeconds {
			_ = r.runner.Audit().Record(ctx, actor(ctx), "updateJobAutoResume", "job:"+in.Name,
				map[string]any{"backoffSeconds": secs}, string(model.UserErrorCodeInvalidInput))
			return u, userError(model.UserErrorCodeInvalidInput, "backoffSeconds",
				"backoffSeconds must be whole seconds from 0 to %d (24h), not %d", maxBackoffSeconds, secs)
		}
		d := time.Duration(secs) * time.Second
		u.Backoff = &d
	}
	return u, nil
}

// autoResumeOutcome is what auto-resume made of run's end, or "" when it made nothing of it
// (the run is active, or ended in a way no policy covers).
func autoResumeOutcome(run *bt.RunRecord) model.AutoResumeOutcome {
	switch {
	case run.AutoResumeOutcome != "":
		return model.AutoResumeOutcome(run.AutoResumeOutcome)
	case run.AutoResumeAt != nil:
		return model.AutoResumeOutcomePending
	}
	return ""
}
