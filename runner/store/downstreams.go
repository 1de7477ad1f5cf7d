package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Downstreams keeps the limits on calls to outside systems and the instances alive to share
// them (docs/adr/0018-downstream-limits.md).
type Downstreams interface {
	// DeclareDownstreams records each downstream not known yet, its limits the code's
	// defaults; a downstream known already keeps its limits and defaults.
	DeclareDownstreams(ctx context.Context, ds []bt.Downstream) error
	// Downstreams returns every downstream, by name, without stats.
	Downstreams(ctx context.Context) ([]bt.DownstreamState, error)
	// UpdateDownstream sets a downstream's limits to what change makes of the current ones,
	// in one transaction under the row's lock, and raises its version. change returns an
	// error (a bt.Error) to refuse, and nothing changes. bt.ErrNotFound: no such downstream.
	UpdateDownstream(ctx context.Context, name, actor string, change func(*bt.DownstreamLimits) error) (*bt.DownstreamState, error)
	// BeatInstance records that instance is alive, and whether (since when) it limits calls
	// on its local share; it returns how many instances have beaten within alive, itself
	// included, those among them on their local share, and a mark of the downstreams' limits
	// that changes whenever any of them does (so one statement tells whether to read them),
	// and whether a shard of one of jobs waits for a slot.
	BeatInstance(ctx context.Context, instance string, degradedSince *time.Time, alive time.Duration, jobs []string) (Beat, error)
	// LeaveInstance removes instance from the live ones (at shutdown).
	LeaveInstance(ctx context.Context, instance string) error
}

// Beat is what an instance's heartbeat learns of the cluster.
type Beat struct {
	Live     int      // instances alive, the beating one included
	Degraded []string // those limiting on their local share
	Limits   int64    // changes whenever any downstream's limits do
	// ShardsPending says a shard of one of the instance's jobs waits for a slot now, for an
	// instance whose announcement of it was lost (Redis away).
	ShardsPending bool
}
