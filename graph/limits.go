package graph

import (
	"context"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/baton-run/baton/graph/generated"
	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
)

// maxMutationsPerOperation bounds the mutation fields of one operation, so that one request
// cannot carry hundreds of aliased mutations past the per-token rate limit's bookkeeping.
const maxMutationsPerOperation = 10

// operationLimits refuses operations nested deeper than maxDepth or carrying more than
// maxMutationsPerOperation mutations, and turns introspection on for operators (or everyone
// in development). It runs after validation, before execution.
type operationLimits struct {
	maxDepth int
	dev      bool
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = operationLimits{}

func (operationLimits) ExtensionName() string                          { return "BatonOperationLimits" }
func (operationLimits) Validate(schema graphql.ExecutableSchema) error { return nil }

func (l operationLimits) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	v := CallerFrom(ctx)
	opCtx.DisableIntrospection = !(l.dev || (v != nil && v.Role.AtLeast(model.RoleOperator)))
	op := opCtx.Operation
	if op == nil {
		return nil
	}
	if opCtx.DisableIntrospection && introspects(op.SelectionSet, map[string]bool{}) {
		return &gqlerror.Error{
			Message:    "introspection needs the OPERATOR role or higher",
			Extensions: map[string]any{"code": CodeForbidden},
		}
	}
	if d := depth(op.SelectionSet, 0, map[string]bool{}); d > l.maxDepth {
		return &gqlerror.Error{
			Message:    "operation is nested " + strconv.Itoa(d) + " levels deep; the limit is " + strconv.Itoa(l.maxDepth),
			Extensions: map[string]any{"code": CodeDepthLimit},
		}
	}
	if op.Operation == ast.Mutation {
		if n := countFields(op.SelectionSet, map[string]bool{}); n > maxMutationsPerOperation {
			return &gqlerror.Error{
				Message:    "operation carries " + strconv.Itoa(n) + " mutations; the limit is " + strconv.Itoa(maxMutationsPerOperation),
				Extensions: map[string]any{"code": CodeTooManyFields},
			}
		}
	}
	return nil
}

// depth returns how deeply fields nest in set, fragments included. Introspection fields
// (__schema, __type) are not followed: their depth is bounded by the schema, and the standard
// introspection query nests its type references deeper than any of our own queries need.
func depth(set ast.SelectionSet, level int, visiting map[string]bool) int {
	deepest := level
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				d = level + 1
			} else {
				d = depth(s.SelectionSet, level+1, visiting)
			}
		case *ast.InlineFragment:
			d = depth(s.SelectionSet, level, visiting)
		case *ast.FragmentSpread:
			if s.Definition == nil || visiting[s.Name] {
				continue
			}
			visiting[s.Name] = true
			d = depth(s.Definition.SelectionSet, level, visiting)
			delete(visiting, s.Name)
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// introspects reports whether set selects __schema or __type (root fields of a query).
func introspects(set ast.SelectionSet, visiting map[string]bool) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" {
				return true
			}
		case *ast.InlineFragment:
			if introspects(s.SelectionSet, visiting) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition == nil || visiting[s.Name] {
				continue
			}
			visiting[s.Name] = true
			found := introspects(s.Definition.SelectionSet, visiting)
			delete(visiting, s.Name)
			if found {
				return true
			}
		}
	}
	return false
}

// countFields counts the fields of set, looking through fragments.
func countFields(set ast.SelectionSet, visiting map[string]bool) int {
	n := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name != "__typename" {
				n++
			}
		case *ast.InlineFragment:
			n += countFields(s.SelectionSet, visiting)
		case *ast.FragmentSpread:
			if s.Definition == nil || visiting[s.Name] {
				continue
			}
			visiting[s.Name] = true
			n += countFields(s.Definition.SelectionSet, visiting)
			delete(visiting, s.Name)
		}
	}
	return n
}

// pageCost is the complexity of a connection field: its selection once per item asked for.
// `first` is capped here at MaxPageSize so that an oversized first reaches the resolver and
// fails there with BAD_USER_INPUT, which says more than a complexity error.
func pageCost(child int, first *int) int {
	n := DefaultPageSize
	if first != nil {
		n = min(max(*first, 0), MaxPageSize)
	}
	return 1 + n*max(child, 1)
}

// estimatedListSize weights lists that are not paginated (alerts): they are short in practice,
// but not free.
const estimatedListSize = 10

// complexity weights every list field by the number of items it may return.
func complexity() generated.ComplexityRoot {
	var c generated.ComplexityRoot
	list := func(child int) int { return 1 + estimatedListSize*max(child, 1) }
	c.Query.Jobs = func(child int, first *int, _ *string) int { return pageCost(child, first) }
	c.Query.Alerts = func(child int, _ *bool) int { return list(child) }
	c.Query.AlertHistory = func(child int, _ *string, first *int, _ *string) int { return pageCost(child, first) }
	c.Query.Runs = func(child int, _ *string, _ []bt.RunStatus, _ *model.RunsFilter, first *int, _ *string) int {
		return pageCost(child, first)
	}
	c.Query.Ledger = func(child int, _ string, _ []bt.LedgerState, _ *string, _ *int, _ *string, first *int, _ *string) int {
		return pageCost(child, first)
	}
	c.Query.ReplayRequests = func(child int, _ []bt.ReplayStatus, first *int, _ *string) int { return pageCost(child, first) }
	c.Query.AuditLog = func(child int, _ *bt.AuditFilter, first *int, _ *string) int { return pageCost(child, first) }
	c.Query.CronPreview = func(child int, _ string, _ *string, n *int) int { return pageCost(child, n) }
	c.Job.Runs = func(child int, _ []bt.RunStatus, first *int, _ *string) int { return pageCost(child, first) }
	c.Job.NextFireTimes = func(child int, n *int) int { return pageCost(child, n) }
	c.Run.Errors = func(child int, first *int, _, _, _ *string) int { return pageCost(child, first) }
	c.Run.Shards = func(child int) int { return list(child) }
	c.TargetHistory.Entries = func(child int, first *int, _ *string) int { return pageCost(child, first) }
	c.TargetHistory.Errors = func(child int, first *int, _ *string) int { return pageCost(child, first) }
	return c
}
