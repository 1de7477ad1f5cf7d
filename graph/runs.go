package graph

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// maxTimelineRenewals is how many lease renewals Run.events shows: the latest ones. A run
// renews at half its lease, thousands of times a day.
const maxTimelineRenewals = 500

// runsFilter is the filter of Query.runs: its shorthand arguments (jobName, status) and its
// filter input, each field given one way.
func runsFilter(jobName *string, status []bt.RunStatus, in *model.RunsFilter) (runner.RunFilter, error) {
	var f runner.RunFilter
	if jobName != nil {
		f.JobName = *jobName
	}
	f.Statuses = status
	if in == nil {
		return f, nil
	}
	if in.JobName != nil {
		if jobName != nil {
			return f, badInput("give the job as jobName or as filter.jobName, not both")
		}
		f.JobName = *in.JobName
	}
	if in.Statuses != nil {
		if status != nil {
			return f, badInput("give the statuses as status or as filter.statuses, not both")
		}
		f.Statuses = in.Statuses
	}
	f.Triggers = in.Triggers
	if in.Instance != nil {
		f.Instance = *in.Instance
	}
	if in.Number != nil {
		if *in.Number <= 0 {
			return f, badInput("filter.number must be a run number (1 or more), not %d", *in.Number)
		}
		f.Number = int64(*in.Number)
	}
	f.StartedFrom, f.StartedBefore = in.StartedFrom, in.StartedBefore
	if f.StartedFrom != nil && f.StartedBefore != nil && !f.StartedFrom.Before(*f.StartedBefore) {
		return f, badInput("filter.startedFrom (%s) must be before filter.startedBefore (%s)",
			f.StartedFrom.UTC().Format("2006-01-02T15:04:05Z07:00"), f.StartedBefore.UTC().Format("2006-01-02T15:04:05Z07:00"))
	}
	return f, nil
}

// runTimeline is a run's life: the milestones of its record and its recorded events, oldest
// first.
func (r *Resolver) runTimeline(ctx context.Context, run *bt.RunRecord) ([]*model.RunTimelineEvent, error) {
	marks := timeline(run)
	marks[0].Actor = run.RequestedBy // the request is the requester's
	recorded, err := r.loaders(ctx).runEvents.Load(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	if run.ShardTotal > 0 && run.Shard == nil {
		if recorded, err = r.withShardEvents(ctx, run, recorded); err != nil {
			return nil, err
		}
	}
	// The milestones are requested, activated, finished: the recorded events fall between the
	// activation (or the request) and the end.
	head, tail := marks, []*model.RunTimelineEvent(nil)
	if n := len(marks); run.FinishedAt != nil && n > 0 {
		head, tail = marks[:n-1], marks[n-1:]
	}
	out := make([]*model.RunTimelineEvent, 0, len(marks)+len(recorded))
	out = append(out, head...)
	for _, e := range recorded {
		out = append(out, &model.RunTimelineEvent{At: e.At, Kind: model.RunTimelineKind(e.Kind), Detail: e.Detail, Shard: e.Shard, Actor: e.Actor})
	}
	return append(out, tail...), nil
}

// withShardEvents merges a sharded run's recorded events with its shards' (but their lease
// renewals, thousands a day per shard), in time order, each shard's marked with its key.
func (r *Resolver) withShardEvents(ctx context.Context, run *bt.RunRecord, recorded []runner.TimelineEvent) ([]runner.TimelineEvent, error) {
	shards, err := r.shardsOf(ctx, run)
	if err != nil || len(shards) == 0 {
		return recorded, err
	}
	ids := make([]int64, len(shards))
	for i, s := range shards {
		ids[i] = s.ID
	}
	perShard, err := r.loaders(ctx).shardEvents.LoadAll(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := append([]runner.TimelineEvent(nil), recorded...)
	for i, events := range perShard {
		for _, e := range events {
			if e.Kind == runner.EventLeaseRenewed {
				continue
			}
			if e.Shard == nil {
				key := shards[i].Shard.Key
				e.Shard = &key
			}
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At.Before(out[b].At) })
	return out, nil
}

// cancelRuns decodes the ids of a cancelRuns input and asks the runner to cancel them.
func (r *Resolver) cancelRuns(ctx context.Context, input model.CancelRunsInput) (*model.CancelRunsPayload, error) {
	out := &model.CancelRunsPayload{Runs: []*bt.RunRecord{}, UserErrors: []*model.UserError{}}
	ids := make([]int64, len(input.RunIds))
	for i, gid := range input.RunIds {
		id, ok := decodeIntID(gid, typeRun)
		if !ok {
			r.auditInvalid(ctx, "cancelRuns", map[string]any{"runIds": len(input.RunIds), "invalid": truncate(gid, 64)})
			out.UserErrors = userError(model.UserErrorCodeInvalidInput, fmt.Sprintf("runIds[%d]", i), "runIds[%d] is not a Run id", i)
			return out, nil
		}
		ids[i] = id
	}
	results, err := r.runner.Runs().CancelMany(ctx, ids, actor(ctx))
	if err != nil {
		ue, err := userErrors(err, "runIds")
		if err != nil {
			return nil, err
		}
		out.UserErrors = ue
		return out, nil
	}
	// Each result's index among the distinct ids maps back to the first position it was asked at.
	pos := make(map[int64]int, len(ids))
	for i := len(ids) - 1; i >= 0; i-- {
		pos[ids[i]] = i
	}
	l := r.loaders(ctx)
	for _, res := range results {
		if res.Err != nil {
			ue, err := userErrors(res.Err, "runIds["+strconv.Itoa(pos[res.RunID])+"]")
			if err != nil {
				return nil, err
			}
			out.UserErrors = append(out.UserErrors, ue...)
			continue
		}
		l.runByID.Prime(res.RunID, res.Run)
		out.Runs = append(out.Runs, res.Run)
	}
	return out, nil
}

// truncate cuts s to at most n bytes, for audit arguments.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
