package demo

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
)

// t0 is an arbitrary instant for the limit's clock.
var t0 = time.Date(2026, 11, 8, 12, 0, 0, 0, time.UTC)

// admitN judges n calls arriving at now and returns how many the limit let through, with the
// Retry-After of the last refusal.
func admitN(l *trueLimit, now time.Time, n int) (admitted int, retryAfter time.Duration) {
	for range n {
		ok, ra, done := l.admit(now)
		done()
		if ok {
			admitted++
		} else {
			retryAfter = ra
		}
	}
	return admitted, retryAfter
}

func TestTrueLimitTokenBucket(t *testing.T) {
	t.Parallel()
	var l trueLimit
	if err := l.set(ProviderLimit{Rate: 10, Burst: 5}); err != nil {
		t.Fatal(err)
	}
	// A full bucket lets Burst calls through at once, then one per 1/Rate.
	if n, ra := admitN(&l, t0, 8); n != 5 || ra != time.Second {
		t.Fatalf("8 calls at once: %d admitted, Retry-After %s; want 5 and 1s", n, ra)
	}
	if n, _ := admitN(&l, t0.Add(100*time.Millisecond), 3); n != 1 {
		t.Fatalf("3 calls 100ms later: %d admitted, want 1 (one token at 10/s)", n)
	}
	if n, _ := admitN(&l, t0.Add(450*time.Millisecond), 5); n != 3 {
		t.Fatalf("5 calls 350ms later: %d admitted, want 3", n)
	}
	// A long pause refills the bucket to Burst, never past it.
	if n, _ := admitN(&l, t0.Add(time.Hour), 20); n != 5 {
		t.Fatalf("20 calls an hour later: %d admitted, want 5 (the burst)", n)
	}
	// Over any stretch of one second no more than Rate + Burst get through.
	var m trueLimit
	if err := m.set(ProviderLimit{Rate: 50, Burst: 10}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for ms := range 1000 {
		n, _ := admitN(&m, t0.Add(time.Duration(ms)*time.Millisecond), 3)
		total += n
	}
	if total > 60 || total < 59 {
		t.Fatalf("%d calls admitted over one second at 50/s burst 10 under 3000 tries, want 60 at most (and nearly so)", total)
	}
	if rec := m.record(); len(rec.Calls) != 3000 || rec.Limited != int64(3000-total) || len(rec.Refused) != 3000-total {
		t.Fatalf("recorded %d calls and %d refusals (%d times), want 3000 and %d", len(rec.Calls), rec.Limited, len(rec.Refused), 3000-total)
	}
}

func TestTrueLimitRetryAfterIsWholeSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate  float64
		after time.Duration // since the bucket was emptied
		want  time.Duration
	}{
		{rate: 50, want: time.Second},                                      // 20ms to a token: at least 1s
		{rate: 0.25, want: 4 * time.Second},                                // 4s exactly
		{rate: 0.25, after: 500 * time.Millisecond, want: 4 * time.Second}, // 3.5s, rounded up
		{rate: 0.25, after: 3500 * time.Millisecond, want: time.Second},
	} {
		var l trueLimit
		if err := l.set(ProviderLimit{Rate: tc.rate, Burst: 1}); err != nil {
			t.Fatal(err)
		}
		if n, _ := admitN(&l, t0, 1); n != 1 {
			t.Fatalf("rate %v: the first call was refused", tc.rate)
		}
		ok, ra, done := l.admit(t0.Add(tc.after))
		done()
		if ok || ra != tc.want {
			t.Fatalf("rate %v, %s after the bucket emptied: admitted %v, Retry-After %s; want refused with %s", tc.rate, tc.after, ok, ra, tc.want)
		}
	}
}

