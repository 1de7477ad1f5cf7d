package graph

import (
	"context"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// Caller is the authenticated caller of an operation. The transport that authenticated the
// request puts it in the context with WithCaller; resolvers and @hasRole read it from there.
type Caller struct {
	// TokenID is the api_tokens id of the caller's token.
	TokenID int64
	// Name is the token's name, recorded in runs and the audit log.
	Name string
	// Role bounds what the caller may do.
	Role model.Role
	// WebSocket is set for operations arriving over a WebSocket connection: subscriptions
	// are served there only.
	WebSocket bool
}

type callerKey struct{}

// WithCaller returns ctx carrying c as the operation's caller.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller, or nil when the request carried no valid token.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// identity returns the caller as the runner tells identities apart (four-eyes on replay and
// RESTART requests): the token's name and its api_tokens id.
func identity(ctx context.Context) runner.Actor {
	if c := CallerFrom(ctx); c != nil {
		return runner.Actor{Name: c.Name, TokenID: c.TokenID}
	}
	return runner.Actor{Name: actor(ctx)}
}
