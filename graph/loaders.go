package graph

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// loaders batch the reads of one response: every Run.job, Job.activeRun, Job.lastRun,
// Job.runs, Job.ledgerSummary, Run.errors, Run.ledgerSummary, Run.attention, Run.shards and LedgerEntry.run (and
// Run.resumedFrom, ReplayRequest's runs, Alert's job and run) of a page costs one query per
// kind (and per distinct set of arguments), not one per item. They belong to one response — one per query or
// mutation, one per event of a subscription — so they never serve stale data for long, and
// they are made on first use (see responseLoaders).
type loaders struct {
	runByID     *dataloadgen.Loader[int64, *bt.RunRecord]
	jobByName   *dataloadgen.Loader[string, *bt.JobSettings]
	activeRunOf *dataloadgen.Loader[string, *bt.RunRecord]
	lastRunOf   *dataloadgen.Loader[string, *bt.RunRecord]
	// generationCounts are the per-state ledger counts of a job's generation (RunID 0),
	// runCounts those of a run.
	generationCounts *dataloadgen.Loader[runner.CountsKey, map[bt.LedgerState]int64]
	runCounts        *dataloadgen.Loader[runner.CountsKey, map[bt.LedgerState]int64]
	// jobRuns are pages of the runs of a job (Job.runs), fetched with one extra run.
	jobRuns *dataloadgen.Loader[runsKey, []*bt.RunRecord]
	// runErrors are pages of the error rows of a run (Run.errors), fetched with one extra row.
	runErrors *dataloadgen.Loader[errorsKey, []bt.RunError]
	// runEvents are the recorded events of a run (Run.events).
	runEvents *dataloadgen.Loader[int64, []runner.TimelineEvent]
	// shardsOfRun are a sharded run's shards (Run.shards, the summed percent), and
	// shardEvents a shard's recorded events but its lease renewals (its run's Run.events).
	shardsOfRun *dataloadgen.Loader[int64, []*bt.RunRecord]
	shardEvents *dataloadgen.Loader[int64, []runner.TimelineEvent]
	now         func(ctx context.Context) (time.Time, error)
}

// runsKey is one page of one job's runs: its filter and the limit it is fetched with.
type runsKey struct {
	job      string
	statuses string // the statuses, comma-separated: a comparable key
	before   int64
	limit    int
}

// errorsKey is one page of one run's error rows.
type errorsKey struct {
	run   int64
	after int64
	limit int
}

func joinStatuses(s []bt.RunStatus) string { return strings.Join(strs(s), ",") }

func splitStatuses(s string) []bt.RunStatus {
	if s == "" {
		return nil
	}
	var out []bt.RunStatus
	for _, v := range strings.Split(s, ",") {
		out = append(out, bt.RunStatus(v))
	}
	return out
}

