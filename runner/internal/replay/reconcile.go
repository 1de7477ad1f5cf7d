package replay

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Reconciles run off the request path. Request (the API) checks the request and records it
// PENDING; a worker of any instance with the job registered claims it from the database (FOR
// UPDATE SKIP LOCKED: once cluster-wide), takes one of its pool slots, and calls the job's hook
// under the request's lease, bounded by a timeout. The outcome is written fenced on that lease
// and published.

// Reconciler is an optional interface a Job implements to ask the outside system whether an
// AMBIGUOUS_EFFECT target's effect happened.
type Reconciler interface {
	Reconcile(ctx context.Context, target, step, idempotencyKey string) (Reconciliation, error)
}

// Reconciliation is what the outside system said about one idempotency key. Applied resolves
// the target CONFIRMED with EffectRef (the outside system's id for the effect, as
// Attempt.SetEffectRef records it on a normal call) and EvidenceRef; not applied resolves it
// NOT_APPLIED, safe to retry with the same key.
type Reconciliation struct {
	Applied     bool
	EffectRef   string
	EvidenceRef string
}

// storeTimeout bounds each database call of a reconcile worker.
const storeTimeout = 10 * time.Second

// attempts is how many times a request is claimed before a holder that keeps dying (a hook
// that crashes its process, say) fails it for good.
const attempts = 3

// ReconcileStore is what reconciles read and write.
type ReconcileStore interface {
	LedgerEntry(ctx context.Context, id int64) (*bt.LedgerEntry, error)
	InsertReconcile(ctx context.Context, entryID int64, requestedBy string, audit store.AuditRecord) (*bt.ReconcileRequest, error)
	InsertReconcileMany(ctx context.Context, entryIDs []int64, requestedBy string, audit store.BulkAuditFunc) ([]*bt.ReconcileRequest, map[int64]error, error)
	ReconcileRequest(ctx context.Context, id int64) (*bt.ReconcileRequest, error)
	RecoverReconciles(ctx context.Context, maxAttempts int) ([]*bt.ReconcileRequest, error)
	PendingReconciles(ctx context.Context, jobs []string) (int, error)
	ClaimReconcile(ctx context.Context, jobs []store.ReconcileLease, instance, token string) (*bt.ReconcileRequest, time.Duration, error)
	FinishReconcile(ctx context.Context, fence store.ReconcileFence, out store.ReconcileOutcome, audit store.AuditRecord) (*bt.ReconcileRequest, error)
}

// Slots is the instance's worker pool as reconciles use it.
type Slots interface {
	// Take takes a free slot for a reconcile and counts it as work Shutdown waits for. It
	// reports false when every slot is busy or the instance is shutting down.
	Take() bool
	// Free gives the slot back.
	Free()
	// Done counts the work as ended.
	Done()
}

// ReconcileConfig wires Reconciles.
type ReconcileConfig struct {
	Store        ReconcileStore
	Logger       *slog.Logger
	Instance     string
	PollInterval time.Duration
	// Timeout bounds one call of a hook; three quarters of the request's lease bound it too.
	Timeout time.Duration
	// JobFunc returns a job registered on this instance.
	JobFunc func(name string) (Job, bool)
	// LeasesFunc lists the jobs registered here with a reconcile hook, and each one's lease.
	LeasesFunc func() []store.ReconcileLease
	Slots      Slots
	// TokenFunc returns a new lease token.
	TokenFunc func() string
	AuditFunc func(ctx context.Context, actor, action, target string, args map[string]any, err error)
	// PublishFunc, if set, receives every change of a request: recorded, claimed, retried,
	// ended.
	PublishFunc func(q bt.ReconcileRequest)
	MaskFunc    func(ref string) string
}

// Reconciles records reconcile requests and runs the worker that does them.
type Reconciles struct {
	cfg  ReconcileConfig
	wake chan struct{}
}

