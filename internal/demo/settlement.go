package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// SettlementConfig configures demo-settlement. Its latency and faults are the provider's
// (ProviderConfig).
type SettlementConfig struct {
	// Accounts to pay; 0 means 300.
	Accounts int
	// Cron is demo-settlement's default schedule; "" means manual only.
	Cron string
	// Shards is how many ranges of accounts demo-settlement-sharded splits each run into; 0
	// means 12, at most runner.MaxShards and one per account.
	Shards int
	// Batch, above 1, pays that many accounts per ProcessBatch (one intent commit and one
	// result commit per batch, calls 8 at a time); 0 or 1 pays them one by one with Process.
	Batch int
	// Downstream is the default limit of the job's calls to the provider (ProviderDownstream),
	// cluster-wide; nil means 50 calls/s with a burst of 10 and 16 in flight, a pointer to the
	// zero value declares the downstream with no limit. Operators change it at runtime.
	Downstream *runner.DownstreamLimits
	// StopConditions are the job's; nil means the runner's defaults (stop when more than 5%
	// of payment calls fail downstream over a minute) judged over at least 100 calls, an
	// empty slice disables them.
	StopConditions []runner.StopCondition

	// failTx, set only by tests, makes the job's own write (Attempt.Tx) for a paid account fail
	// when it returns true for the account: the payment is made, then its result commit is
	// refused, as a failing write of a real job's would be.
	failTx func(account string) bool
	// failItem, set only by tests, makes the job (paying one by one) record an account it
	// reaches as failed by its own judgement when it returns true — Run.Fail with a TRANSIENT
	// cause, nothing paid — as a job does that finds an account it cannot pay for now.
	failItem func(account string) bool
}

// ProviderDownstream is the downstream demo-settlement's payments go to.
const ProviderDownstream = "provider"

// defaultProviderLimits are demo-settlement's default limits on its calls to the provider: a
// payment provider's usual published limit, and as many calls in flight as two runs of the
// job make at their batch parallelism.
var defaultProviderLimits = runner.DownstreamLimits{RatePerSecond: 50, Burst: 10, Concurrency: 16}

func (c SettlementConfig) withDefaults() SettlementConfig {
	if c.Accounts <= 0 {
		c.Accounts = 300
	}
	if c.Shards <= 0 {
		c.Shards = 12
	}
	c.Shards = min(c.Shards, c.Accounts, runner.MaxShards)
	if c.Downstream == nil {
		d := defaultProviderLimits
		c.Downstream = &d
	}
	if c.StopConditions == nil {
		// Over the runner's default 20 calls, two unlucky faults in a row read as 10%: at the
		// provider's default rates a third of the runs would stop themselves early.
		for _, sc := range runner.DefaultStopConditions() {
			sc.MinCalls = max(sc.MinCalls, 100)
			c.StopConditions = append(c.StopConditions, sc)
		}
	}
	return c
}

// settlementStep is the one step of demo-settlement.
const settlementStep = "pay"

// settlementJob is demo-settlement, a HIGH-risk job: it pays every account once through the
// provider (PaymentAPI), one external item per account on the downstream ProviderDownstream,
// passing the runner's idempotency key on every call. A timeout after the payment was made is left unclassified, so the runner quarantines
// the account as AMBIGUOUS_EFFECT until Reconcile (or an operator) settles it.
//
// demo-settlement-sharded is the same job over the same provider, its accounts split into
// cfg.Shards ranges (Sharding.Count): shard i pays its range of accounts, from its own
// checkpoint. Its idempotency keys are the runner's, per (job, generation, target, step), as
// any job's: sharding changes none.
type settlementJob struct {
	provider PaymentAPI
	cfg      SettlementConfig
	sharded  bool
}

var _ runner.Reconciler = (*settlementJob)(nil)

func newSettlementJob(p PaymentAPI, cfg SettlementConfig) *settlementJob {
	return &settlementJob{provider: p, cfg: cfg.withDefaults()}
}

func newShardedSettlementJob(p PaymentAPI, cfg SettlementConfig) *settlementJob {
	cfg.Cron = "" // demo-settlement's schedule; this one is started by hand
	return &settlementJob{provider: p, cfg: cfg.withDefaults(), sharded: true}
}

func (j *settlementJob) Info() runner.JobInfo {
	info := runner.JobInfo{
		Name:           SettlementJobName,
		Description:    fmt.Sprintf("Pays %d accounts through the fake payment provider, once each, with idempotency keys.", j.cfg.Accounts),
		Cron:           j.cfg.Cron,
		Risk:           bt.RiskHigh,
		Version:        "1",
		StopConditions: j.cfg.StopConditions,
		Downstreams:    []runner.Downstream{{Name: ProviderDownstream, Defaults: *j.cfg.Downstream}},
	}
	if j.sharded {
		info.Name = ShardedSettlementJobName
		info.Description = fmt.Sprintf("Pays %d accounts through the fake payment provider, once each, with idempotency keys, in %d shards of account ranges worked by every instance at once.",
			j.cfg.Accounts, j.cfg.Shards)
		info.Shards = &runner.Sharding{Count: j.cfg.Shards}
	}
	return info
}

