package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Codes of top-level errors (extensions.code) that the API raises itself, here and in its HTTP
// transport (server/httpapi), which answers in the same shape. Errors of the runner carry
// their batontype code; validation errors carry gqlgen's.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeRateLimited     = "RATE_LIMITED"
	CodeDepthLimit      = "DEPTH_LIMIT_EXCEEDED"
	CodeTooManyFields   = "TOO_MANY_MUTATIONS"
	// CodeTooManySubscriptions refuses a subscribe beyond httpapi.Config.MaxSubscriptionsPerConnection.
	CodeTooManySubscriptions = "TOO_MANY_SUBSCRIPTIONS"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeBadRequest           = "BAD_REQUEST"
	CodeInternal             = "INTERNAL_SERVER_ERROR"
)

// apiError is a top-level error this package raises: its message is safe to show.
type apiError struct {
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func newError(code, format string, args ...any) error {
	return &apiError{code: code, message: fmt.Sprintf(format, args...)}
}

func badInput(format string, args ...any) error { return newError(CodeBadUserInput, format, args...) }

var (
	errUnauthenticated = newError(CodeUnauthenticated, "authentication required: send Authorization: Bearer <token>")
	errRateLimited     = newError(CodeRateLimited, "too many mutations from this token; retry in a few seconds")
)

func forbidden(need model.Role) error {
	return newError(CodeForbidden, "this needs the %s role or higher", need)
}

// userErrorCodes are the runner codes that a mutation reports as userErrors (expected
// business refusals); every other error is a top-level error.
var userErrorCodes = func() map[bt.Code]model.UserErrorCode {
	m := map[bt.Code]model.UserErrorCode{}
	for _, c := range model.AllUserErrorCode {
		m[bt.Code(c)] = c
	}
	return m
}()

// userErrors turns a runner error into the payload's userErrors when it is an expected
// refusal, and returns it unchanged (for a top-level error) otherwise. field names the input
// field to blame when the error names none.
func userErrors(err error, field string) ([]*model.UserError, error) {
	var e *bt.Error
	if !errors.As(err, &e) {
		return nil, err
	}
	code, ok := userErrorCodes[e.Code]
	if !ok {
		return nil, err
	}
	ue := &model.UserError{Code: code, Message: e.Message}
	switch {
	case e.Field != "":
		ue.Field = &e.Field
	case field != "":
		ue.Field = &field
	}
	return []*model.UserError{ue}, nil
}

func userError(code model.UserErrorCode, field, format string, args ...any) []*model.UserError {
	ue := &model.UserError{Code: code, Message: fmt.Sprintf(format, args...)}
	if field != "" {
		ue.Field = &field
	}
	return []*model.UserError{ue}
}

// presentError is the server's error presenter: every error leaves through it. Coded errors
// keep their code and message; anything else is logged under a short random reference and
// shown as "internal error (ref …)", so no SQL, driver or stack text reaches a client while an
// operator can still find the full text in the log.
func presentError(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		var gqlErr *gqlerror.Error
		if errors.As(err, &gqlErr) && gqlErr.Err == nil {
			// Raised by gqlgen itself (parse, validation, limits) or already presented.
			if gqlErr.Path == nil {
				gqlErr.Path = graphql.GetPath(ctx)
			}
			return gqlErr
		}
		out := &gqlerror.Error{Path: graphql.GetPath(ctx)}
		if gqlErr != nil {
			out.Path, out.Locations = gqlErr.Path, gqlErr.Locations
		}
		var api *apiError
		var domain *bt.Error
		switch {
		case errors.As(err, &api):
			out.Message = api.message
			out.Extensions = map[string]any{"code": api.code}
		case errors.As(err, &domain):
			out.Message = domain.Message
			out.Extensions = map[string]any{"code": string(domain.Code)}
			if domain.Field != "" {
				out.Extensions["field"] = domain.Field
			}
		case isEnumCoercion(err):
			// gqlparser checks enum values of variables without regard to case; the generated
			// enum types then refuse anything but the exact name. That is bad input, not ours.
			out.Message = err.Error()
			out.Extensions = map[string]any{"code": CodeBadUserInput}
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			out.Message = "request cancelled or timed out"
			out.Extensions = map[string]any{"code": "CANCELLED"}
		default:
			ref := runner.NewErrorRef()
			log.ErrorContext(ctx, "graphql: internal error", "ref", ref, "path", out.Path.String(), "err", err.Error())
			out.Message = runner.InternalMessage(ref)
			out.Extensions = map[string]any{"code": CodeInternal, "ref": ref}
		}
		return out
	}
}

// countErrors reports the code of each error present makes to onError (nil: present alone).
func countErrors(present graphql.ErrorPresenterFunc, onError func(code string)) graphql.ErrorPresenterFunc {
	if onError == nil {
		return present
	}
	return func(ctx context.Context, err error) *gqlerror.Error {
		out := present(ctx, err)
		code, _ := out.Extensions["code"].(string)
		onError(code)
		return out
	}
}

// recoverPanic turns a panic in a resolver into a coded internal error, logging the value and
// the stack under the reference the client sees.
func recoverPanic(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, v any) error {
		ref := runner.NewErrorRef()
		log.ErrorContext(ctx, "graphql: panic in resolver", "ref", ref, "panic", fmt.Sprint(v),
			"path", graphql.GetPath(ctx).String(), "stack", string(debug.Stack()))
		return &gqlerror.Error{Message: runner.InternalMessage(ref), Extensions: map[string]any{"code": CodeInternal, "ref": ref}}
	}
}

// isEnumCoercion reports whether err is a generated enum type refusing a value ("x is not a
// valid AmbiguousResolution").
func isEnumCoercion(err error) bool {
	msg := err.Error()
	i := strings.Index(msg, " is not a valid ")
	return i > 0 && !strings.ContainsAny(msg[i+len(" is not a valid "):], " \n")
}
