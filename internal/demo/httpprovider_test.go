package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// newHTTPTestProvider serves a provider of cfg over httptest and returns it with its client.
func newHTTPTestProvider(t *testing.T, cfg ProviderConfig) (*Provider, *HTTPProvider, *bundle) {
	t.Helper()
	p, b := newTestProvider(t, cfg)
	srv := httptest.NewServer(ProviderHandler(p))
	t.Cleanup(srv.Close)
	c, err := NewHTTPProvider(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	return p, c, b
}

func TestHTTPProviderRoundTrip(t *testing.T) {
	p, c, b := newHTTPTestProvider(t, deduping)
	ctx := context.Background()
	pay := Payment{IdempotencyKey: "h1", Target: "acct:0001", Amount: 500}
	first, err := c.Apply(ctx, pay)
	if err != nil || first.ID == 0 || first.Replayed || first.AppliedAt.IsZero() {
		t.Fatalf("apply over HTTP: %+v, %v", first, err)
	}
	second, err := c.Apply(ctx, pay)
	if err != nil || second.ID != first.ID || !second.Replayed || !second.AppliedAt.Equal(first.AppliedAt) {
		t.Fatalf("second apply of the key: %+v, %v; want effect %d replayed", second, err, first.ID)
	}
	if id, found, err := c.Lookup(ctx, "h1"); err != nil || !found || id != first.ID {
		t.Fatalf("lookup h1: %d %v %v", id, found, err)
	}
	if _, found, err := c.Lookup(ctx, "no such key & more"); err != nil || found {
		t.Fatalf("lookup of an unknown key: %v %v", found, err)
	}

	// The limit, over HTTP: bad input is the provider's coded error, and changes nothing.
	err = c.SetLimit(ctx, ProviderLimit{Rate: 5, Burst: -2})
	var be *bt.Error
	if !errors.As(err, &be) || be.Code != bt.CodeInvalidInput || be.Field != "burst" {
		t.Fatalf("a negative burst over HTTP: %v, want INVALID_INPUT on burst", err)
	}
	want := ProviderLimit{Rate: 7, Burst: 3, Concurrency: 2}
	if err := c.SetLimit(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Limit(ctx); err != nil || got != want || p.Limit() != want {
		t.Fatalf("limit read back %+v (%v), provider has %+v; want %+v", got, err, p.Limit(), want)
	}
	rec, err := c.Records(ctx)
	if err != nil || len(rec.Calls) != 2 || rec.PeakInFlight != 1 || rec.InFlight != 0 {
		t.Fatalf("records over HTTP: %+v, %v; want 2 calls, peak 1", rec, err)
	}
	if !rec.Calls[0].Equal(p.Calls()[0]) {
		t.Fatalf("recorded arrival %s over HTTP, %s in process", rec.Calls[0], p.Calls()[0])
	}
	if s, err := c.Stats(ctx); err != nil || s.Calls != 2 || s.Applied != 1 || s.Replayed != 1 {
		t.Fatalf("stats over HTTP: %+v, %v", s, err)
	}
	if err := c.ResetRecords(ctx); err != nil {
		t.Fatal(err)
	}
	if rec := p.Records(); len(rec.Calls) != 0 || rec.PeakInFlight != 0 {
		t.Fatalf("records after a reset over HTTP: %+v", rec)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 1 {
		t.Fatalf("%d effects, want 1", n)
	}
}

func TestHTTPProviderClassifiesAsInProcess(t *testing.T) {
	p, c, b := newHTTPTestProvider(t, deduping)
	ctx := context.Background()
	if _, err := c.Apply(ctx, Payment{IdempotencyKey: "c1", Target: "acct:0001", Amount: 10}); err != nil {
		t.Fatal(err)
	}
	withFault := func(f func(*ProviderConfig)) {
		cfg := deduping
		f(&cfg)
		p.SetConfig(cfg)
	}
	for _, tc := range []struct {
		name  string
		setup func()
		pay   Payment
		code  int // the StatusError's; 0 for none
		class bt.LedgerState
	}{
		{"409 conflict", func() {}, Payment{IdempotencyKey: "c1", Target: "acct:0001", Amount: 11}, http.StatusConflict, bt.LedgerConflict},
		{"422 invalid", func() {}, Payment{IdempotencyKey: "c2", Target: "acct:0001"}, http.StatusUnprocessableEntity, bt.LedgerValidationRejected},
		{"422 injected", func() { withFault(func(c *ProviderConfig) { c.RejectRate = 1 }) }, Payment{IdempotencyKey: "c3", Target: "acct:0001", Amount: 1}, http.StatusUnprocessableEntity, bt.LedgerValidationRejected},
		{"503", func() { withFault(func(c *ProviderConfig) { c.ServerErrorRate = 1 }) }, Payment{IdempotencyKey: "c4", Target: "acct:0001", Amount: 1}, http.StatusServiceUnavailable, bt.LedgerTransient},
		{"429 injected", func() { withFault(func(c *ProviderConfig) { c.ThrottleRate = 1 }) }, Payment{IdempotencyKey: "c5", Target: "acct:0001", Amount: 1}, http.StatusTooManyRequests, bt.LedgerTransient},
		{"timeout after apply", func() { withFault(func(c *ProviderConfig) { c.TimeoutAfterApplyRate = 1 }) }, Payment{IdempotencyKey: "c6", Target: "acct:0001", Amount: 1}, 0, bt.LedgerAmbiguous},
	} {
		tc.setup()
		_, err := c.Apply(ctx, tc.pay)
		var se *StatusError
		switch {
		case tc.code != 0 && (!errors.As(err, &se) || se.Code != tc.code):
			t.Fatalf("%s: %v, want status %d", tc.name, err, tc.code)
		case tc.code == 0 && (!errors.Is(err, ErrTimeout) || errors.Is(err, ErrNotSent)):
			t.Fatalf("%s: %v, want ErrTimeout", tc.name, err)
		}
		if got := runner.ClassOf(classifyPaymentError(err), true); got != tc.class {
			t.Fatalf("%s: class %s, want %s", tc.name, got, tc.class)
		}
		p.SetConfig(deduping)
	}
	// Only the payment timed out after applying was made, besides the first.
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 2 {
		t.Fatalf("%d effects, want 2", n)
	}
	if _, found, err := c.Lookup(ctx, "c6"); err != nil || !found {
		t.Fatalf("lookup of the payment timed out after applying: %v %v", found, err)
	}
}

func TestHTTPProviderLimitSendsRetryAfter(t *testing.T) {
	p, c, b := newHTTPTestProvider(t, quiet)
	ctx := context.Background()
	if err := c.SetLimit(ctx, ProviderLimit{Rate: 0.1, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, Payment{IdempotencyKey: "r1", Target: "acct:0001", Amount: 1}); err != nil {
		t.Fatal(err)
	}
	// The header itself, as any HTTP client reads it.
	resp, err := http.Post(c.URL()+"/apply", "application/json",
		jsonBody(t, applyRequest{IdempotencyKey: "r2", Target: "acct:0001", Amount: 1}))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || err != nil || secs < 1 || secs > 10 {
		t.Fatalf("answer %d with Retry-After %q, want 429 with 1 to 10 seconds", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	_, err = c.Apply(ctx, Payment{IdempotencyKey: "r3", Target: "acct:0001", Amount: 1})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter < time.Second || se.RetryAfter > 10*time.Second {
		t.Fatalf("client's answer past the limit: %v, want 429 with Retry-After from the header", err)
	}
	throttled := classifyPaymentError(err)
	if runner.ClassOf(throttled, true) != bt.LedgerTransient || !errors.As(throttled, &se) || se.RetryAfter == 0 {
		t.Fatalf("classified %v, want TRANSIENT carrying the Retry-After", throttled)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 1 {
		t.Fatalf("%d effects, want 1: a 429 applies nothing", n)
	}
	if p.Stats().Limited != 2 {
		t.Fatalf("limited %d, want 2", p.Stats().Limited)
	}
	rec, err := c.Records(ctx)
	if err != nil || len(rec.Calls) != 3 || len(rec.Refused) != 2 || rec.Limited != 2 || !rec.Refused[1].Equal(rec.Calls[2]) {
		t.Fatalf("records over HTTP: %+v, %v; want 3 arrivals, the last two refused", rec, err)
	}
	// Lifted over HTTP, the next call goes through.
	if err := c.SetLimit(ctx, ProviderLimit{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, Payment{IdempotencyKey: "r3", Target: "acct:0001", Amount: 1}); err != nil {
		t.Fatalf("after the limit was lifted: %v", err)
	}
}

func TestHTTPProviderContextAndConnection(t *testing.T) {
	cfg := quiet
	cfg.Latency = time.Hour
	p, c, b := newHTTPTestProvider(t, cfg)

	// Done before the request went out: not sent, nothing applied.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Apply(done, Payment{IdempotencyKey: "x1", Target: "acct:0001", Amount: 1})
	if !errors.Is(err, ErrNotSent) || runner.ClassOf(classifyPaymentError(err), true) != bt.LedgerTransient {
		t.Fatalf("apply with a done context: %v, want ErrNotSent (TRANSIENT)", err)
	}
	// Ended after the provider had the request: the caller cannot know, so it is ambiguous.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Apply(ctx, Payment{IdempotencyKey: "x2", Target: "acct:0001", Amount: 1})
		errc <- err
	}()
	testenv.Eventually(t, 10*time.Second, "the call to reach the provider", func() bool { return p.Records().InFlight == 1 })
	cancel()
	err = <-errc
	if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrNotSent) || runner.ClassOf(classifyPaymentError(err), true) != bt.LedgerAmbiguous {
		t.Fatalf("apply cancelled while the provider held it: %v, want ErrTimeout (AMBIGUOUS_EFFECT)", err)
	}
	testenv.Eventually(t, 10*time.Second, "the provider to drop the call", func() bool { return p.Records().InFlight == 0 })
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 0 {
		t.Fatalf("%d effects, want 0", n)
	}

	// Nobody listening: not sent.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	down, err := NewHTTPProvider(gone.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := down.Apply(context.Background(), Payment{IdempotencyKey: "x3", Target: "acct:0001", Amount: 1}); !errors.Is(err, ErrNotSent) {
		t.Fatalf("apply to a closed port: %v, want ErrNotSent", err)
	}
	// A gateway's 502 says nothing of the payment: left unclassified.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(bad.Close)
	gw, err := NewHTTPProvider(bad.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = gw.Apply(context.Background(), Payment{IdempotencyKey: "x4", Target: "acct:0001", Amount: 1})
	var se *StatusError
	if err == nil || errors.As(err, &se) || runner.ClassOf(classifyPaymentError(err), true) != bt.LedgerAmbiguous {
		t.Fatalf("a 502 from a gateway: %v, want an unclassified error (AMBIGUOUS_EFFECT)", err)
	}
}

func TestNewHTTPProviderRefusesBadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:8099", "ftp://host", "http://", "://x"} {
		_, err := NewHTTPProvider(u)
		var be *bt.Error
		if !errors.As(err, &be) || be.Code != bt.CodeInvalidInput || be.Field != "baseURL" {
			t.Fatalf("NewHTTPProvider(%q): %v, want INVALID_INPUT on baseURL", u, err)
		}
	}
}

func jsonBody(t *testing.T, v any) io.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}