// accounts returns the accounts run pays: all of them, or its shard's range (shard i of n
// pays accounts i×A/n+1 to (i+1)×A/n).
func (j *settlementJob) accounts(run *runner.Run) (first, last int) {
	shard, ok := run.Shard()
	if !ok || shard.Count <= 0 {
		return 1, j.cfg.Accounts
	}
	return shard.Index*j.cfg.Accounts/shard.Count + 1, (shard.Index + 1) * j.cfg.Accounts / shard.Count
}

// SettlementInput is what one account's payment is made of; it is the item's input.
type SettlementInput struct {
	Account string `json:"account"` // the target, "acct:NNNN"
	Amount  int64  `json:"amount"`  // in cents
}

// settlementAmount is account n's amount in cents: fixed per account, so a replay pays the
// same and the ledger's input hash stays put.
func settlementAmount(n int) int64 { return 100 + int64(n)*7919%99_900 }

func (j *settlementJob) Run(ctx context.Context, run *runner.Run) error {
	first, last := j.accounts(run)
	start := max(afterNumbered(run.Checkpoint(), "acct:")+1, first)
	if err := run.SetTotal(ctx, int64(max(last-start+1, 0))); err != nil {
		return err
	}
	var batch []runner.Item
	for n := start; n <= last; n++ {
		account := fmt.Sprintf("acct:%04d", n)
		in := SettlementInput{Account: account, Amount: settlementAmount(n)}
		item := settlementItem(account, in)
		if j.cfg.Batch > 1 {
			if batch = append(batch, item); len(batch) < j.cfg.Batch && n < last {
				continue
			}
			err := run.ProcessBatch(ctx, batch, 8, func(ctx context.Context, item runner.Item, a *runner.Attempt) error {
				return j.pay(ctx, item.Input.(SettlementInput), a)
			})
			if err != nil {
				return err
			}
			batch = batch[:0]
			continue
		}
		if j.cfg.failItem != nil && j.cfg.failItem(account) {
			if err := run.Fail(ctx, item, runner.Transient(fmt.Errorf("demo: %s cannot be paid now (test hook)", account))); err != nil {
				return err
			}
			continue
		}
		if err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error { return j.pay(ctx, in, a) }); err != nil {
			return err
		}
	}
	return nil
}

// settlementItem is the item that pays account.
func settlementItem(account string, in SettlementInput) runner.Item {
	return runner.Item{Target: account, Step: settlementStep, Input: in, Checkpoint: account, External: true,
		Downstream: ProviderDownstream}
}

// pay makes one account's payment with the attempt's idempotency key.
func (j *settlementJob) pay(ctx context.Context, in SettlementInput, a *runner.Attempt) error {
	eff, err := j.provider.Apply(ctx, Payment{IdempotencyKey: a.IdempotencyKey, Target: in.Account, Amount: in.Amount})
	if err != nil {
		return classifyPaymentError(err)
	}
	a.SetEffectRef(eff.Ref())
	a.SetEvidenceRef(evidence(eff.ID, a.IdempotencyKey))
	if j.cfg.failTx != nil && j.cfg.failTx(in.Account) {
		a.Tx(func(context.Context, pgx.Tx) error {
			return fmt.Errorf("demo: the job's own write for %s failed (test hook)", in.Account)
		})
	}
	return nil
}

// classifyPaymentError tells the runner what a failed payment call means. Only answers that
// prove nothing was applied are TRANSIENT; a 429 or 503 is the provider pushing back
// (Throttled, with its Retry-After), which slows every caller of the downstream. A timeout, or
// anything unknown, is returned as is, so the runner's default for an external step —
// AMBIGUOUS_EFFECT — applies.
func classifyPaymentError(err error) error {
	var se *StatusError
	switch {
	case errors.Is(err, ErrNotSent):
		return runner.Transient(err)
	case errors.As(err, &se):
		switch {
		case se.Code == http.StatusTooManyRequests || se.Code == http.StatusServiceUnavailable:
			return runner.Throttled(err, se.RetryAfter)
		case se.Code >= 500:
			return runner.Transient(err)
		case se.Code == http.StatusConflict:
			return runner.Conflict(err)
		default:
			return runner.Rejected(err)
		}
	}
	return err
}

// evidence is where the proof of effect id lives: the provider's row for the key.
func evidence(id int64, key string) string {
	return fmt.Sprintf("demo_provider_effects id=%d idempotency_key=%s", id, key)
}

// Reconcile asks the provider whether the payment with idempotencyKey was made, for a target
// left AMBIGUOUS_EFFECT. Not applied means no effect exists for the key, so paying again with
// the same key is safe.
func (j *settlementJob) Reconcile(ctx context.Context, target, step, idempotencyKey string) (runner.Reconciliation, error) {
	if step != settlementStep {
		return runner.Reconciliation{}, fmt.Errorf("reconcile %s: unknown step %q", target, step)
	}
	id, found, err := j.provider.Lookup(ctx, idempotencyKey)
	if err != nil {
		return runner.Reconciliation{}, fmt.Errorf("reconcile %s: %w", target, err)
	}
	if !found {
		return runner.Reconciliation{}, nil
	}
	return runner.Reconciliation{Applied: true, EffectRef: Effect{ID: id}.Ref(), EvidenceRef: evidence(id, idempotencyKey)}, nil
}
