package graph

import (
	"context"
	"unicode/utf8"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// maxErrorSearch bounds Run.errors(search:), in characters.
const maxErrorSearch = 200

// errorFilter checks Run.errors' filter arguments.
func errorFilter(failureClass, search *string) (runner.ErrorFilter, error) {
	var f runner.ErrorFilter
	if failureClass != nil {
		f.FailureClass = *failureClass
	}
	if search != nil {
		f.Search = *search
	}
	if utf8.RuneCountInString(f.FailureClass) > maxErrorSearch {
		return f, badInput("failureClass is longer than %d characters", maxErrorSearch)
	}
	if utf8.RuneCountInString(f.Search) > maxErrorSearch {
		return f, badInput("search is longer than %d characters", maxErrorSearch)
	}
	return f, nil
}

// runErrorRows reads one page of a run's error rows (one more than the page, for hasNextPage):
// through the response's loader, which batches a page of runs, when nothing filters them; one
// filtered query of this run otherwise (the filters belong to one run page's errors tab).
func (r *Resolver) runErrorRows(ctx context.Context, runID int64, f runner.ErrorFilter, p page) ([]bt.RunError, error) {
	if f == (runner.ErrorFilter{}) {
		return r.loaders(ctx).runErrors.Load(ctx, errorsKey{run: runID, after: p.after, limit: p.first + 1})
	}
	return r.runner.Runs().ErrorsMatching(ctx, runID, f, p.after, p.first+1)
}
