package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/connretry"
	"github.com/baton-run/baton/runner/internal/pipeline"
	"github.com/baton-run/baton/runner/store"
)

// Sharded runs (docs/adr/0019-sharded-runs.md). A job that declares Sharding has each run split
// into shards, and every instance of the cluster with a free worker slot works one: the run is
// what operators start, cancel, pause, replay and watch; each shard is leased and fenced on
// its own, keeps its own checkpoint and counters, and is resumed elsewhere from that checkpoint
// when its holder dies.
//
// A run starts as any run does, on one slot, where its shards are planned (Sharding.Count or
// PlanFunc); that slot is then free to claim a shard like any other. The generation keeps its
// plan, so a RESUME, an AUTO_RESUME or a REPLAY of the generation has the same shards, each
// from its own checkpoint.

// Sharding splits each run of a job into shards that every instance works at once.
type Sharding struct {
	// Count is a fixed number of shards, keyed "0" to "Count-1" with no Spec. Used when
	// PlanFunc is nil; 1 to MaxShards.
	Count int
	// PlanFunc computes the shards when a run opens its generation's plan (the first run of
	// a generation: a RESTART, a scheduled fire, the job's first run): key ranges, the pages
	// of a source. Later runs of the generation keep that plan. It runs on a worker slot,
	// like the job, under the run's lease; an error or a panic fails the run.
	PlanFunc func(ctx context.Context, p ShardPlan) ([]Shard, error)
	// MaxConcurrent caps how many shards of one run the cluster works at once; 0 means as
	// many as there are free slots. Like the cron it is used the first time the job is seen;
	// afterwards operators change it at runtime (JobService.SetMaxConcurrentShards).
	MaxConcurrent int
}

// Shard is one shard of a plan: a key unique within the run (1 to MaxShardKeyLen characters),
// which names its checkpoint stream, and what it covers, for the job (at most MaxShardSpecLen
// characters).
type Shard struct {
	Key  string
	Spec string
}

// ShardPlan is what a PlanFunc knows of the run it plans.
type ShardPlan struct {
	JobName             string
	Generation          int64
	GenerationStartedAt time.Time
	Trigger             Trigger
	Logger              *slog.Logger
}

// ShardInfo is the shard a run's handle works (Run.Shard).
type ShardInfo struct {
	RunID int64  // the sharded run
	Key   string // the shard's key
	Spec  string // what it covers
	Index int    // its place in the plan, from 0
	Count int    // the plan's number of shards
}

// The bounds of a plan.
const (
	MaxShards       = 4096
	MaxShardKeyLen  = 200
	MaxShardSpecLen = 4000
)

// Shard returns the shard this handle works, and false for a run that is not a shard. A
// sharded job's Run is called once per shard: it works the shard's part of the job, from
// Checkpoint, which is the shard's own.
func (run *Run) Shard() (ShardInfo, bool) {
	if run.shard == nil {
		return ShardInfo{}, false
	}
	return *run.shard, true
}

// validateSharding refuses a declaration that cannot make a plan.
func validateSharding(s *Sharding) error {
	if s == nil {
		return nil
	}
	if s.PlanFunc == nil && (s.Count < 1 || s.Count > MaxShards) {
		return bt.Errorf(bt.CodeInvalidInput, "sharding needs a PlanFunc or a Count from 1 to %d, not %d", MaxShards, s.Count)
	}
	if s.MaxConcurrent < 0 || s.MaxConcurrent > 10000 {
		return bt.Errorf(bt.CodeInvalidInput, "sharding's MaxConcurrent must be 0 to 10000, not %d", s.MaxConcurrent)
	}
	return nil
}

