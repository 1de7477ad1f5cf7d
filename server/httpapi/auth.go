package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/server/httpapi/wsgorilla"
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

// CreateToken mints a token named name with role, which never expires, and stores its hash in
// tokens. The token itself is returned once and never stored. A name any token ever had, even
// a revoked one, is a CONFLICT error: names are never reissued.
func CreateToken(ctx context.Context, tokens *TokenStore, name string, role model.Role) (string, *APIToken, error) {
	return CreateExpiringToken(ctx, tokens, name, role, 0)
}

// MaxTokenTTL is the longest lifetime a token may be given.
const MaxTokenTTL = 10 * 365 * 24 * time.Hour

// CreateExpiringToken is CreateToken for a token the server refuses, as expired, once ttl
// has passed since its creation; ttl 0 means never. A ttl below 0 or above MaxTokenTTL is
// INVALID_INPUT on the field expires.
func CreateExpiringToken(ctx context.Context, tokens *TokenStore, name string, role model.Role, ttl time.Duration) (string, *APIToken, error) {
	if ttl < 0 || ttl > MaxTokenTTL {
		return "", nil, &bt.Error{Code: bt.CodeInvalidInput, Field: "expires",
			Message: fmt.Sprintf("a token's lifetime must be positive and at most %d days", MaxTokenTTL/(24*time.Hour))}
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "token name must be 1 to 100 characters", Field: "name"}
	}
	if !role.Valid() {
		return "", nil, &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("unknown role %q", role), Field: "role"}
	}
	token, hash := NewToken()
	t, err := tokens.CreateToken(ctx, name, role.Stored(), hash, ttl)
	if err != nil {
		return "", nil, err
	}
	return token, t, nil
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
// not cost a query per request. A revoked token therefore stops working within ttl, or at once
// where a revocationWatcher hears of the revocation.
type authenticator struct {
	store *TokenStore
	ttl   time.Duration
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]cachedCaller // by token hash
}

type cachedCaller struct {
	v       graph.Caller
	expires *time.Time // the token's expiry; nil: never
	at      time.Time
}

// maxCachedTokens bounds the cache; it is cleared when full (tokens are few in practice).
const maxCachedTokens = 10000

func newAuthenticator(store *TokenStore, ttl time.Duration, now func() time.Time) *authenticator {
	return &authenticator{store: store, ttl: ttl, now: now, cache: map[string]cachedCaller{}}
}

var errBadToken = errors.New("unknown or revoked token")

// tokenExpiredError refuses a token that has expired: its holder needs a new token, not a
// fixed one, so it says so apart from an unknown or revoked token.
type tokenExpiredError struct {
	name string
	at   time.Time
}

func (e *tokenExpiredError) Error() string {
	return fmt.Sprintf("token expired at %s (token %q); mint a new one with baton token create",
		e.at.UTC().Format(time.RFC3339), e.name)
}