// NewReconciles returns Reconciles; Serve runs its worker.
func NewReconciles(cfg ReconcileConfig) *Reconciles {
	return &Reconciles{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Request asks for a reconcile of an AMBIGUOUS_EFFECT entry and returns the request at once,
// PENDING: the job's reconcile hook runs on a worker, and the outcome (DONE with the entry
// CONFIRMED or NOT_APPLIED, or FAILED with the entry left AMBIGUOUS_EFFECT) is published and
// read with Get. Refusals, each audited: NOT_FOUND (no such entry), INVALID_INPUT (the job has
// no reconcile hook), CONFLICT (the entry is not AMBIGUOUS_EFFECT), ALREADY_RUNNING (a
// reconcile of the entry is already open).
func (c *Reconciles) Request(ctx context.Context, entryID int64, actor string) (*bt.ReconcileRequest, error) {
	target := fmt.Sprintf("ledger:%d", entryID)
	args := map[string]any{"entryId": entryID}
	req, err := c.record(ctx, entryID, actor, args, target)
	if err != nil {
		c.cfg.AuditFunc(ctx, actor, "reconcile", target, args, err)
		return nil, err
	}
	c.publish(req)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return req, nil
}

func (c *Reconciles) record(ctx context.Context, entryID int64, actor string, args map[string]any, target string) (*bt.ReconcileRequest, error) {
	e, err := c.cfg.Store.LedgerEntry(ctx, entryID)
	if err != nil {
		return nil, err
	}
	entryArgs(args, e)
	if job, ok := c.cfg.JobFunc(e.JobName); !ok || job.Hook == nil {
		return nil, bt.Errorf(bt.CodeInvalidInput, "job %s has no reconcile hook: resolve the entry by hand", e.JobName)
	}
	if e.State != bt.LedgerAmbiguous {
		return nil, bt.Errorf(bt.CodeConflict, "ledger entry %d is %s, not AMBIGUOUS_EFFECT", entryID, e.State)
	}
	return c.cfg.Store.InsertReconcile(ctx, entryID, NameOr(actor),
		store.AuditRecord{Actor: NameOr(actor), Action: "reconcile", Target: target, Arguments: args, Outcome: string(bt.ReconcilePending)})
}

// RequestMany is Request for many entries at once, audited as one row (action
// "reconcileMany") that lists every member and what became of it. Each entry that can be
// reconciled gets its PENDING request; each that cannot (NOT_FOUND, INVALID_INPUT, CONFLICT,
// ALREADY_RUNNING) is reported in failed and left as it was.
func (c *Reconciles) RequestMany(ctx context.Context, entryIDs []int64, actor string) ([]*bt.ReconcileRequest, map[int64]error, error) {
	args := map[string]any{"entryIds": entryIDs}
	if err := checkMembers(entryIDs); err != nil {
		c.cfg.AuditFunc(ctx, actor, "reconcileMany", "", args, err)
		return nil, nil, err
	}
	failed := map[int64]error{}
	var ok []int64
	members := make([]map[string]any, len(entryIDs))
	args["members"] = members
	for i, id := range entryIDs {
		members[i] = map[string]any{"entryId": id}
		e, err := c.cfg.Store.LedgerEntry(ctx, id)
		switch {
		case bt.CodeOf(err) != "":
			failed[id] = err
		case err != nil:
			return nil, nil, err
		default:
			entryArgs(members[i], e)
			if job, has := c.cfg.JobFunc(e.JobName); !has || job.Hook == nil {
				failed[id] = bt.Errorf(bt.CodeInvalidInput, "job %s has no reconcile hook: resolve the entry by hand", e.JobName)
			} else {
				ok = append(ok, id)
			}
		}
	}
	reqs, refused, err := c.cfg.Store.InsertReconcileMany(ctx, ok, NameOr(actor), func(done []int64, refused map[int64]error) store.AuditRecord {
		all := maps.Clone(failed)
		maps.Copy(all, refused)
		return bulkAudit(actor, "reconcileMany", args, done, all, string(bt.ReconcilePending))
	})
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(failed, refused)
	for _, q := range reqs {
		c.publish(q)
	}
	if len(reqs) > 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return reqs, failed, nil
}

// Get returns one reconcile request, or NOT_FOUND.
func (c *Reconciles) Get(ctx context.Context, id int64) (*bt.ReconcileRequest, error) {
	return c.cfg.Store.ReconcileRequest(ctx, id)
}

// Await waits until reconcile request id has ended (DONE or FAILED) or ctx ends, reading it
// from the database, and returns it as it last read it.
func (c *Reconciles) Await(ctx context.Context, id int64) (*bt.ReconcileRequest, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		q, err := c.cfg.Store.ReconcileRequest(ctx, id)
		if err != nil || !q.Status.Open() {
			return q, err
		}
		select {
		case <-ctx.Done():
			return q, fmt.Errorf("wait for reconcile request %d: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

// Serve recovers expired reconcile leases and claims pending requests every PollInterval, and
// at once when this instance records a request, until ctx ends.
func (c *Reconciles) Serve(ctx context.Context) {
	for {
		c.pass(ctx)
		t := time.NewTimer(c.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// pass is one poll: expired leases first (so their requests can be claimed now), then a claim
// per free slot while requests are pending. A request that finds every slot busy stays PENDING
// for the next poll of any instance: a slot is never waited for.
func (c *Reconciles) pass(ctx context.Context) {
	recovered, err := c.cfg.Store.RecoverReconciles(ctx, attempts)
	if err != nil && ctx.Err() == nil {
		c.cfg.Logger.Error("recover reconcile leases", "err", err)
	}
	for _, q := range recovered {
		c.cfg.Logger.Warn("reconcile lease expired", "request", q.ID, "entry", q.EntryID, "status", q.Status)
		c.publish(q)
	}
	leases := c.cfg.LeasesFunc()
	if len(leases) == 0 {
		return
	}
	names := make([]string, len(leases))
	for i, l := range leases {
		names[i] = l.Job
	}
	pending, err := c.cfg.Store.PendingReconciles(ctx, names)
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logger.Error("read pending reconciles", "err", err)
		}
		return
	}
	for ; pending > 0 && ctx.Err() == nil; pending-- {
		if !c.claim(ctx, leases) {
			return
		}
	}
}

// claim takes a free slot and claims a request for it, handing both to a worker goroutine. It
// reports whether to try another claim.
func (c *Reconciles) claim(ctx context.Context, leases []store.ReconcileLease) bool {
	if !c.cfg.Slots.Take() {
		return false // every slot busy: the next poll tries again
	}
	token := c.cfg.TokenFunc()
	sent := time.Now() // a local duration's start, so the real clock and not NowFunc
	q, remaining, err := c.cfg.Store.ClaimReconcile(ctx, leases, c.cfg.Instance, token)
	if err != nil || q == nil {
		c.cfg.Slots.Free()
		c.cfg.Slots.Done()
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Error("claim a reconcile request", "err", err)
		}
		return false
	}
	w := &reconcileWork{c: c, q: q, fence: store.ReconcileFence{ID: q.ID, Token: token}, leaseEnd: sent.Add(remaining),
		log: c.cfg.Logger.With("reconcile", q.ID, "entry", q.EntryID, "job", q.JobName)}
	go w.run()
	return true
}

// publish sends a request's state to PublishFunc, if set.
func (c *Reconciles) publish(q *bt.ReconcileRequest) {
	if c.cfg.PublishFunc != nil && q != nil {
		c.cfg.PublishFunc(*q)
	}
}
