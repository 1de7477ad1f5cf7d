package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Shards are the shards of sharded runs (docs/adr/0019-sharded-runs.md). A shard is a run row
// of its own (bt.RunRecord.Shard names its run): every fenced write of a run works on it, so
// its holder fences its writes with the shard's lease token, and a shard is ended, recovered
// and resumed like a run. It learns of a cancel or a pause of its run from the run's row, on
// every fenced write (LeaseState). A run ends when its last shard does, in that shard's
// transaction.
type Shards interface {
	// ShardPlan returns the shard plan of a job's generation, in order: empty when no run of
	// the generation has planned its shards yet.
	ShardPlan(ctx context.Context, job string, gen int64) ([]PlannedShard, error)
	// PlanShards hands a sharded run to its shards, fenced on the run's lease: it records plan
	// as the generation's plan when the generation has none, and makes one PENDING shard per
	// planned shard, starting from the shard's checkpoint in the generation (a replay's from
	// the beginning; a shard the generation finished is made SUCCEEDED, but in a replay). From
	// then on the run holds no lease of its own. A run asked to stop (cancel, pause) is handed
	// to nothing: the flags come back and nothing is written. The run ends at once when none
	// of its shards is left to work. Made again for a run already handed to its shards (the
	// reply of a commit that landed was lost), it writes nothing and succeeds.
	PlanShards(ctx context.Context, f Fence, plan []PlannedShard) (LeaseState, bt.StopReason, error)
	// ClaimShard claims the first pending shard that is due, of a run of one of jobs that is
	// neither stopping nor at its job's cap on concurrent shards, for c.Instance: the shard
	// becomes STARTING under c.Token for its lease, as a run an instance started. nil when
	// there is none; then next is how long until a pending shard not yet due is (nil: none).
	ClaimShard(ctx context.Context, c ShardClaim) (run *bt.RunRecord, next *time.Duration, err error)
	// ReleaseShard hands a shard claimed under f back, PENDING as it was, before its holder
	// activated it; a shard no longer STARTING under f is left as it is.
	ReleaseShard(ctx context.Context, f Fence) error
	// ShardsOfRuns returns the shards of each of the runs, in plan order.
	ShardsOfRuns(ctx context.Context, runIDs []int64) (map[int64][]*bt.RunRecord, error)
}

// PlannedShard is one shard of a generation's plan: its key, index and spec, and the
// generation's checkpoint of it.
type PlannedShard struct {
	Key   string
	Index int
	Spec  string
	// Checkpoint is the shard's last committed checkpoint in the generation; Done says the
	// shard finished in the generation. Both are read, never written, through PlanShards.
	Checkpoint string
	Done       bool
}

// ShardClaim is an instance's claim of a pending shard.
type ShardClaim struct {
	Jobs     []string // the jobs this instance runs
	Instance string
	Token    string // the shard's new lease token
}
