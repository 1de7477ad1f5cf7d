package graph_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/server/httpapi"
)

// TestErrorsReachOnError: every top-level error the API answers reaches Config.OnError with
// the code the client sees — validation, a role refusal, a runner error — once each, and a
// request that succeeds reports none.
func TestErrorsReachOnError(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	var codes []string
	i := b.instance(instanceOpts{poolSize: -1, noRun: true, graph: func(c *httpapi.Config) {
		c.GraphQL.OnError = func(code string) {
			mu.Lock()
			defer mu.Unlock()
			codes = append(codes, code)
		}
	}})
	viewer, operator := b.token(model.RoleViewer), b.token(model.RoleOperator)
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(codes)
	}

	if r := i.post(t, operator, `{ jobs(first: 1) { nodes { name } } }`, nil); len(r.Errors) != 0 {
		t.Fatalf("a valid query: errors %+v", r.Errors)
	}
	if got := seen(); len(got) != 0 {
		t.Errorf("a valid query reported %q; want nothing", got)
	}
	var want []string
	for _, c := range []struct {
		token, query string
	}{
		{operator, `{ noSuchField }`},
		{viewer, `{ __schema { queryType { name } } }`},
		{operator, `{ run(id: "not an id") { id } }`},
	} {
		r := i.post(t, c.token, c.query, nil)
		if len(r.Errors) != 1 {
			t.Fatalf("%s: errors %+v; want one", c.query, r.Errors)
		}
		want = append(want, r.code())
	}
	if want[1] != graph.CodeForbidden {
		t.Errorf("viewer introspects: code %q, want %s", want[1], graph.CodeForbidden)
	}
	if got := seen(); !slices.Equal(got, want) {
		t.Errorf("OnError saw %q; the client saw %q", got, want)
	}
}
