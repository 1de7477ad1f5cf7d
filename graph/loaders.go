package graph

import (
	"context"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// loaders batch the reads of one response: every Run.job, Job.activeRun, Job.lastRun and
// LedgerEntry.run (and Run.resumedFrom, ReplayRequest's runs, Alert's job and run) of a page
// costs one query per kind, not one per item. They belong to one response — one per query or
// mutation, one per event of a subscription — so they never serve stale data for long, and
// they are made on first use (see responseLoaders).
type loaders struct {
	runByID     *dataloadgen.Loader[int64, *bt.Run]
	jobByName   *dataloadgen.Loader[string, *bt.JobSettings]
	activeRunOf *dataloadgen.Loader[string, *bt.Run]
	lastRunOf   *dataloadgen.Loader[string, *bt.Run]
	now         func(ctx context.Context) (time.Time, error)
}

// loaderWait is how long a loader gathers keys before it queries. gqlgen resolves the fields
// of a list's items concurrently, so they all arrive within a few microseconds; the wait only
// has to cover the scheduling of those goroutines.
const loaderWait = 2 * time.Millisecond

func newLoaders(s *postgres.Store) *loaders {
	opts := []dataloadgen.Option{dataloadgen.WithWait(loaderWait), dataloadgen.WithBatchCapacity(500)}
	var nowOnce sync.Once
	var now time.Time
	var nowErr error
	return &loaders{
		runByID: dataloadgen.NewLoader(func(ctx context.Context, ids []int64) ([]*bt.Run, []error) {
			m, err := s.RunsByIDs(ctx, ids)
			return byKey(ids, m, err)
		}, opts...),
		jobByName: dataloadgen.NewLoader(func(ctx context.Context, names []string) ([]*bt.JobSettings, []error) {
			jobs, err := s.Jobs(ctx, names)
			m := make(map[string]*bt.JobSettings, len(jobs))
			for _, j := range jobs {
				m[j.Name] = j
			}
			return byKey(names, m, err)
		}, opts...),
		activeRunOf: dataloadgen.NewLoader(func(ctx context.Context, names []string) ([]*bt.Run, []error) {
			m, err := s.ActiveRunsByJobs(ctx, names)
			return byKey(names, m, err)
		}, opts...),
		lastRunOf: dataloadgen.NewLoader(func(ctx context.Context, names []string) ([]*bt.Run, []error) {
			m, err := s.LastRunsByJobs(ctx, names)
			return byKey(names, m, err)
		}, opts...),
		// The database clock, read once per response (for next fire times).
		now: func(ctx context.Context) (time.Time, error) {
			nowOnce.Do(func() { now, nowErr = s.Now(ctx) })
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
	store *postgres.Store
	once  sync.Once
	l     *loaders
}

func (rl *responseLoaders) get() *loaders {
	rl.once.Do(func() { rl.l = newLoaders(rl.store) })
	return rl.l
}

type loadersKey struct{}

// withLoaders gives the response that ctx belongs to loaders of its own, made on first use.
func withLoaders(ctx context.Context, s *postgres.Store) context.Context {
	return context.WithValue(ctx, loadersKey{}, &responseLoaders{store: s})
}

// loaders returns the response's loaders. Outside a response (which does not happen in
// resolvers) it makes fresh ones, so callers never have to check.
func (r *Resolver) loaders(ctx context.Context) *loaders {
	if rl, ok := ctx.Value(loadersKey{}).(*responseLoaders); ok {
		return rl.get()
	}
	return newLoaders(r.store)
}

// prefetchRunsOf loads the active and last runs of jobs in one query each when the current
// field's selection asks for them, and primes the loaders with them. The loaders would batch
// these reads too, but only those that arrive within their wait; a list the resolver already
// holds costs exactly one query per kind this way, however busy the machine.
func (r *Resolver) prefetchRunsOf(ctx context.Context, jobs []string) error {
	if len(jobs) == 0 {
		return nil
	}
	active, last := selects(ctx, []string{"activeRun"}), selects(ctx, []string{"lastRun"})
	l := r.loaders(ctx)
	prime := func(loader *dataloadgen.Loader[string, *bt.Run], m map[string]*bt.Run) {
		for _, name := range jobs {
			loader.Prime(name, m[name]) // nil for jobs without one: known, not missing
		}
	}
	if active {
		m, err := r.store.ActiveRunsByJobs(ctx, jobs)
		if err != nil {
			return err
		}
		prime(l.activeRunOf, m)
	}
	if last {
		m, err := r.store.LastRunsByJobs(ctx, jobs)
		if err != nil {
			return err
		}
		prime(l.lastRunOf, m)
	}
	return nil
}

// prefetchJobsOf loads the jobs of a page of runs in one query when the page's selection asks
// for them (nodes { job } or edges { node { job } }), and primes the job loader.
func (r *Resolver) prefetchJobsOf(ctx context.Context, runs []*bt.Run) error {
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
	jobs, err := r.store.Jobs(ctx, names)
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
