package graph

import (
	"context"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/live"
	bt "github.com/baton-run/baton/runner/batontype"
)

// The subscriptions are streams of package live; these map them onto the schema.

// runEvents streams the changes of the runs of job (of every job when job is ""): each run
// that starts, changes status, progresses or finishes.
func (r *Resolver) runEvents(ctx context.Context, job string) (<-chan *model.RunEvent, error) {
	if job != "" {
		if _, err := r.runner.Jobs().Get(ctx, job); err != nil {
			return nil, err
		}
	}
	return live.RunChanges(ctx, r.live, job, func(kind live.ChangeKind, run *bt.RunRecord) *model.RunEvent {
		return &model.RunEvent{Kind: eventKinds[kind], Run: run}
	}), nil
}

// eventKinds names the kinds of change as the schema's RunEventKind does.
var eventKinds = map[live.ChangeKind]model.RunEventKind{
	live.RunStarted:       model.RunEventKindStarted,
	live.RunProgressed:    model.RunEventKindProgress,
	live.RunStatusChanged: model.RunEventKindStatusChanged,
	live.RunFinished:      model.RunEventKindFinished,
}

// alertRaised streams each alarm as it is raised.
func (r *Resolver) alertRaised(ctx context.Context) (<-chan *bt.Alert, error) {
	return r.alerts.Raised(ctx), nil
}
