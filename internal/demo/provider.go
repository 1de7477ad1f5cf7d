package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ProviderConfig configures the fake payment provider's latency and injected faults. Rates
// are chances per call. SetConfig swaps everything but Seed at runtime.
type ProviderConfig struct {
	// Latency of every call, spent before anything is applied; 0 means 120ms, Off none.
	Latency time.Duration
	// ServerErrorRate is the chance of a 503 before anything is applied; 0 means 0.005, Off none.
	ServerErrorRate float64
	// ThrottleRate is the chance of a 429 before anything is applied; 0 means 0.005, Off none.
	ThrottleRate float64
	// TimeoutAfterApplyRate is the chance that the effect is applied and committed and the
	// call then fails with ErrTimeout, as when the response is lost; 0 means 0.005, Off none.
	//
	// Together the three defaults fail 1.5% of calls downstream, well under the 5% at which
	// demo-settlement's stop condition stops a run, yet a few per run.
	TimeoutAfterApplyRate float64
	// RejectRate is the chance of a 422 (validation) before anything is applied; 0 means
	// 0.005, Off none. Invalid payments (no key, no target, amount <= 0) are always refused.
	RejectRate float64
	// Seed makes the sequence of injected faults reproducible for a single caller. It is read
	// by NewProvider only.
	Seed uint64
	// Limit is the provider's own limit from the start (zero: none). It is read by NewProvider
	// only, which ignores a limit that cannot be (Setup refuses it); SetLimit changes it.
	Limit ProviderLimit
	// DedupeByKey makes the provider honour idempotency keys: a key applied before returns
	// its first effect (Replayed) instead of applying again. Off by default, so that a
	// duplicate call shows up as a second row in demo_provider_effects — the demo's proof
	// that Baton never makes an effect twice does not lean on the provider.
	DedupeByKey bool
}

func (c ProviderConfig) withDefaults() ProviderConfig {
	c.Latency = durationOr(c.Latency, 120*time.Millisecond)
	c.ServerErrorRate = rateOr(c.ServerErrorRate, 0.005)
	c.ThrottleRate = rateOr(c.ThrottleRate, 0.005)
	c.TimeoutAfterApplyRate = rateOr(c.TimeoutAfterApplyRate, 0.005)
	c.RejectRate = rateOr(c.RejectRate, 0.005)
	return c
}

// Payment is one call to the provider.
type Payment struct {
	// IdempotencyKey makes the call safe to repeat: a second call with the same key returns
	// the first effect and applies nothing. Required.
	IdempotencyKey string
	// Target is what is paid (an account).
	Target string
	// Amount in minor units; must be positive.
	Amount int64
}

// Effect is an applied payment.
type Effect struct {
	ID        int64     // the provider's id for the effect (demo_provider_effects.id)
	AppliedAt time.Time // when the effect was first applied
	// Replayed reports that the key had been applied before and this call applied nothing.
	Replayed bool
}

// Ref returns the provider's reference for the effect, such as "pay_42".
func (e Effect) Ref() string { return fmt.Sprintf("pay_%d", e.ID) }

