package graph

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Live reconcile requests: the runner's ReconcileSink (live.EventPublisher) publishes each
// change of a request, and the reconcileRequest subscription follows one request as
// runProgress follows a run.

// typeReconcileRequest is the global id type of reconcile requests.
const typeReconcileRequest = "ReconcileRequest"

// reconcileProgress streams the states of reconcile request id until its final one: snapshot
// first, then events (re-reading the database on Resync and after a quiet spell), latest wins.
func (r *Resolver) reconcileProgress(ctx context.Context, id int64) (<-chan *bt.ReconcileRequest, error) {
	return r.live.ReconcileProgress(ctx, id, func(ctx context.Context) (*bt.ReconcileRequest, error) {
		return r.runner.Ledger().ReconcileRequest(ctx, id)
	})
}
