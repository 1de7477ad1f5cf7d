package runner

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
)

// DownstreamService reads and changes the limits on calls to outside systems, which hold
// cluster-wide (Item.Downstream, JobInfo.Downstreams). Get it with Runner.Downstreams.
type DownstreamService struct{ r *Runner }

// Downstreams returns the downstream service.
func (r *Runner) Downstreams() *DownstreamService { return &DownstreamService{r} }

// List returns every downstream the cluster knows, by name, with its limits and its calls
// over the last minute.
func (s *DownstreamService) List(ctx context.Context) ([]bt.DownstreamState, error) {
	return nil, &bt.Error{Code: bt.CodeNotFound, Message: "downstreams: not built yet"}
}

// Get returns one downstream. NOT_FOUND: the cluster knows no downstream of that name.
func (s *DownstreamService) Get(ctx context.Context, name string) (*bt.DownstreamState, error) {
	return nil, &bt.Error{Code: bt.CodeNotFound, Message: "downstreams: not built yet"}
}

// Update changes a downstream's limits for the whole cluster: every instance applies the
// change within a second. The change is audited. INVALID_INPUT (with Field): a value out of
// range, zero or negative; NOT_FOUND: no downstream of that name. A refused update changes
// nothing.
func (s *DownstreamService) Update(ctx context.Context, actor string, u bt.DownstreamUpdate) (*bt.DownstreamState, error) {
	return nil, &bt.Error{Code: bt.CodeNotFound, Message: "downstreams: not built yet"}
}