// plannedShards turns a job's plan into the store's, refusing a plan out of bounds.
func plannedShards(shards []Shard) ([]store.PlannedShard, error) {
	if len(shards) == 0 || len(shards) > MaxShards {
		return nil, bt.Errorf(bt.CodeInvalidInput, "a shard plan has 1 to %d shards, not %d", MaxShards, len(shards))
	}
	seen := make(map[string]bool, len(shards))
	out := make([]store.PlannedShard, len(shards))
	for i, s := range shards {
		if n := utf8.RuneCountInString(s.Key); n == 0 || n > MaxShardKeyLen || !utf8.ValidString(s.Key) {
			return nil, bt.Errorf(bt.CodeInvalidInput, "shard %d: a key is 1 to %d characters of valid UTF-8", i, MaxShardKeyLen)
		}
		if utf8.RuneCountInString(s.Spec) > MaxShardSpecLen || !utf8.ValidString(s.Spec) {
			return nil, bt.Errorf(bt.CodeInvalidInput, "shard %q: a spec is at most %d characters of valid UTF-8", s.Key, MaxShardSpecLen)
		}
		if seen[s.Key] {
			return nil, bt.Errorf(bt.CodeInvalidInput, "shard key %q appears twice in the plan", s.Key)
		}
		seen[s.Key] = true
		out[i] = store.PlannedShard{Key: s.Key, Index: i, Spec: s.Spec}
	}
	return out, nil
}

// plan is the body of a sharded run's own slot: it reads the generation's plan, or makes it,
// and hands the run to its shards. It returns pipeline.ErrHandedToShards once they have it.
func (w *shardWork) plan(ctx context.Context, run *Run, s *Sharding) error {
	r := w.r
	if err := run.Check(ctx); err != nil {
		return err
	}
	plan, err := r.store.ShardPlan(ctx, run.JobName(), run.Generation())
	if err != nil {
		return err
	}
	if len(plan) == 0 {
		shards := make([]Shard, s.Count)
		for i := range shards {
			shards[i] = Shard{Key: strconv.Itoa(i)}
		}
		if s.PlanFunc != nil {
			if shards, err = s.PlanFunc(ctx, ShardPlan{JobName: run.JobName(), Generation: run.Generation(),
				GenerationStartedAt: run.GenerationStartedAt(), Trigger: run.Trigger(), Logger: run.Logger()}); err != nil {
				return fmt.Errorf("plan the shards: %w", err)
			}
		}
		if plan, err = plannedShards(shards); err != nil {
			return err
		}
	}
	// A commit whose reply was lost (the connection broke) may have landed: PlanShards is made
	// again, and finds the run handed to its shards already. For half the lease: the run's
	// end, if it comes to that, is recorded under the lease (and hands the run to its shards
	// all the same).
	lease := time.Duration(run.Snapshot().LeaseSeconds) * time.Second / 2
	if err := run.e.Fenced(ctx, func(ctx context.Context, f store.Fence) (store.LeaseState, bt.StopReason, error) {
		ctx, cancel := context.WithTimeout(ctx, lease)
		defer cancel()
		res, err := connretry.OnUnavailable(ctx, func() (planReply, error) {
			ls, pause, err := r.store.PlanShards(ctx, f, plan)
			if err == nil && w.loseReply() {
				err = fmt.Errorf("commit the shards of run %d: %w", f.RunID, io.ErrUnexpectedEOF) // a test's lost reply
			}
			return planReply{ls, pause}, err
		})
		return res.ls, res.pause, err
	}); err != nil {
		return err
	}
	run.Logger().Info("shards planned", "shards", len(plan))
	w.announce(ctx)
	return pipeline.ErrHandedToShards
}

// Shards returns the shards of a sharded run in plan order (none for a run that is not
// sharded, or not planned yet): each with its status, holder instance, counters, checkpoint
// and lease.
func (s *RunService) Shards(ctx context.Context, runID int64) ([]*RunRecord, error) {
	m, err := s.r.store.ShardsOfRuns(ctx, []int64{runID})
	return m[runID], err
}

// ShardsOfRuns returns the shards of each of the runs (Shards for many runs in one statement),
// keyed by run id; a run without shards is absent.
func (s *RunService) ShardsOfRuns(ctx context.Context, runIDs []int64) (map[int64][]*RunRecord, error) {
	return s.r.store.ShardsOfRuns(ctx, runIDs)
}

