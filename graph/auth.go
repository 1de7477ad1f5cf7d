package graph

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// TokenPrefix starts every API token, so that a leaked token is easy to recognise (and to
// scan for in logs and repositories).
const TokenPrefix = "bt_"

// NewToken returns a fresh API token ("bt_" and 32 random bytes, base64url) and its hash.
func NewToken() (token, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the OS cannot give randomness)
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken returns what api_tokens stores of a token: its SHA-256, lower-case hex. Tokens are
// 256 random bits, so a fast unsalted hash is enough: there is nothing to brute-force.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateToken mints a token named name with role and stores its hash. The token itself is
// returned once and never stored. A live token with the same name is a CONFLICT error.
func CreateToken(ctx context.Context, s *postgres.Store, name string, role model.Role) (string, *postgres.APIToken, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "token name must be 1 to 100 characters", Field: "name"}
	}
	if !role.Valid() {
		return "", nil, &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("unknown role %q", role), Field: "role"}
	}
	token, hash := NewToken()
	t, err := s.CreateToken(ctx, name, role.Stored(), hash)
	if err != nil {
		return "", nil, err
	}
	return token, t, nil
}

// viewer is the authenticated caller.
type viewer struct {
	tokenID int64
	name    string
	role    model.Role
	// websocket is set for operations arriving over a WebSocket connection.
	websocket bool
}

type viewerKey struct{}

func withViewer(ctx context.Context, v *viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// viewerFrom returns the caller, or nil when the request carried no valid token.
func viewerFrom(ctx context.Context) *viewer {
	v, _ := ctx.Value(viewerKey{}).(*viewer)
	return v
}

// bearerToken extracts the token of an "Authorization: Bearer <token>" value.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// authenticator resolves tokens to callers, caching hits briefly so that a busy client does
// not cost a query per request. A revoked token therefore stops working within cacheTTL.
type authenticator struct {
	store *postgres.Store
	ttl   time.Duration
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]cachedViewer // by token hash
}

type cachedViewer struct {
	v  viewer
	at time.Time
}

// maxCachedTokens bounds the cache; it is cleared when full (tokens are few in practice).
const maxCachedTokens = 10000

func newAuthenticator(store *postgres.Store, ttl time.Duration, now func() time.Time) *authenticator {
	return &authenticator{store: store, ttl: ttl, now: now, cache: map[string]cachedViewer{}}
}

var errBadToken = errors.New("unknown or revoked token")

// authenticate returns the caller a token belongs to, or errBadToken.
func (a *authenticator) authenticate(ctx context.Context, token string) (*viewer, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 200 {
		return nil, errBadToken
	}
	hash := HashToken(token)
	now := a.now()
	a.mu.Lock()
	c, ok := a.cache[hash]
	a.mu.Unlock()
	if ok && now.Sub(c.at) < a.ttl {
		v := c.v
		return &v, nil
	}
	t, err := a.store.TokenByHash(ctx, hash)
	if bt.CodeOf(err) == bt.CodeNotFound {
		return nil, errBadToken
	}
	if err != nil {
		return nil, fmt.Errorf("look up token: %w", err)
	}
	role, err := model.ParseRole(t.Role)
	if err != nil {
		return nil, fmt.Errorf("token %s: %w", t.Name, err)
	}
	_ = a.store.TouchToken(ctx, t.ID) // best effort: last_used_at is informational
	v := viewer{tokenID: t.ID, name: t.Name, role: role}
	a.mu.Lock()
	if len(a.cache) >= maxCachedTokens {
		clear(a.cache)
	}
	a.cache[hash] = cachedViewer{v: v, at: now}
	a.mu.Unlock()
	return &v, nil
}

// rateLimiter is a token bucket per API token: perMinute mutations a minute on average, in
// bursts of up to burst. It lives in memory, so each instance limits on its own.
type rateLimiter struct {
	perSecond float64
	burst     float64
	now       func() time.Time

	mu      sync.Mutex
	buckets map[int64]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(perMinute, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{perSecond: float64(perMinute) / 60, burst: float64(burst), now: now, buckets: map[int64]*bucket{}}
}

// allow takes one token from key's bucket, and reports whether there was one.
func (l *rateLimiter) allow(key int64) bool {
	if l == nil {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute {
		// Forget buckets that have refilled: they are as good as new ones.
		for k, b := range l.buckets {
			if b.tokens+now.Sub(b.at).Seconds()*l.perSecond >= l.burst {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.perSecond)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// connLimiter counts open WebSocket connections per API token.
type connLimiter struct {
	max int
	mu  sync.Mutex
	n   map[int64]int
}

// acquire takes a connection slot of key and returns its release function, or false when
// key has max connections open.
func (c *connLimiter) acquire(key int64) (func(), bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max > 0 && c.n[key] >= c.max {
		return nil, false
	}
	c.n[key]++
	return sync.OnceFunc(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n[key]--; c.n[key] <= 0 {
			delete(c.n, key)
		}
	}), true
}
