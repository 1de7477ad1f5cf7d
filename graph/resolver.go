package graph

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Resolver is the root of the resolvers and the only place their dependencies come in.
// Resolvers are thin: check the arguments, make one call of the runner's services, map the
// result.
type Resolver struct {
	runner *runner.Runner
	log    *slog.Logger

	// live streams the subscriptions' events.
	live   *live.Streams
	alerts *live.AlertWatcher
	// clock estimates the database clock for the ages the API shows.
	clock dbClock
}

func newResolver(r *runner.Runner, f live.Feed, log *slog.Logger, alertInterval time.Duration) *Resolver {
	return &Resolver{
		runner: r,
		log:    log,
		live:   live.NewStreams(f, r.Runs(), log),
		alerts: live.NewAlertWatcher(alertInterval, announcedAlerts(r.Alarms().Active), log),
	}
}

// actor returns the caller's name, as recorded in runs and the audit log.
func actor(ctx context.Context) string {
	if v := CallerFrom(ctx); v != nil {
		return v.Name
	}
	return "anonymous"
}

// mutationTimeout bounds a mutation. Mutations run detached from the client's connection, so
// that a client that goes away cannot leave one half-done.
const mutationTimeout = 30 * time.Second

func mutationContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), mutationTimeout)
}

// auditInvalid records a mutation this layer refused for its input before reaching the
// runner (a malformed id).
func (r *Resolver) auditInvalid(ctx context.Context, action string, args map[string]any) {
	if err := r.runner.Audit().Record(ctx, actor(ctx), action, auditTarget(action, args), args, string(model.UserErrorCodeInvalidInput)); err != nil {
		r.log.ErrorContext(ctx, "graph: audit refused mutation", "action", action, "err", err)
	}
}

func ledgerCounts(m map[bt.LedgerState]int64) []*model.LedgerCount {
	out := make([]*model.LedgerCount, 0, len(m))
	for _, s := range ledgerStates {
		if n := m[s]; n != 0 {
			out = append(out, &model.LedgerCount{State: s, Count: int(n)})
		}
	}
	return out
}

// ledgerStates orders ledger counts as the schema's LedgerState enum does.
var ledgerStates = []bt.LedgerState{
	bt.LedgerInFlight, bt.LedgerConfirmed, bt.LedgerTransient, bt.LedgerValidationRejected, bt.LedgerConflict,
	bt.LedgerAmbiguous, bt.LedgerPolicyBlocked, bt.LedgerBugSuspected, bt.LedgerNotApplied, bt.LedgerSkipped,
}

// nilIfNotFound turns a NOT_FOUND error into a null result, as single-object queries answer
// for ids that do not exist.
func nilIfNotFound[T any](v *T, err error) (model.Node, error) {
	if bt.CodeOf(err) == bt.CodeNotFound {
		return nil, nil
	}
	if err != nil || v == nil {
		return nil, err
	}
	return v, nil
}

// maxFires bounds the fire times a schedule preview lists.
const maxFires = 50

func fireCount(n *int) (int, error) {
	if n == nil {
		return 5, nil
	}
	if *n < 1 || *n > maxFires {
		return 0, badInput("n must be between 1 and %d", maxFires)
	}
	return *n, nil
}

func timePointers(ts []time.Time) []*time.Time {
	out := make([]*time.Time, len(ts))
	for i := range ts {
		out[i] = &ts[i]
	}
	return out
}

// runsPage lists runs newest first, of one job (or all when job is "").
func (r *Resolver) runsPage(ctx context.Context, f runner.RunFilter, first *int, after *string) (*model.RunConnection, error) {
	p, err := parsePage(first, after, cursorRuns)
	if err != nil {
		return nil, err
	}
	f.BeforeID, f.Limit = p.after, p.first+1
	runs, err := r.runner.Runs().List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := r.runConnection(ctx, runs, p)
	if err := r.prefetchJobsOf(ctx, out.Nodes); err != nil {
		return nil, err
	}
	if fc := graphql.GetFieldContext(ctx); fc != nil && graphql.HasOperationContext(ctx) {
		opCtx := graphql.GetOperationContext(ctx)
		if err := r.prefetchRuns(ctx, opCtx, out.Nodes, collect(opCtx, []ast.SelectionSet{fc.Field.Selections}, connectionNodes...)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// runConnection makes a page of runs fetched with one extra run (p.first+1), priming the run
// loader with them.
func (r *Resolver) runConnection(ctx context.Context, runs []*bt.RunRecord, p page) *model.RunConnection {
	runs, cursors, info := connection(runs, p, cursorRuns, func(run *bt.RunRecord) int64 { return run.ID })
	l := r.loaders(ctx)
	out := &model.RunConnection{Nodes: runs, PageInfo: info, Edges: make([]*model.RunEdge, len(runs))}
	for i, run := range runs {
		l.runByID.Prime(run.ID, run)
		out.Edges[i] = &model.RunEdge{Cursor: cursors[i], Node: run}
	}
	return out
}

// timeline lists a run's milestones from its record.
func timeline(run *bt.RunRecord) []*model.RunTimelineEvent {
	out := []*model.RunTimelineEvent{{
		At: run.StartedAt, Kind: model.RunTimelineKindRequested,
		Detail: fmt.Sprintf("%s %s run requested by %s", run.Trigger, run.Mode, run.RequestedBy),
	}}
	if run.ActivatedAt != nil {
		out = append(out, &model.RunTimelineEvent{At: *run.ActivatedAt, Kind: model.RunTimelineKindActivated,
			Detail: "running on " + run.Instance})
	}
	if run.FinishedAt != nil {
		detail := string(run.Status)
		if run.StopReason != "" {
			detail += " (" + string(run.StopReason) + ")"
		}
		if run.Message != "" {
			detail += ": " + run.Message
		}
		out = append(out, &model.RunTimelineEvent{At: *run.FinishedAt, Kind: model.RunTimelineKindFinished, Detail: detail})
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