// SetMaxConcurrentShards changes how many shards of one of the job's runs the cluster works at
// once (0: as many as there are free slots), audited as updateJobSharding. It applies to the
// next claim of a shard; shards already held run on. A value out of 0..10000 is INVALID_INPUT
// and nothing changes.
func (s *JobService) SetMaxConcurrentShards(ctx context.Context, job string, n int, actor string) (j *bt.JobSettings, err error) {
	r := s.r
	defer func() {
		r.audit(ctx, actor, "updateJobSharding", "job:"+job, map[string]any{"maxConcurrentShards": n}, err)
	}()
	if n < 0 || n > 10000 {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Field: "maxConcurrentShards",
			Message: fmt.Sprintf("the cap on concurrent shards must be 0 (none) to 10000, not %d", n)}
	}
	if j, err = r.store.SetMaxConcurrentShards(ctx, job, n, actorOr(actor)); err == nil {
		r.shards.announce(ctx) // a raised cap makes room at once
	}
	return j, err
}

// channel is where instances hear that a shard may be claimed.
func (w *shardWork) channel() string { return "baton:{" + w.r.cfg.Env + "}:shards" }

// announceShards tells every instance that a shard may be waiting for a slot: planned, handed
// back, or room made under a run's cap. A lost announcement (Redis away) is made up by the
// instances' heartbeat.
func (w *shardWork) announce(ctx context.Context) {
	r := w.r
	w.wakeUp()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := r.cfg.Redis.Publish(ctx, w.channel(), "1").Err(); err != nil {
		r.log.Warn("announce pending shards failed; the other instances find them at their next heartbeat", "err", err)
	}
}

// wakeUp makes this instance's claimer look for a pending shard.
func (w *shardWork) wakeUp() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// serveShards claims pending shards while this instance has free slots, whenever it hears
// that one may wait (an announcement, a slot freed here, the heartbeat) or a shard waiting out
// its backoff is due.
func (w *shardWork) serve(ctx context.Context) {
	sub := w.r.cfg.Redis.Subscribe(ctx, w.channel()) // go-redis resubscribes by itself after an outage
	defer sub.Close()
	heard := sub.Channel()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := w.claimAll(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case <-ctx.Done():
			return
		case <-heard:
		case <-w.wake:
		case <-timer.C:
		}
	}
}

// claimShards claims shards until no slot is free or no shard waits, and returns how long
// until a pending shard not yet due is (0: none, or nothing to wait for).
func (w *shardWork) claimAll(ctx context.Context) time.Duration {
	r := w.r
	for ctx.Err() == nil {
		rec, next, err := w.claim(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				r.log.Warn("claim a shard", "err", err)
			}
			return time.Second
		case rec == nil && next != nil:
			return max(*next, 10*time.Millisecond)
		case rec == nil:
			return 0
		}
	}
	return 0
}

// claimShard claims a pending shard while a slot is free, takes the slot and hands the shard
// to a worker. The slot is taken only once the shard is claimed, so that looking for a shard
// never makes a start fail for want of a slot; a start that took the last slot meanwhile
// wins, and the shard is handed back.
func (w *shardWork) claim(ctx context.Context) (*RunRecord, *time.Duration, error) {
	r := w.r
	r.startMu.RLock()
	defer r.startMu.RUnlock()
	if r.draining.Load() || len(r.slots) == cap(r.slots) {
		return nil, nil, nil
	}
	token := newToken()
	rec, next, err := r.store.ClaimShard(ctx, store.ShardClaim{Jobs: r.reg.names(), Instance: r.cfg.Instance, Token: token})
	if err != nil || rec == nil {
		return nil, next, err
	}
	select {
	case r.slots <- struct{}{}:
	default:
		if err := r.store.ReleaseShard(ctx, store.Fence{RunID: rec.ID, Token: token}); err != nil {
			// Its lease runs out, and it is resumed as any shard whose holder died.
			r.log.Warn("hand back a shard claimed without a slot", "job", rec.JobName, "run_id", rec.Shard.RunID, "shard", rec.Shard.Key, "err", err)
		}
		w.announce(ctx)
		return nil, nil, nil
	}
	var job Job
	if err == nil && rec != nil {
		var ok bool
		if job, ok = r.Job(rec.JobName); !ok { // claimed for a job registered a moment ago and since gone: cannot be
			err = fmt.Errorf("claimed a shard of %s, which is not registered here", rec.JobName)
		}
	}
	var scope bt.ReplayScope
	var targets []string
	if err == nil && rec != nil && rec.Trigger == bt.TriggerReplay && rec.ReplayRequestID != nil {
		req, rerr := r.store.ReplayRequest(ctx, *rec.ReplayRequestID)
		if rerr != nil {
			err = fmt.Errorf("read the replay request of shard %s of run %d: %w", rec.Shard.Key, rec.Shard.RunID, rerr)
		} else {
			scope, targets = req.Scope, req.TargetKeys
		}
	}
	if err != nil {
		<-r.slots // not freeSlot: nothing ended here, so nothing to wake
		// The shard is STARTING under a lease no worker holds: it expires, and the shard is
		// resumed like any shard whose holder died.
		r.log.Error("claimed shard not started", "job", rec.JobName, "run_id", rec.Shard.RunID, "shard", rec.Shard.Key, "err", err)
		return nil, nil, err
	}
	own := *rec
	run := r.newRun(job, &own, token, scope, targets, w.span(&own))
	r.workers.Add(1)
	go r.work(run)
	r.metrics.ShardsClaimed.Inc()
	return rec, nil, nil
}