func TestTrueLimitConcurrencyAndPeak(t *testing.T) {
	t.Parallel()
	var l trueLimit
	if err := l.set(ProviderLimit{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	ok1, _, done1 := l.admit(t0)
	ok2, _, done2 := l.admit(t0)
	ok3, ra, done3 := l.admit(t0)
	if !ok1 || !ok2 || ok3 || ra != time.Second {
		t.Fatalf("three calls in flight under concurrency 2: %v %v %v (Retry-After %s), want the third refused with 1s", ok1, ok2, ok3, ra)
	}
	if rec := l.record(); rec.InFlight != 3 || rec.PeakInFlight != 3 {
		t.Fatalf("in flight %d peak %d, want 3 and 3 (a refused call is in flight until answered)", rec.InFlight, rec.PeakInFlight)
	}
	done3()
	done1()
	done1() // idempotent
	ok4, _, done4 := l.admit(t0)
	if !ok4 {
		t.Fatalf("a call after one ended was refused")
	}
	done2()
	done4()
	if rec := l.record(); rec.InFlight != 0 || rec.PeakInFlight != 3 || rec.Limited != 1 {
		t.Fatalf("after every call ended: in flight %d peak %d limited %d, want 0, 3, 1", rec.InFlight, rec.PeakInFlight, rec.Limited)
	}
	l.reset()
	if rec := l.record(); rec.PeakInFlight != 0 || rec.Limited != 0 || len(rec.Calls) != 0 || len(rec.Refused) != 0 {
		t.Fatalf("after reset: %+v", rec)
	}
}

func TestProviderLimitRefusesBadInput(t *testing.T) {
	t.Parallel()
	p := NewProvider(nil, quiet)
	if err := p.SetLimit(ProviderLimit{Rate: 5, Burst: 2, Concurrency: 3}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lim   ProviderLimit
		field string
	}{
		{ProviderLimit{Rate: -1}, "rate"},
		{ProviderLimit{Rate: math.Inf(1)}, "rate"},
		{ProviderLimit{Rate: math.NaN()}, "rate"},
		{ProviderLimit{Burst: -1}, "burst"},
		{ProviderLimit{Concurrency: -3}, "concurrency"},
	} {
		err := p.SetLimit(tc.lim)
		var be *bt.Error
		if !errors.As(err, &be) || be.Code != bt.CodeInvalidInput || be.Field != tc.field {
			t.Fatalf("SetLimit(%+v): %v, want INVALID_INPUT on %s", tc.lim, err, tc.field)
		}
	}
	if got := p.Limit(); got != (ProviderLimit{Rate: 5, Burst: 2, Concurrency: 3}) {
		t.Fatalf("limit after refused changes: %+v, want the one set before", got)
	}
}

func TestProviderLimitAnswers429AndAppliesNothing(t *testing.T) {
	p, b := newTestProvider(t, quiet)
	ctx := context.Background()
	// One token per 10 seconds: the calls below all come well within one.
	if err := p.SetLimit(ProviderLimit{Rate: 0.1, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"k1", "k2"} {
		if _, err := p.Apply(ctx, Payment{IdempotencyKey: key, Target: "acct:0001", Amount: 10}); err != nil {
			t.Fatalf("call %d within the burst: %v", i+1, err)
		}
	}
	_, err := p.Apply(ctx, Payment{IdempotencyKey: "k3", Target: "acct:0001", Amount: 10})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests {
		t.Fatalf("call past rate and burst: %v, want 429", err)
	}
	if se.RetryAfter < time.Second || se.RetryAfter > 10*time.Second || se.RetryAfter%time.Second != 0 {
		t.Fatalf("Retry-After %s, want whole seconds between 1s and 10s", se.RetryAfter)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects WHERE idempotency_key = 'k3'`); n != 0 {
		t.Fatalf("a call answered 429 applied %d effects", n)
	}
	if s := p.Stats(); s.Calls != 3 || s.Applied != 2 || s.Limited != 1 || s.Throttled != 0 {
		t.Fatalf("stats %+v, want 3 calls, 2 applied, 1 limited", s)
	}
	if calls := p.Calls(); len(calls) != 3 || calls[2].Before(calls[0]) {
		t.Fatalf("recorded arrivals %v, want 3 in order", calls)
	}
	// Lifting the limit lets the refused payment through.
	if err := p.SetLimit(ProviderLimit{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(ctx, Payment{IdempotencyKey: "k3", Target: "acct:0001", Amount: 10}); err != nil {
		t.Fatalf("call after the limit was lifted: %v", err)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 3 {
		t.Fatalf("%d effects, want 3", n)
	}
}

// holdCalls starts n payments that wait out an hour's latency until cancel is called, and
// returns their errors once they have all returned.
func holdCalls(t *testing.T, p PaymentAPI, n int) (cancel func(), errs func() []error) {
	t.Helper()
	ctx, cancelCtx := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	out := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, out[i] = p.Apply(ctx, Payment{IdempotencyKey: "held-" + string(rune('a'+i)), Target: "acct:0001", Amount: 1})
		})
	}
	t.Cleanup(func() { cancelCtx(); wg.Wait() })
	return cancelCtx, func() []error { wg.Wait(); return out }
}

func TestProviderRecordsPeakInFlight(t *testing.T) {
	cfg := quiet
	cfg.Latency = time.Hour
	p, b := newTestProvider(t, cfg)
	if err := p.SetLimit(ProviderLimit{Concurrency: 3}); err != nil {
		t.Fatal(err)
	}
	cancel, errs := holdCalls(t, p, 3)
	testenv.Eventually(t, 10*time.Second, "3 calls in flight", func() bool { return p.Records().InFlight == 3 })
	_, err := p.Apply(context.Background(), Payment{IdempotencyKey: "fourth", Target: "acct:0001", Amount: 1})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter != time.Second {
		t.Fatalf("a fourth call under concurrency 3: %v, want 429 with Retry-After 1s", err)
	}
	if got := p.PeakInFlight(); got != 4 {
		t.Fatalf("peak in flight %d, want 4 (3 held and the one refused)", got)
	}
	cancel()
	for i, err := range errs() {
		if !errors.Is(err, ErrNotSent) {
			t.Fatalf("held call %d: %v, want ErrNotSent", i, err)
		}
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 0 {
		t.Fatalf("%d effects from calls that were refused or abandoned", n)
	}
	p.ResetRecords()
	if r := p.Records(); r.PeakInFlight != 0 || r.InFlight != 0 || len(r.Calls) != 0 || r.Limited != 0 {
		t.Fatalf("records after reset: %+v", r)
	}
	p.SetConfig(quiet)
	if _, err := p.Apply(context.Background(), Payment{IdempotencyKey: "after", Target: "acct:0001", Amount: 1}); err != nil || p.PeakInFlight() != 1 {
		t.Fatalf("one call after the reset: %v, peak %d; want success and 1", err, p.PeakInFlight())
	}
}
