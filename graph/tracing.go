package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// operationSpans makes a span of each GraphQL operation that runs ("mutation StartJob"), a
// child of the span in the request's context (the caller's, when the transport read a
// traceparent), and runs the operation under it: a run the operation starts is a span in the
// same trace. A subscription's span lasts as long as the subscription. An operation refused
// before it runs (it does not parse or validate, or exceeds a limit) makes none.
type operationSpans struct {
	tracer trace.Tracer
}

var (
	_ graphql.HandlerExtension     = operationSpans{}
	_ graphql.OperationInterceptor = operationSpans{}
)

// The attributes of an operation's span, as OpenTelemetry's GraphQL conventions name them.
const (
	attrOperationType = attribute.Key("graphql.operation.type")
	attrOperationName = attribute.Key("graphql.operation.name")
	attrErrorCodes    = attribute.Key("graphql.error.codes")
)

func (operationSpans) ExtensionName() string                   { return "OperationSpans" }
func (operationSpans) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation starts the operation's span and ends it with the operation's last
// response: a query's or mutation's only one, a subscription's end of stream.
func (o operationSpans) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx)
	kind, name := "operation", op.OperationName
	if op.Operation != nil {
		kind = string(op.Operation.Operation)
		if name == "" {
			name = op.Operation.Name
		}
	}
	spanName := kind
	if name != "" {
		spanName = kind + " " + name
	}
	ctx, span := o.tracer.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrOperationType.String(kind)))
	if name != "" {
		span.SetAttributes(attrOperationName.String(name))
	}
	stream := op.Operation != nil && op.Operation.Operation == ast.Subscription
	written := &streamCodes{}
	if stream {
		ctx = context.WithValue(ctx, streamCodesKey{}, written)
	}
	responses := next(ctx)
	var codesSeen []string
	return func(ctx context.Context) *graphql.Response {
		resp := responses(ctx)
		if resp != nil {
			codesSeen = appendCodes(codesSeen, resp.Errors)
		}
		if resp == nil || !stream {
			codesSeen = appendCodes(codesSeen, written.errs)
			if len(codesSeen) > 0 {
				span.SetAttributes(attrErrorCodes.StringSlice(codesSeen))
				span.SetStatus(codes.Error, strings.Join(codesSeen, ", "))
			}
			span.End()
		}
		return resp
	}
}

// appendCodes adds the codes of errs (extensions.code) not in seen yet.
func appendCodes(seen []string, errs gqlerror.List) []string {
	for _, e := range errs {
		code := "ERROR"
		if c, ok := e.Extensions["code"]; ok {
			code = fmt.Sprint(c)
		}
		found := false
		for _, s := range seen {
			found = found || s == code
		}
		if !found {
			seen = append(seen, code)
		}
	}
	return seen
}

// streamCodes collects the errors of a subscription's events that its connection wrote
// itself (shared frames, ADR 30): they never come back through the operation's response
// handler, so the span learns of them here. The subscription's goroutine both adds them and
// ends the span.
type streamCodes struct{ errs gqlerror.List }

type streamCodesKey struct{}

// recordWrittenErrors tells the subscription's span, if ctx has one, of errs, sent to the
// subscriber outside its response handler. It looks into ctx only when there are errors: the
// lookup walks the whole context chain, and most events have none.
func recordWrittenErrors(ctx context.Context, errs gqlerror.List) {
	if len(errs) == 0 {
		return
	}
	if c, ok := ctx.Value(streamCodesKey{}).(*streamCodes); ok {
		c.errs = append(c.errs, errs...)
	}
}