// shardEnded follows a shard's end (its holder's, or the recoverer's): its run learns of it,
// a shard handed back or room under the cap is announced, and a stop condition that tripped
// in one shard stops the whole run.
func (w *shardWork) ended(ctx context.Context, rec bt.RunRecord) {
	r := w.r
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	w.announce(ctx)
	if rec.Status == bt.StatusFailed && rec.StopReason == bt.StopCondition {
		actor := fmt.Sprintf("stop condition of shard %s", rec.Shard.Key)
		if _, err := r.Runs().requestCancel(ctx, rec.Shard.RunID, actor); err != nil && !errors.Is(err, bt.ErrNotActive) {
			r.log.Warn("stop the run of a shard whose stop condition tripped", "job", rec.JobName, "run_id", rec.Shard.RunID, "err", err)
		}
	}
	w.publishRun(ctx, rec.Shard.RunID, rec.Shard.RunEnded)
	r.spans.wakeUp() // the run's span, if this instance holds it, may end now
}

// publishRun sends a run's state as the database has it now to the event sink. ended says
// this caller ended the run, so that its final event is this caller's to send: a run that
// has ended is published by that caller only, once.
func (w *shardWork) publishRun(ctx context.Context, id int64, ended bool) {
	r := w.r
	if r.cfg.Events == nil {
		return
	}
	run, err := r.store.Run(ctx, id)
	if err != nil {
		r.log.Warn("read a run to publish it", "run_id", id, "err", err)
		return
	}
	if final := !run.Status.Open(); !final || ended {
		r.cfg.Events.RunChanged(RunEvent{Run: *run, Final: final})
	}
}

// recovered follows each run the recoverer ended or settled, and each shard it handed back.
func (w *shardWork) recovered(run bt.RunRecord) {
	r := w.r
	if r.cfg.Events != nil {
		r.cfg.Events.RunChanged(RunEvent{Run: run, Final: !run.Status.Open()})
	}
	if run.Shard != nil {
		w.ended(context.Background(), run) // the run is published as settled, by itself
	}
}

// loseReply reports whether a test asked for this committed PlanShards reply to be lost.
func (w *shardWork) loseReply() bool {
	for {
		n := w.lostReplies.Load()
		if n <= 0 {
			return false
		}
		if w.lostReplies.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// planReply is PlanShards' reply.
type planReply struct {
	ls    store.LeaseState
	pause bt.StopReason
}

// shardWork is the runner's side of sharded runs: the plan, the claimer and what follows a
// shard's end.
type shardWork struct {
	r *Runner
	// wake wakes the claimer (serve).
	wake chan struct{}
	// lostReplies, when above 0 (tests), is how many of the next committed PlanShards replies
	// are lost on their way back, as when the connection breaks just after the commit.
	lostReplies atomic.Int32
}

// noLocks stands for the job's Redis lock in a shard's run: the lock is the run's, and it is
// the database that fences each shard.
type noLocks struct{}

func (noLocks) Acquire(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}
func (noLocks) Extend(context.Context, string, string, time.Duration) (bool, error) { return true, nil }
func (noLocks) Release(context.Context, string, string) (bool, error)               { return true, nil }
