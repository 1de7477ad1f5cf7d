package graph

import (
	"context"
	"encoding/json"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vikstrous/dataloadgen"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// A page of jobs prefetches what its selection asks of every job on it — the active and last
// runs, the ledger counts, the runs, and of those runs their errors and counts — with one
// statement per field (and per distinct set of arguments), and primes the loaders with the
// results. The loaders alone batch only the loads that arrive within their wait; on a busy
// machine the resolvers of a long page may straggle past it and split a batch. Prefetching
// makes the cost of a page a function of its query, not of its length or the machine's load.

// runsOfJobs is the batch function of the jobRuns loader: one statement per distinct filter.
func runsOfJobs(ctx context.Context, runs *runner.RunService, keys []runsKey) ([][]*bt.RunRecord, []error) {
	type filter struct {
		statuses string
		before   int64
		limit    int
	}
	groups := map[filter][]string{}
	for _, k := range keys {
		f := filter{k.statuses, k.before, k.limit}
		groups[f] = append(groups[f], k.job)
	}
	found := map[runsKey][]*bt.RunRecord{}
	for f, jobs := range groups {
		m, err := runs.OfJobs(ctx, jobs, runner.RunFilter{Statuses: splitStatuses(f.statuses), BeforeID: f.before, Limit: f.limit})
		if err != nil {
			return byKey(keys, found, err)
		}
		for _, j := range jobs {
			found[runsKey{j, f.statuses, f.before, f.limit}] = nonNil(m[j])
		}
	}
	return byKey(keys, found, nil)
}

// errorsOfRuns is the batch function of the runErrors loader: one statement per distinct page.
func errorsOfRuns(ctx context.Context, rs *runner.RunService, keys []errorsKey) ([][]bt.RunError, []error) {
	type pg struct {
		after int64
		limit int
	}
	groups := map[pg][]int64{}
	for _, k := range keys {
		groups[pg{k.after, k.limit}] = append(groups[pg{k.after, k.limit}], k.run)
	}
	found := map[errorsKey][]bt.RunError{}
	for p, runs := range groups {
		m, err := rs.ErrorsOfRuns(ctx, runs, p.after, p.limit)
		if err != nil {
			return byKey(keys, found, err)
		}
		for _, id := range runs {
			found[errorsKey{id, p.after, p.limit}] = nonNil(m[id])
		}
	}
	return byKey(keys, found, nil)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// collect returns the fields selected at each of paths below sets (fragments included); no
// path: the fields of sets themselves.
func collect(opCtx *graphql.OperationContext, sets []ast.SelectionSet, paths ...[]string) []graphql.CollectedField {
	if len(paths) == 0 {
		paths = [][]string{nil}
	}
	var out []graphql.CollectedField
	for _, path := range paths {
		at := sets
		for _, name := range path {
			var next []ast.SelectionSet
			for _, set := range at {
				for _, f := range graphql.CollectFields(opCtx, set, nil) {
					if f.Name == name {
						next = append(next, f.Selections)
					}
				}
			}
			at = next
		}
		for _, set := range at {
			out = append(out, graphql.CollectFields(opCtx, set, nil)...)
		}
	}
	return out
}

// connectionNodes are the paths of a connection's items: edges { node } and nodes.
var connectionNodes = [][]string{{"edges", "node"}, {"nodes"}}

// pageArgs reads first and after of a selected connection field. ok is false when they are not
// valid: the field's resolver reports that, and there is nothing to prefetch.
func pageArgs(opCtx *graphql.OperationContext, f graphql.CollectedField, kind string) (page, map[string]any, bool) {
	args := f.ArgumentMap(opCtx.Variables)
	var first *int
	if v, ok := args["first"]; ok && v != nil {
		n, ok := toInt(v)
		if !ok {
			return page{}, args, false
		}
		first = &n
	}
	var after *string
	if v, ok := args["after"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return page{}, args, false
		}
		after = &s
	}
	p, err := parsePage(first, after, kind)
	return p, args, err == nil
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case int32:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// statusesArg reads a [RunStatus!] argument.
func statusesArg(v any) ([]bt.RunStatus, bool) {
	if v == nil {
		return nil, true
	}
	if one, ok := v.(string); ok { // a single value stands for a list of one
		return []bt.RunStatus{bt.RunStatus(one)}, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]bt.RunStatus, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok { // validation has checked the values against the enum
			return nil, false
		}
		out = append(out, bt.RunStatus(s))
	}
	return out, true
}

// prefetchJobs prefetches the selection of the current field's jobs (a JobConnection).
func (r *Resolver) prefetchJobs(ctx context.Context, jobs []*bt.JobSettings) error {
	fc := graphql.GetFieldContext(ctx)
	if len(jobs) == 0 || fc == nil || !graphql.HasOperationContext(ctx) {
		return nil
	}
	opCtx := graphql.GetOperationContext(ctx)
	l := r.loaders(ctx)
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	var active, last map[string]*bt.RunRecord
	countsDone := false
	for _, f := range collect(opCtx, []ast.SelectionSet{fc.Field.Selections}, connectionNodes...) {
		switch f.Name {
		case "activeRun", "lastRun":
			loader, m := l.activeRunOf, &active
			read := r.runner.Runs().ActiveOfJobs
			if f.Name == "lastRun" {
				loader, m, read = l.lastRunOf, &last, r.runner.Runs().LastOfJobs
			}
			if *m == nil {
				got, err := read(ctx, names)
				if err != nil {
					return err
				}
				*m = got
				for _, name := range names {
					loader.Prime(name, got[name]) // nil for jobs without one: known, not missing
				}
			}
			var runs []*bt.RunRecord
			for _, name := range names {
				if run := (*m)[name]; run != nil {
					runs = append(runs, run)
				}
			}
			if err := r.prefetchRuns(ctx, opCtx, runs, collect(opCtx, []ast.SelectionSet{f.Selections})); err != nil {
				return err
			}
		case "ledgerSummary":
			if countsDone {
				continue
			}
			countsDone = true
			keys := make([]runner.CountsKey, len(jobs))
			for i, j := range jobs {
				keys[i] = runner.CountsKey{Job: j.Name, Generation: j.CurrentGeneration}
			}
			if err := prefetchCounts(ctx, l.generationCounts, r.runner.Ledger().Counts, keys); err != nil {
				return err
			}
		case "runs":
			p, args, ok := pageArgs(opCtx, f, cursorRuns)
			status, sok := statusesArg(args["status"])
			if !ok || !sok {
				continue
			}
			statuses := joinStatuses(status)
			m, err := r.runner.Runs().OfJobs(ctx, names, runner.RunFilter{Statuses: status, BeforeID: p.after, Limit: p.first + 1})
			if err != nil {
				return err
			}
			var runs []*bt.RunRecord
			for _, name := range names {
				l.jobRuns.Prime(runsKey{job: name, statuses: statuses, before: p.after, limit: p.first + 1}, nonNil(m[name]))
				page := m[name]
				if len(page) > p.first {
					page = page[:p.first]
				}
				runs = append(runs, page...)
			}
			if err := r.prefetchRuns(ctx, opCtx, runs, collect(opCtx, []ast.SelectionSet{f.Selections}, connectionNodes...)); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefetchRuns prefetches, for runs, the fields among fields that read the database per run:
// errors and ledgerSummary.
func (r *Resolver) prefetchRuns(ctx context.Context, opCtx *graphql.OperationContext, runs []*bt.RunRecord, fields []graphql.CollectedField) error {
	if len(runs) == 0 {
		return nil
	}
	l := r.loaders(ctx)
	ids := make([]int64, len(runs))
	for i, run := range runs {
		ids[i] = run.ID
		l.runByID.Prime(run.ID, run)
	}
	countsDone, shardsDone := false, false
	for _, f := range fields {
		switch f.Name {
		case "shards", "progress": // a sharded run's percent is its shards'
			if shardsDone {
				continue
			}
			shardsDone = true
			if err := r.prefetchShards(ctx, runs); err != nil {
				return err
			}
		case "errors":
			p, _, ok := pageArgs(opCtx, f, cursorRunErrors)
			if !ok {
				continue
			}
			m, err := r.runner.Runs().ErrorsOfRuns(ctx, ids, p.after, p.first+1)
			if err != nil {
				return err
			}
			for _, id := range ids {
				l.runErrors.Prime(errorsKey{run: id, after: p.after, limit: p.first + 1}, nonNil(m[id]))
			}
		case "ledgerSummary":
			if countsDone {
				continue
			}
			countsDone = true
			keys := make([]runner.CountsKey, len(runs))
			for i, run := range runs {
				keys[i] = runner.CountsKey{Job: run.JobName, Generation: run.Generation, RunID: run.ID}
			}
			if err := prefetchCounts(ctx, l.runCounts, r.runner.Ledger().Counts, keys); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefetchShards reads the shards of the sharded runs among runs at once and primes the shards
// loader with them.
func (r *Resolver) prefetchShards(ctx context.Context, runs []*bt.RunRecord) error {
	var ids []int64
	for _, run := range runs {
		if run.ShardTotal > 0 && run.Shard == nil {
			ids = append(ids, run.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	m, err := r.runner.Runs().ShardsOfRuns(ctx, ids)
	if err != nil {
		return err
	}
	l := r.loaders(ctx)
	for _, id := range ids {
		l.shardsOfRun.Prime(id, nonNil(m[id]))
	}
	return nil
}

// prefetchCounts reads the ledger counts of keys at once and primes loader with them.
func prefetchCounts(ctx context.Context, loader *dataloadgen.Loader[runner.CountsKey, map[bt.LedgerState]int64],
	read func(context.Context, []runner.CountsKey) (map[runner.CountsKey]map[bt.LedgerState]int64, error), keys []runner.CountsKey) error {
	m, err := read(ctx, keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		loader.Prime(k, m[k])
	}
	return nil
}