// authenticate returns the caller a token belongs to and when the token expires (nil: never),
// or errBadToken, or a *tokenExpiredError.
func (a *authenticator) authenticate(ctx context.Context, token string) (*graph.Caller, *time.Time, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 200 {
		return nil, nil, errBadToken
	}
	hash := HashToken(token)
	now := a.now()
	a.mu.Lock()
	c, ok := a.cache[hash]
	a.mu.Unlock()
	if ok && now.Sub(c.at) < a.ttl {
		if c.expires != nil && !now.Before(*c.expires) {
			return nil, nil, &tokenExpiredError{name: c.v.Name, at: *c.expires}
		}
		v := c.v
		return &v, c.expires, nil
	}
	t, err := a.store.TokenByHash(ctx, hash)
	if bt.CodeOf(err) == bt.CodeNotFound {
		return nil, nil, errBadToken
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look up token: %w", err)
	}
	if t.Expired(now) {
		return nil, nil, &tokenExpiredError{name: t.Name, at: *t.ExpiresAt}
	}
	role, err := model.ParseRole(t.Role)
	if err != nil {
		return nil, nil, fmt.Errorf("token %s: %w", t.Name, err)
	}
	_ = a.store.TouchToken(ctx, t.ID) // best effort: last_used_at is informational
	v := graph.Caller{TokenID: t.ID, Name: t.Name, Role: role}
	a.mu.Lock()
	if len(a.cache) >= maxCachedTokens {
		clear(a.cache)
	}
	a.cache[hash] = cachedCaller{v: v, expires: t.ExpiresAt, at: now}
	a.mu.Unlock()
	return &v, t.ExpiresAt, nil
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

// forget drops the cached callers of token id, so that its next use asks the database.
func (a *authenticator) forget(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for hash, c := range a.cache {
		if c.v.TokenID == id {
			delete(a.cache, hash)
		}
	}
}

// Close code and reason of a WebSocket whose token was revoked while it was open; one whose
// token expired is closed with the same code and the reason of a *tokenExpiredError.
const (
	closeRevoked       = 4401
	closeRevokedReason = "unauthenticated: token revoked"
)

// wsSession is one WebSocket connection: the token it authenticated with and the way to end
// it. The server puts one in the upgrade request's context; sessionConn finds it there.
type wsSession struct {
	mu      sync.Mutex
	tokenID int64
	name    string             // the token's
	expires *time.Time         // the token's expiry; nil: never
	cancel  context.CancelFunc // ends the connection's context: gqlgen then closes it
	code    int                // the close code to send instead of gqlgen's, when non-zero
	reason  string
	conn    framedConn // the connection, once accepted, if it writes prepared frames
}

// framedConn is a connection that writes shared subscriptions' frames itself (wsgorilla's).
type framedConn interface {
	SubscribeID() (string, bool)
	WritePrepared(*websocket.PreparedMessage) error
}

var _ graph.SubscriptionWriter = (*wsSession)(nil)

// SubscribeID returns the id of the subscribe message the connection is handling now.
func (s *wsSession) SubscribeID() (string, bool) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return "", false
	}
	return c.SubscribeID()
}

// WriteNext writes event e of subscription id: the frame every connection with a subscriber
// of id writes, built once.
func (s *wsSession) WriteNext(e *graph.SharedEvent, id string) error {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return errors.New("httpapi: no connection to write to")
	}
	f, err := e.Frame(id, func(payload []byte, id string) (any, error) { return wsgorilla.NextFrame(payload, id) })
	if err != nil {
		return err
	}
	return c.WritePrepared(f.(*websocket.PreparedMessage))
}

type wsSessionKey struct{}

func sessionFrom(ctx context.Context) *wsSession {
	s, _ := ctx.Value(wsSessionKey{}).(*wsSession)
	return s
}

// end closes the connection with code and reason: gqlgen stops its operations and sends
// the close frame, whose code and reason sessionConn swaps in.
func (s *wsSession) end(code int, reason string) {
	s.mu.Lock()
	s.code, s.reason = code, reason
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *wsSession) closeOverride() (int, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code, s.reason, s.code != 0
}

// sessionImplementation accepts WebSockets with impl and ties each to the wsSession of its
// request, so that the server can close it with a code of its choosing. gqlgen closes a
// connection whose context ends with code 1000; the wrapper replaces that code when the
// session was ended for a reason (a revoked token).
type sessionImplementation struct {
	impl transport.WebsocketImplementation
}

func (i sessionImplementation) Accept(w http.ResponseWriter, r *http.Request, o transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	c, err := i.impl.Accept(w, r, o)
	if err != nil {
		return nil, err
	}
	s := sessionFrom(r.Context())
	if s == nil {
		return c, nil
	}
	if f, ok := c.(framedConn); ok {
		s.mu.Lock()
		s.conn = f
		s.mu.Unlock()
	}
	return &sessionConn{WebsocketConn: c, s: s}, nil
}

// sessionConn is a WebSocket whose close code its session may override. It passes the
// optional read limit and read deadline of the connection it wraps through.
type sessionConn struct {
	transport.WebsocketConn
	s *wsSession
}

var (
	_ transport.WebsocketReadLimiter   = (*sessionConn)(nil)
	_ transport.WebsocketReadDeadliner = (*sessionConn)(nil)
)

func (c *sessionConn) WriteClose(code int, reason string) error {
	if oc, or, ok := c.s.closeOverride(); ok {
		code, reason = oc, or
	}
	return c.WebsocketConn.WriteClose(code, reason)
}