// StatusError is an answer the provider gave without applying anything: 429 and 5xx are
// passing, 409 means the idempotency key was used for another payment, 422 is a validation
// refusal.
type StatusError struct {
	Code    int    // the HTTP status a real provider would answer
	Message string // the provider's explanation
	// RetryAfter is the wait the provider asked for (its Retry-After header), 0 when it gave
	// none. The provider's own limit always gives one, in whole seconds.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("provider: %d %s: %s (retry after %s)", e.Code, http.StatusText(e.Code), e.Message, e.RetryAfter)
	}
	return fmt.Sprintf("provider: %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

var (
	// ErrTimeout is a call whose response never came: the effect may or may not have been
	// applied. (The fake applies it first, which is the case that matters.)
	ErrTimeout = errors.New("provider: timed out waiting for the response")
	// ErrNotSent is a call abandoned before it reached the provider (its context ended):
	// nothing was applied.
	ErrNotSent = errors.New("provider: request not sent")
)

// ProviderStats counts what the provider did, by outcome.
type ProviderStats struct {
	Calls              int64 // every Apply
	Applied            int64 // effects made (first use of a key)
	Replayed           int64 // calls answered with an earlier effect of the same key
	NotSent            int64 // abandoned by the caller's context before applying
	ServerErrors       int64 // injected 503s
	Throttled          int64 // injected 429s
	Limited            int64 // 429s of the provider's own limit (SetLimit)
	Rejected           int64 // 422s, injected or for invalid payments
	Conflicts          int64 // 409s: key reused for another payment
	TimedOutAfterApply int64 // applied, then reported as a timeout
}

// PaymentAPI is what demo-settlement pays through: the in-process *Provider, or
// *HTTPProvider, a client of one served by ProviderHandler in another process.
type PaymentAPI interface {
	// Apply makes a payment once per idempotency key (Provider.Apply). A *StatusError means
	// nothing was applied; ErrNotSent that the call never reached the provider; ErrTimeout,
	// or any other error, that the payment may have been made.
	Apply(ctx context.Context, pay Payment) (Effect, error)
	// Lookup reports the effect applied for an idempotency key, if any (Provider.Lookup).
	Lookup(ctx context.Context, idempotencyKey string) (effectID int64, found bool, err error)
}

var (
	_ PaymentAPI = (*Provider)(nil)
	_ PaymentAPI = (*HTTPProvider)(nil)
)

// Provider is a fake payment provider, in process, keeping its effects in the PostgreSQL
// table demo_provider_effects. It honours idempotency keys the way a real provider should,
// and injects latency, 5xx, 429, validation refusals and timeouts after applying. It can also
// enforce a true limit of its own (SetLimit), and records every call's arrival for tests.
// Its methods are safe for concurrent use.
type Provider struct {
	pool  *pgxpool.Pool
	cfg   atomic.Pointer[ProviderConfig]
	limit trueLimit

	mu  sync.Mutex
	rng *rand.Rand

	calls, applied, replayed, notSent, serverErrors, throttled, limited, rejected, conflicts, timedOut atomic.Int64
}

// NewProvider returns a provider storing its effects through pool.
func NewProvider(pool *pgxpool.Pool, cfg ProviderConfig) *Provider {
	p := &Provider{pool: pool, rng: rand.New(rand.NewPCG(cfg.Seed, 0x70726f7669646572))}
	p.SetConfig(cfg)
	_ = p.limit.set(cfg.Limit) // a bad one leaves no limit; Setup refuses it first
	return p
}

// SetConfig switches latency and fault rates at once, for calls that start afterwards; zero
// fields take their defaults and Off turns a fault off. Seed and Limit are ignored.
func (p *Provider) SetConfig(cfg ProviderConfig) {
	c := cfg.withDefaults()
	p.cfg.Store(&c)
}

// Config returns the latency and fault rates in force, defaults filled in.
func (p *Provider) Config() ProviderConfig { return *p.cfg.Load() }

// SetLimit makes the provider enforce lim, its own true limit, from the next call on: a call
// past it is answered a 429 *StatusError with RetryAfter before anything is applied. The zero
// ProviderLimit lifts it. A negative, infinite or NaN field is refused with an INVALID_INPUT
// *batontype.Error naming the field, and the limit in force stays.
func (p *Provider) SetLimit(lim ProviderLimit) error { return p.limit.set(lim) }

// Limit returns the provider's own limit in force.
func (p *Provider) Limit() ProviderLimit { return p.limit.limit() }

// Records returns what the provider saw of its callers' Apply calls since ResetRecords: every
// arrival, the arrival of every call its own limit answered 429, and the peak in flight.
func (p *Provider) Records() LimitRecord { return p.limit.record() }

// Calls returns the arrival time of every Apply since ResetRecords, oldest first.
func (p *Provider) Calls() []time.Time { return p.limit.record().Calls }

// PeakInFlight returns the most Apply calls in flight at once since ResetRecords, counted
// from arrival to answer, calls the limit refused included.
func (p *Provider) PeakInFlight() int { return p.limit.record().PeakInFlight }

// ResetRecords forgets the recorded arrivals and 429s, and starts the peak in flight over.
func (p *Provider) ResetRecords() { p.limit.reset() }

// Stats returns what the provider has done so far.
func (p *Provider) Stats() ProviderStats {
	return ProviderStats{
		Calls: p.calls.Load(), Applied: p.applied.Load(), Replayed: p.replayed.Load(), NotSent: p.notSent.Load(),
		ServerErrors: p.serverErrors.Load(), Throttled: p.throttled.Load(), Limited: p.limited.Load(), Rejected: p.rejected.Load(),
		Conflicts: p.conflicts.Load(), TimedOutAfterApply: p.timedOut.Load(),
	}
}

// rolls draws the four chances a call needs, always four, so one caller's sequence of
// faults depends on the seed alone.
func (p *Provider) rolls() (serverError, throttle, reject, timeout float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Float64(), p.rng.Float64(), p.rng.Float64(), p.rng.Float64()
}

// Apply makes the payment once per idempotency key. A call past the provider's own limit
// (SetLimit) is answered at once with a 429 *StatusError carrying RetryAfter. Before anything
// is applied it waits out the latency and may answer a *StatusError (503, 429, 422); if ctx
// ends by then, it returns
// ErrNotSent and applies nothing. Once applying has begun it finishes whatever ctx does, as a
// real server would, and may then report ErrTimeout although the effect was made. A key seen
// before returns the first effect (Replayed) without a second one; a key seen before with
// another target or amount is refused with 409.
func (p *Provider) Apply(ctx context.Context, pay Payment) (Effect, error) {
	p.calls.Add(1)
	cfg := p.Config()
	serverError, throttle, reject, timeout := p.rolls()
	ok, retryAfter, done := p.limit.admit(time.Now())
	defer done()
	if !ok {
		p.limited.Add(1)
		return Effect{}, &StatusError{Code: http.StatusTooManyRequests, RetryAfter: retryAfter,
			Message: "over the provider's own limit, nothing applied"}
	}
	if err := wait(ctx, cfg.Latency); err != nil {
		p.notSent.Add(1)
		return Effect{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	switch {
	case pay.IdempotencyKey == "" || pay.Target == "" || pay.Amount <= 0:
		p.rejected.Add(1)
		return Effect{}, &StatusError{Code: http.StatusUnprocessableEntity,
			Message: fmt.Sprintf("invalid payment: key %q, target %q, amount %d", pay.IdempotencyKey, pay.Target, pay.Amount)}
	case serverError < cfg.ServerErrorRate:
		p.serverErrors.Add(1)
		return Effect{}, &StatusError{Code: http.StatusServiceUnavailable, Message: "upstream unavailable, nothing applied"}
	case throttle < cfg.ThrottleRate:
		p.throttled.Add(1)
		return Effect{}, &StatusError{Code: http.StatusTooManyRequests, Message: "rate limit exceeded, nothing applied"}
	case reject < cfg.RejectRate:
		p.rejected.Add(1)
		return Effect{}, &StatusError{Code: http.StatusUnprocessableEntity, Message: fmt.Sprintf("account %s refused by the bank", pay.Target)}
	}
	// The last moment the caller can back out. Past it the request is the provider's and runs
	// to completion, so a cancelled caller cannot leave a half-made effect behind.
	if err := ctx.Err(); err != nil {
		p.notSent.Add(1)
		return Effect{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	eff, target, amount, err := p.insert(actx, pay)
	if err != nil {
		return Effect{}, err
	}
	if eff.Replayed {
		p.replayed.Add(1)
		if target != pay.Target || amount != pay.Amount {
			p.conflicts.Add(1)
			return Effect{}, &StatusError{Code: http.StatusConflict, Message: fmt.Sprintf(
				"idempotency key %s was used for %s amount %d", pay.IdempotencyKey, target, amount)}
		}
	} else {
		p.applied.Add(1)
	}
	if timeout < cfg.TimeoutAfterApplyRate || ctx.Err() != nil {
		p.timedOut.Add(1)
		return Effect{}, fmt.Errorf("%w (key %s)", ErrTimeout, pay.IdempotencyKey)
	}
	return eff, nil
}

// insert applies pay unless its key is known, and returns the key's effect with the target
// and amount it was applied for.
func (p *Provider) insert(ctx context.Context, pay Payment) (eff Effect, target string, amount int64, err error) {
	if !p.Config().DedupeByKey {
		err = p.pool.QueryRow(ctx, `INSERT INTO demo_provider_effects (idempotency_key, target_key, amount) VALUES ($1, $2, $3)
			RETURNING id, applied_at`, pay.IdempotencyKey, pay.Target, pay.Amount).Scan(&eff.ID, &eff.AppliedAt)
		if err != nil {
			return Effect{}, "", 0, fmt.Errorf("provider: apply %s: %w", pay.IdempotencyKey, err)
		}
		return eff, pay.Target, pay.Amount, nil
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return Effect{}, "", 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	// One applier per key at a time; the first effect of a key is the one that counts.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, pay.IdempotencyKey); err != nil {
		return Effect{}, "", 0, err
	}
	err = tx.QueryRow(ctx, `SELECT id, applied_at, target_key, amount FROM demo_provider_effects
		WHERE idempotency_key = $1 ORDER BY id LIMIT 1`, pay.IdempotencyKey).Scan(&eff.ID, &eff.AppliedAt, &target, &amount)
	switch {
	case err == nil:
		eff.Replayed = true
		return eff, target, amount, tx.Commit(ctx)
	case !errors.Is(err, pgx.ErrNoRows):
		return Effect{}, "", 0, fmt.Errorf("provider: read effect of %s: %w", pay.IdempotencyKey, err)
	}
	err = tx.QueryRow(ctx, `INSERT INTO demo_provider_effects (idempotency_key, target_key, amount) VALUES ($1, $2, $3)
		RETURNING id, applied_at`, pay.IdempotencyKey, pay.Target, pay.Amount).Scan(&eff.ID, &eff.AppliedAt)
	if err != nil {
		return Effect{}, "", 0, fmt.Errorf("provider: apply %s: %w", pay.IdempotencyKey, err)
	}
	return eff, pay.Target, pay.Amount, tx.Commit(ctx)
}

// Lookup reports the effect applied for idempotencyKey, if any: what a reconciliation asks
// the provider about a call whose outcome is unknown. It injects no faults.
func (p *Provider) Lookup(ctx context.Context, idempotencyKey string) (effectID int64, found bool, err error) {
	err = p.pool.QueryRow(ctx, `SELECT id FROM demo_provider_effects WHERE idempotency_key = $1 ORDER BY id LIMIT 1`, idempotencyKey).Scan(&effectID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("provider: look up %s: %w", idempotencyKey, err)
	}
	return effectID, true, nil
}
