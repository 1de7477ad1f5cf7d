package graph

import (
	"context"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/baton-run/baton/live"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Sharded runs (docs/adr/0019-sharded-runs.md): a run's shards are run records of their own,
// read in one statement for a whole page of runs (the shardsOfRun loader), or, in the events of
// runProgress, taken from the stream that carries them (streamShards).

// shardsOf returns a sharded run's shards in plan order: those the subscription event being
// written carries, else the page's batched read. A run that is not sharded has none.
func (r *Resolver) shardsOf(ctx context.Context, run *bt.RunRecord) ([]*bt.RunRecord, error) {
	if run.ShardTotal == 0 || run.Shard != nil {
		return []*bt.RunRecord{}, nil
	}
	if shards, ok := streamShardsFrom(ctx).get(run); ok {
		return shards, nil
	}
	shards, err := r.loaders(ctx).shardsOfRun.Load(ctx, run.ID)
	if shards == nil && err == nil {
		shards = []*bt.RunRecord{}
	}
	return shards, err
}

// shardOf is the shard a RunShard's record is (the zero ShardOf for a record that is none,
// which the schema never hands a RunShard).
func shardOf(rec *bt.RunRecord) bt.ShardOf {
	if rec.Shard == nil {
		return bt.ShardOf{}
	}
	return *rec.Shard
}

// shardedPercent is a sharded run's progress from its shards (see RunProgress.percent in the
// schema): the processed share of their items when every shard's total is known, else the
// mean of their own percentages. A summed total alone would overstate progress while some
// shards have not said theirs yet. -1 without shards.
func shardedPercent(shards []*bt.RunRecord) float64 {
	if len(shards) == 0 {
		return -1
	}
	var done, total float64
	allKnown := true
	for _, s := range shards {
		if s.Total == nil || *s.Total <= 0 {
			allKnown = false
			break
		}
		t := float64(*s.Total)
		total += t
		if s.Status == bt.StatusSucceeded {
			done += t
		} else {
			done += min(float64(s.Processed), t)
		}
	}
	if allKnown {
		return done / total * 100
	}
	var sum float64
	for _, s := range shards {
		if p := s.Percent(); p > 0 {
			sum += p
		}
	}
	return sum / float64(len(shards))
}

// allTotalsKnown reports whether every shard has said how many items it has.
func allTotalsKnown(shards []*bt.RunRecord) bool {
	for _, s := range shards {
		if s.Total == nil {
			return false
		}
	}
	return len(shards) > 0
}

// streamShards holds the shards of the states a runProgress subscription has handed gqlgen and
// not yet seen written out, keyed by each state's run record (which the stream makes anew for
// every state of a sharded run), so that Run.shards and the summed percent of an event read
// the stream's state, not the database. One per subscription operation (trackStreams).
type streamShards struct {
	mu sync.Mutex
	m  map[*bt.RunRecord][]*bt.RunRecord
}

type streamShardsKey struct{}

// trackStreams gives each subscription operation its streamShards, unless it has one. Its
// events are written out one after the other under a context that carries the operation's,
// so the resolvers of an event find what its stream put there.
func trackStreams(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if graphql.HasOperationContext(ctx) && graphql.GetOperationContext(ctx).Operation != nil &&
		graphql.GetOperationContext(ctx).Operation.Operation == ast.Subscription && streamShardsFrom(ctx) == nil {
		ctx = withStreamShards(ctx)
	}
	return next(ctx)
}

// withStreamShards returns ctx with a streamShards of its own. A shared execution sets it in
// the context it takes its events under (executionContext), which is not the one gqlgen hands
// the operation's middleware.
func withStreamShards(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamShardsKey{}, &streamShards{m: map[*bt.RunRecord][]*bt.RunRecord{}})
}

// streamShardsFrom returns the operation's streamShards, nil outside a subscription.
func streamShardsFrom(ctx context.Context) *streamShards {
	s, _ := ctx.Value(streamShardsKey{}).(*streamShards)
	return s
}

func (s *streamShards) put(run *bt.RunRecord, shards []*bt.RunRecord) {
	if s == nil || shards == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[run] = shards
}

func (s *streamShards) drop(run *bt.RunRecord) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, run)
}

func (s *streamShards) get(run *bt.RunRecord) ([]*bt.RunRecord, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	shards, ok := s.m[run]
	return shards, ok
}

// runProgress streams the states of run id until its final one, each state's shards held for
// its event's resolvers. gqlgen writes an event out before it takes the next, so once the next
// is taken the one before is done with.
func (r *Resolver) runProgress(ctx context.Context, id int64) (<-chan *bt.RunRecord, error) {
	states, err := r.live.RunProgress(ctx, id)
	if err != nil {
		return nil, err
	}
	return forwardStates(ctx, states, streamShardsFrom(ctx)), nil
}

// forwardStates hands the run records of states to gqlgen one by one, each with its shards
// held in held until gqlgen takes the next. The channel is unbuffered: a send into a buffer
// would complete while gqlgen is still resolving the event before, and dropping that event's
// shards then sends its Run.shards to the database, newer than the run's summed counters.
func forwardStates(ctx context.Context, states <-chan *live.RunState, held *streamShards) <-chan *bt.RunRecord {
	out := make(chan *bt.RunRecord)
	go func() {
		defer close(out)
		var prev *bt.RunRecord
		for st := range states {
			held.put(st.Run, st.Shards)
			select {
			case out <- st.Run:
			case <-ctx.Done():
				return
			}
			if prev != nil && prev != st.Run {
				held.drop(prev)
			}
			prev = st.Run
		}
	}()
	return out
}

// dbClock estimates the database clock from this process's, for ages the API shows (a
// shard's lease age): the offset between the two is read at most once per dbClockTTL, so that
// a subscription event costs no read of its own.
type dbClock struct {
	mu     sync.Mutex
	offset time.Duration
	at     time.Time // when offset was read; zero: never
}

const dbClockTTL = 30 * time.Second

// dbNow returns the database clock's time now, as estimated by dbClock.
func (r *Resolver) dbNow(ctx context.Context) (time.Time, error) {
	c := &r.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || time.Since(c.at) > dbClockTTL {
		before := time.Now()
		db, err := r.runner.Jobs().Now(ctx)
		if err != nil {
			return time.Time{}, err
		}
		after := time.Now()
		mid := before.Add(after.Sub(before) / 2)
		c.offset, c.at = db.Sub(mid), after
	}
	return time.Now().Add(c.offset), nil
}