func (c *sessionConn) SetReadLimit(n int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(n)
	}
}

func (c *sessionConn) SetReadDeadline(t time.Time) error {
	if d, ok := c.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

// revocationWatcher closes the WebSockets of tokens revoked while they are open. It runs only
// while this instance has WebSockets open: it then listens for the revocations the store
// announces (closing the token's connections and dropping it from the auth cache at once), and
// every interval, in case an announcement was missed, asks the database which of the open
// connections' tokens are still live.
type revocationWatcher struct {
	store    *TokenStore
	auth     *authenticator
	interval time.Duration
	log      *slog.Logger

	mu       sync.Mutex
	sessions map[int64]map[*wsSession]struct{} // by token id
	stop     context.CancelFunc                // nil while the watcher is not running
	wake     chan struct{}                     // of the running watcher
}

func newRevocationWatcher(store *TokenStore, auth *authenticator, interval time.Duration, log *slog.Logger) *revocationWatcher {
	return &revocationWatcher{store: store, auth: auth, interval: interval, log: log, sessions: map[int64]map[*wsSession]struct{}{}}
}

// add watches s, starting the watcher if s is the first session.
func (w *revocationWatcher) add(s *wsSession) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.sessions[s.tokenID]
	if set == nil {
		set = map[*wsSession]struct{}{}
		w.sessions[s.tokenID] = set
	}
	set[s] = struct{}{}
	if w.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w.stop = cancel
		w.wake = make(chan struct{}, 1)
		go w.run(ctx, w.wake)
	}
}

// remove stops watching s, and stops the watcher after the last session.
func (w *revocationWatcher) remove(s *wsSession) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.sessions[s.tokenID]
	if _, ok := set[s]; !ok {
		return
	}
	delete(set, s)
	if len(set) == 0 {
		delete(w.sessions, s.tokenID)
	}
	if len(w.sessions) == 0 && w.stop != nil {
		w.stop()
		w.stop, w.wake = nil, nil
	}
}

func (w *revocationWatcher) run(ctx context.Context, wake chan struct{}) {
	poke := func() {
		select {
		case wake <- struct{}{}:
		default: // a check is already due
		}
	}
	go func() {
		for ctx.Err() == nil {
			// Announcements may have been missed before the LISTEN: check once it is in place.
			err := w.store.ListenTokenRevocations(ctx, poke, func(id int64) {
				w.auth.forget(id)
				poke()
			})
			if err != nil {
				w.log.WarnContext(ctx, "httpapi: listen for token revocations; checking every interval until it is back", "err", err, "interval", w.interval)
			}
			t := time.NewTimer(w.interval)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}()
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		w.check(ctx)
	}
}

// check closes the connections of every watched token that is no longer live.
func (w *revocationWatcher) check(ctx context.Context) {
	w.mu.Lock()
	ids := make([]int64, 0, len(w.sessions))
	for id := range w.sessions {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	live, err := w.store.LiveTokenIDs(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			w.log.ErrorContext(ctx, "httpapi: check the tokens of open websockets", "err", err)
		}
		return
	}
	for _, id := range ids {
		if live[id] {
			continue
		}
		w.auth.forget(id)
		w.mu.Lock()
		ended := make([]*wsSession, 0, len(w.sessions[id]))
		for s := range w.sessions[id] {
			ended = append(ended, s)
		}
		w.mu.Unlock()
		if len(ended) > 0 {
			w.log.InfoContext(ctx, "httpapi: closing the websockets of a revoked token", "token_id", id, "connections", len(ended))
		}
		now := w.auth.now()
		for _, s := range ended {
			s.mu.Lock()
			name, expires := s.name, s.expires
			s.mu.Unlock()
			// Not live: revoked, or expired by the database's clock, which this instance's
			// may trail by a little.
			if expires != nil && !now.Add(time.Minute).Before(*expires) {
				s.end(closeRevoked, "unauthenticated: "+(&tokenExpiredError{name: name, at: *expires}).Error())
				continue
			}
			s.end(closeRevoked, closeRevokedReason)
		}
	}
}
