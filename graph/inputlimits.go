package graph

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/baton-run/baton/runner"
)

// Every text value a mutation takes is bounded here, in one place, before any resolver runs:
// an operation carrying one value over its limit is refused whole, with INPUT_TOO_LONG naming
// the field, and nothing of it is written (its audit row records the field and the length, not
// the value). The limits count characters (Unicode code points), by the name of the field that
// holds the value, at any depth of the input and in lists:
//
//   - identifiers: ids, names, cron expressions, time zones, target keys, steps: MaxIDLength;
//   - references (fields whose name ends in "Ref"): MaxRefLength;
//   - free text (reasons, notes, and any other string): MaxTextLength.
//
// A list of text values holds at most MaxInputListLength of them.
const (
	MaxIDLength        = 200
	MaxRefLength       = 500
	MaxTextLength      = 2000
	MaxInputListLength = 100
	// CodeInputTooLong refuses a mutation with a value over its limit (extensions.field
	// names it; extensions.length and extensions.limit say by how much).
	CodeInputTooLong = "INPUT_TOO_LONG"
)

// idFields are the fields held to MaxIDLength, besides those named *Id and *Ids.
var idFields = map[string]bool{
	"name": true, "job": true, "jobName": true, "cron": true, "timezone": true, "targetKey": true, "target": true,
	"targetKeys": true, "step": true, "scope": true, "mode": true, "resolution": true,
}

// inputLimit returns the character limit of a text value held by field name.
func inputLimit(name string) int {
	switch {
	case idFields[name], strings.HasSuffix(name, "Id"), strings.HasSuffix(name, "Ids"), strings.HasSuffix(name, "ID"):
		return MaxIDLength
	case strings.HasSuffix(name, "Ref"):
		return MaxRefLength
	}
	return MaxTextLength
}

// inputLimits is the handler extension that applies the limits to every mutation.
type inputLimits struct {
	runner *runner.Runner
	log    *slog.Logger
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = inputLimits{}

func (inputLimits) ExtensionName() string                          { return "BatonInputLimits" }
func (inputLimits) Validate(schema graphql.ExecutableSchema) error { return nil }

// tooLong is a value over its limit: where it is, how long it is, and the limit.
type tooLong struct {
	path   string
	length int
	limit  int
	list   bool // a list with too many items
}

func (e *tooLong) message() string {
	if e.list {
		return e.path + " holds " + strconv.Itoa(e.length) + " items; the limit is " + strconv.Itoa(e.limit)
	}
	return e.path + " is " + strconv.Itoa(e.length) + " characters long; the limit is " + strconv.Itoa(e.limit)
}

func (l inputLimits) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	op := opCtx.Operation
	if op == nil || op.Operation != ast.Mutation {
		return nil
	}
	for _, sel := range op.SelectionSet {
		f, ok := sel.(*ast.Field)
		if !ok {
			continue
		}
		args := f.ArgumentMap(opCtx.Variables)
		if e := checkInput(args, ""); e != nil {
			l.audit(ctx, f.Name, e)
			return &gqlerror.Error{
				Message: f.Name + ": " + e.message(),
				Path:    ast.Path{ast.PathName(f.Alias)},
				Extensions: map[string]any{
					"code": CodeInputTooLong, "field": e.path, "length": e.length, "limit": e.limit,
				},
			}
		}
	}
	return nil
}

// audit records the refusal for an authenticated caller, with the field and its length: the
// value itself is what the limit keeps out.
func (l inputLimits) audit(ctx context.Context, mutation string, e *tooLong) {
	v := CallerFrom(ctx)
	if v == nil || l.runner == nil {
		return // unauthenticated callers are refused at the field anyway, and not audited
	}
	action := mutation
	if action == "reconcileEntry" {
		action = "reconcile"
	}
	args := map[string]any{"field": e.path, "length": e.length, "limit": e.limit}
	if err := l.runner.Audit().Record(context.WithoutCancel(ctx), v.Name, action, "", args, CodeInputTooLong); err != nil {
		l.log.ErrorContext(ctx, "graph: audit refused mutation", "action", action, "actor", v.Name, "err", err)
	}
}

// checkInput returns the first value of v over its limit (in a stable order), or nil. path is
// where v is, name the field that holds it.
func checkInput(v any, path string) *tooLong {
	name := path
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		name = path[i+1:]
	}
	if i := strings.IndexByte(name, ']'); i >= 0 { // a list item: judged by the list's field
		base := path[:strings.LastIndexByte(path, '[')]
		name = base[strings.LastIndexByte(base, '.')+1:]
	}
	switch x := v.(type) {
	case string:
		if n, limit := utf8.RuneCountInString(x), inputLimit(name); n > limit {
			return &tooLong{path: path, length: n, limit: limit}
		}
	case []any:
		if len(x) > MaxInputListLength {
			return &tooLong{path: path, length: len(x), limit: MaxInputListLength, list: true}
		}
		for i, item := range x {
			if e := checkInput(item, path+"["+strconv.Itoa(i)+"]"); e != nil {
				return e
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if e := checkInput(x[k], p); e != nil {
				return e
			}
		}
	}
	return nil
}