func strs[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

// defaultBatchWait is how long a loader gathers keys before it queries (Config.BatchWait).
// gqlgen resolves the fields of a list's items concurrently, so they all arrive within a few
// microseconds on an idle host; the wait only has to cover the scheduling of those goroutines.
// A host too busy to schedule them in time splits a batch in two: one more query, never a
// wrong answer.
const defaultBatchWait = 2 * time.Millisecond

func newLoaders(r *runner.Runner, wait time.Duration) *loaders {
	runs, jobs, ledger := r.Runs(), r.Jobs(), r.Ledger()
	opts := []dataloadgen.Option{dataloadgen.WithWait(wait), dataloadgen.WithBatchCapacity(500)}
	var nowOnce sync.Once
	var now time.Time
	var nowErr error
	return &loaders{
		runByID: dataloadgen.NewLoader(func(ctx context.Context, ids []int64) ([]*bt.RunRecord, []error) {
			m, err := runs.ByIDs(ctx, ids)
			return byKey(ids, m, err)
		}, opts...),
		jobByName: dataloadgen.NewLoader(func(ctx context.Context, names []string) ([]*bt.JobSettings, []error) {
			list, err := jobs.List(ctx, names)
			m := make(map[string]*bt.JobSettings, len(list))
			for _, j := range list {
				m[j.Name] = j
			}
			return byKey(names, m, err)
		}, opts...),
		activeRunOf: dataloadgen.NewLoader(func(ctx context.Context, names []string) ([]*bt.RunRecord, []error) {
			m, err := runs.ActiveOfJobs(ctx, names)
			return byKey(names, m, err)
		}, opts...),
		lastRunOf: dataloadgen.NewLoader(func(ctx context.Context, names []string) ([]*bt.RunRecord, []error) {
			m, err := runs.LastOfJobs(ctx, names)
			return byKey(names, m, err)
		}, opts...),
		generationCounts: dataloadgen.NewLoader(func(ctx context.Context, keys []runner.CountsKey) ([]map[bt.LedgerState]int64, []error) {
			m, err := ledger.Counts(ctx, keys)
			return byKey(keys, m, err)
		}, opts...),
		runCounts: dataloadgen.NewLoader(func(ctx context.Context, keys []runner.CountsKey) ([]map[bt.LedgerState]int64, []error) {
			m, err := ledger.Counts(ctx, keys)
			return byKey(keys, m, err)
		}, opts...),
		jobRuns: dataloadgen.NewLoader(func(ctx context.Context, keys []runsKey) ([][]*bt.RunRecord, []error) {
			return runsOfJobs(ctx, runs, keys)
		}, opts...),
		runErrors: dataloadgen.NewLoader(func(ctx context.Context, keys []errorsKey) ([][]bt.RunError, []error) {
			return errorsOfRuns(ctx, runs, keys)
		}, opts...),
		runEvents: dataloadgen.NewLoader(func(ctx context.Context, ids []int64) ([][]runner.TimelineEvent, []error) {
			m, err := runs.EventsOfRuns(ctx, ids, maxTimelineRenewals)
			return byKey(ids, m, err)
		}, opts...),
		shardsOfRun: dataloadgen.NewLoader(func(ctx context.Context, ids []int64) ([][]*bt.RunRecord, []error) {
			m, err := runs.ShardsOfRuns(ctx, ids)
			return byKey(ids, m, err)
		}, opts...),
		shardEvents: dataloadgen.NewLoader(func(ctx context.Context, ids []int64) ([][]runner.TimelineEvent, []error) {
			m, err := runs.EventsOfRuns(ctx, ids, 0)
			return byKey(ids, m, err)
		}, opts...),
		// The database clock, read once per response (for next fire times).
		now: func(ctx context.Context) (time.Time, error) {
			nowOnce.Do(func() { now, nowErr = jobs.Now(ctx) })
			return now, nowErr
		},
	}
}

// byKey orders a batch's results by keys; a key with no row gets nil and no error.
func byKey[K comparable, V any](keys []K, m map[K]V, err error) ([]V, []error) {
	vals := make([]V, len(keys))
	if err != nil {
		errs := make([]error, len(keys))
		for i := range errs {
			errs[i] = err
		}
		return vals, errs
	}
	for i, k := range keys {
		vals[i] = m[k]
	}
	return vals, nil
}

// responseLoaders holds one response's loaders, made when a resolver first asks for them.
// Most subscription responses never do (runProgress { id status progress } reads only the
// run in hand), and a live update is executed once per subscriber: making four loaders for
// each of them was a measurable share of fanning an update out.
type responseLoaders struct {
	runner *runner.Runner
	wait   time.Duration
	once   sync.Once
	l      *loaders
}

func (rl *responseLoaders) get() *loaders {
	rl.once.Do(func() { rl.l = newLoaders(rl.runner, rl.wait) })
	return rl.l
}

type loadersKey struct{}

// withLoaders gives the response that ctx belongs to loaders of its own, made on first use.
func withLoaders(ctx context.Context, r *runner.Runner, wait time.Duration) context.Context {
	return context.WithValue(ctx, loadersKey{}, &responseLoaders{runner: r, wait: wait})
}

// loaders returns the response's loaders. Outside a response (which does not happen in
// resolvers) it makes fresh ones, so callers never have to check.
func (r *Resolver) loaders(ctx context.Context) *loaders {
	if rl, ok := ctx.Value(loadersKey{}).(*responseLoaders); ok {
		return rl.get()
	}
	return newLoaders(r.runner, defaultBatchWait)
}

// prefetchJobsOf loads the jobs of a page of runs in one query when the page's selection asks
// for them (nodes { job } or edges { node { job } }), and primes the job loader.
func (r *Resolver) prefetchJobsOf(ctx context.Context, runs []*bt.RunRecord) error {
	if len(runs) == 0 || !selects(ctx, []string{"nodes", "job"}, []string{"edges", "node", "job"}) {
		return nil
	}
	seen := map[string]bool{}
	var names []string
	for _, run := range runs {
		if !seen[run.JobName] {
			seen[run.JobName] = true
			names = append(names, run.JobName)
		}
	}
	jobs, err := r.runner.Jobs().List(ctx, names)
	if err != nil {
		return err
	}
	l := r.loaders(ctx)
	for _, j := range jobs {
		l.jobByName.Prime(j.Name, j)
	}
	return nil
}

// selects reports whether the current field's selection contains any of paths, each a chain
// of field names below it (fragments included).
func selects(ctx context.Context, paths ...[]string) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || !graphql.HasOperationContext(ctx) {
		return false
	}
	opCtx := graphql.GetOperationContext(ctx)
next:
	for _, path := range paths {
		set := fc.Field.Selections
		for _, name := range path {
			found := false
			for _, f := range graphql.CollectFields(opCtx, set, nil) {
				if f.Name == name {
					set, found = f.Selections, true
					break
				}
			}
			if !found {
				continue next
			}
		}
		return true
	}
	return false
}
