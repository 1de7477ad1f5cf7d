package httpapi

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
)

// The authenticator refuses a token once it has expired by its clock, with a
// *tokenExpiredError, also while the token is in its cache; an unknown token stays
// errBadToken.
func TestAuthenticatorRefusesExpiredTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := NewTokenStore(testenv.Pool(t, testenv.Schema(t)))
	token, stored, err := CreateExpiringToken(ctx, store, "expiring", model.RoleOperator, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if stored.ExpiresAt == nil || stored.ExpiresAt.Sub(stored.CreatedAt) != time.Hour {
		t.Fatalf("stored expiry %v of a token created at %v, want an hour later", stored.ExpiresAt, stored.CreatedAt)
	}
	var mu sync.Mutex
	now := stored.CreatedAt.Add(time.Minute)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := newAuthenticator(store, 24*time.Hour, clock) // a long cache: the second call is a hit

	v, exp, err := a.authenticate(ctx, token)
	if err != nil || v.Name != "expiring" || exp == nil || !exp.Equal(*stored.ExpiresAt) {
		t.Fatalf("a live token: %+v, %v, %v", v, exp, err)
	}
	mu.Lock()
	now = stored.ExpiresAt.Add(time.Second)
	mu.Unlock()
	var expired *tokenExpiredError
	if _, _, err := a.authenticate(ctx, token); !errors.As(err, &expired) || !strings.HasPrefix(err.Error(), "token expired at ") {
		t.Fatalf("an expired token in the cache: %v, want token expired", err)
	}
	fresh := newAuthenticator(store, 24*time.Hour, clock)
	if _, _, err := fresh.authenticate(ctx, token); !errors.As(err, &expired) || !strings.Contains(err.Error(), `(token "expiring")`) {
		t.Fatalf("an expired token looked up: %v, want token expired", err)
	}
	if _, _, err := fresh.authenticate(ctx, "bt_nope"); !errors.Is(err, errBadToken) {
		t.Fatalf("an unknown token: %v, want errBadToken", err)
	}
	never, stored, err := CreateToken(ctx, store, "forever", model.RoleViewer)
	if err != nil || stored.ExpiresAt != nil {
		t.Fatalf("a token without a lifetime: %+v, %v", stored, err)
	}
	if _, exp, err := fresh.authenticate(ctx, never); err != nil || exp != nil {
		t.Fatalf("a token that never expires: %v, %v", exp, err)
	}
	for _, ttl := range []time.Duration{-time.Second, MaxTokenTTL + time.Hour} {
		if _, _, err := CreateExpiringToken(ctx, store, "bad-ttl", model.RoleViewer, ttl); err == nil || !strings.Contains(err.Error(), "lifetime") {
			t.Errorf("a lifetime of %v: %v, want INVALID_INPUT", ttl, err)
		}
	}
}
