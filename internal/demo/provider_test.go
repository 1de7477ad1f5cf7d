package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// quiet is a provider config with no latency and no faults.
var quiet = ProviderConfig{Latency: Off, ServerErrorRate: Off, ThrottleRate: Off, TimeoutAfterApplyRate: Off, RejectRate: Off}

// deduping is quiet with the provider honouring idempotency keys.
var deduping = func() ProviderConfig { c := quiet; c.DedupeByKey = true; return c }()

func TestProviderRecordsEveryApplicationByDefault(t *testing.T) {
	p, b := newTestProvider(t, quiet)
	pay := Payment{IdempotencyKey: "dup", Target: "acct:0009", Amount: 5}
	for range 2 {
		if eff, err := p.Apply(context.Background(), pay); err != nil || eff.Replayed {
			t.Fatalf("apply: %+v %v", eff, err)
		}
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects WHERE idempotency_key = 'dup'`); n != 2 {
		t.Fatalf("%d rows for two applications of one key, want 2 (duplicates must be visible)", n)
	}
}

func newTestProvider(t *testing.T, cfg ProviderConfig) (*Provider, *bundle) {
	t.Helper()
	b := &bundle{Bundle: &testbundle.Bundle{T: t}}
	t.Parallel()
	b.URL = demoSchema(t)
	b.Pool = testenv.Pool(t, b.URL)
	return NewProvider(b.Pool, cfg), b
}

func TestProviderApplyIsIdempotent(t *testing.T) {
	p, b := newTestProvider(t, deduping)
	ctx := context.Background()
	pay := Payment{IdempotencyKey: "k1", Target: "acct:0001", Amount: 500}
	first, err := p.Apply(ctx, pay)
	if err != nil || first.Replayed {
		t.Fatalf("first apply: %+v, %v", first, err)
	}
	second, err := p.Apply(ctx, pay)
	if err != nil || second.ID != first.ID || !second.Replayed {
		t.Fatalf("second apply with the same key: %+v, %v; want effect %d replayed", second, err, first.ID)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects WHERE idempotency_key = 'k1'`); n != 1 {
		t.Fatalf("%d effect rows for one key, want 1", n)
	}
	if first.Ref() != fmt.Sprintf("pay_%d", first.ID) {
		t.Fatalf("ref %q", first.Ref())
	}
	// The same key for another payment is refused, not applied.
	_, err = p.Apply(ctx, Payment{IdempotencyKey: "k1", Target: "acct:0001", Amount: 501})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusConflict {
		t.Fatalf("key reused for another amount: %v, want 409", err)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 1 {
		t.Fatalf("%d effect rows, want 1", n)
	}
	if id, found, err := p.Lookup(ctx, "k1"); err != nil || !found || id != first.ID {
		t.Fatalf("lookup k1: %d %v %v", id, found, err)
	}
	if _, found, err := p.Lookup(ctx, "nope"); err != nil || found {
		t.Fatalf("lookup of an unknown key: found %v, %v", found, err)
	}
}

func TestProviderTimeoutAfterApply(t *testing.T) {
	cfg := deduping
	cfg.TimeoutAfterApplyRate = 1
	p, b := newTestProvider(t, cfg)
	ctx := context.Background()
	pay := Payment{IdempotencyKey: "k-timeout", Target: "acct:0002", Amount: 700}
	if _, err := p.Apply(ctx, pay); !errors.Is(err, ErrTimeout) {
		t.Fatalf("apply: %v, want ErrTimeout", err)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects WHERE idempotency_key = 'k-timeout' AND amount = 700`); n != 1 {
		t.Fatalf("%d effect rows after a timeout after applying, want 1", n)
	}
	id, found, err := p.Lookup(ctx, "k-timeout")
	if err != nil || !found {
		t.Fatalf("lookup after the timeout: %v %v", found, err)
	}
	// Faults switch off at runtime; a retry with the same key returns the effect made.
	p.SetConfig(deduping)
	eff, err := p.Apply(ctx, pay)
	if err != nil || eff.ID != id || !eff.Replayed {
		t.Fatalf("retry after the timeout: %+v, %v; want effect %d replayed", eff, err, id)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 1 {
		t.Fatalf("%d effect rows after the retry, want 1", n)
	}
	if s := p.Stats(); s.TimedOutAfterApply != 1 || s.Applied != 1 || s.Replayed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestProviderContextDoneBeforeApply(t *testing.T) {
	cfg := quiet
	cfg.Latency = time.Hour
	p, b := newTestProvider(t, cfg)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Apply(ctx, Payment{IdempotencyKey: "k-cancelled", Target: "acct:0003", Amount: 1}); !errors.Is(err, ErrNotSent) {
		t.Fatalf("apply with a done context: %v, want ErrNotSent", err)
	}
	// Ended while waiting for the (hour-long) response latency.
	ctx, cancel = context.WithCancel(context.Background())
	go cancel()
	if _, err := p.Apply(ctx, Payment{IdempotencyKey: "k-mid", Target: "acct:0004", Amount: 1}); !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("apply cancelled during latency: %v, want ErrNotSent wrapping context.Canceled", err)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 0 {
		t.Fatalf("%d effect rows from calls whose context ended before applying, want 0", n)
	}
}

func TestProviderFaultsSwitchAtRuntime(t *testing.T) {
	p, b := newTestProvider(t, quiet)
	ctx := context.Background()
	pay := Payment{IdempotencyKey: "k-faults", Target: "acct:0005", Amount: 900}
	for _, tc := range []struct {
		name string
		cfg  func(*ProviderConfig)
		code int
	}{
		{"5xx", func(c *ProviderConfig) { c.ServerErrorRate = 1 }, http.StatusServiceUnavailable},
		{"429", func(c *ProviderConfig) { c.ThrottleRate = 1 }, http.StatusTooManyRequests},
		{"reject", func(c *ProviderConfig) { c.RejectRate = 1 }, http.StatusUnprocessableEntity},
	} {
		cfg := quiet
		tc.cfg(&cfg)
		p.SetConfig(cfg)
		_, err := p.Apply(ctx, pay)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != tc.code {
			t.Fatalf("%s: %v, want status %d", tc.name, err, tc.code)
		}
		if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 0 {
			t.Fatalf("%s: an effect was applied", tc.name)
		}
	}
	if _, err := p.Apply(ctx, Payment{IdempotencyKey: "k-bad", Target: "acct:0006", Amount: 0}); err == nil {
		t.Fatalf("a zero amount was accepted")
	}
	p.SetConfig(quiet)
	if _, err := p.Apply(ctx, pay); err != nil {
		t.Fatalf("apply with faults off: %v", err)
	}
	s := p.Stats()
	if s.ServerErrors != 1 || s.Throttled != 1 || s.Rejected != 2 || s.Applied != 1 || s.Calls != 5 {
		t.Fatalf("stats %+v", s)
	}
}

func TestClassifyPaymentError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bt.LedgerState
	}{
		{"503", &StatusError{Code: 503}, bt.LedgerTransient},
		{"500", &StatusError{Code: 500}, bt.LedgerTransient},
		{"429", &StatusError{Code: 429}, bt.LedgerTransient},
		{"409", &StatusError{Code: 409}, bt.LedgerConflict},
		{"422", &StatusError{Code: 422}, bt.LedgerValidationRejected},
		{"not sent", fmt.Errorf("%w: %w", ErrNotSent, context.DeadlineExceeded), bt.LedgerTransient},
		{"timeout after apply", fmt.Errorf("%w (key k)", ErrTimeout), bt.LedgerAmbiguous},
		{"unknown", errors.New("connection reset"), bt.LedgerAmbiguous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runner.ClassOf(classifyPaymentError(tc.err), true); got != tc.want {
				t.Fatalf("class of %v: %s, want %s", tc.err, got, tc.want)
			}
		})
	}
}
