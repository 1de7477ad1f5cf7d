package runner

import (
	"context"

	"github.com/baton-run/baton/runner/internal/connretry"
)

// onConnect is connretry.OnConnect.
func onConnect[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	return connretry.OnConnect(ctx, fn)
}
