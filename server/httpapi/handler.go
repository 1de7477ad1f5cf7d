package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi/wsgorilla"
)

// Config configures the GraphQL endpoint over HTTP and WebSocket. GraphQL.Runner is
// required; every other field has a default.
type Config struct {
	// GraphQL configures the schema and its execution: the runner, live events, the
	// operation limits and the mutation rate limit.
	GraphQL graph.Config
	// Tokens holds the API tokens that authenticate every request (required; see
	// NewTokenStore).
	Tokens *TokenStore
	// AllowedOrigins lists the browser origins ("https://console.example.com") allowed
	// besides the server's own, for WebSocket upgrades and for POSTs. Requests without an
	// Origin header (non-browser clients) are not affected. "*" allows every origin: for
	// development only.
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body (and a GET query string); 0 means 1 MiB. A larger
	// one is refused with HTTP 413 (a query string: 414), coded PAYLOAD_TOO_LARGE.
	MaxBodyBytes int64
	// MaxWebSocketsPerToken bounds the WebSocket connections one token may hold open on this
	// instance; 0 means 32, -1 disables the limit.
	MaxWebSocketsPerToken int
	// MaxSubscriptionsPerConnection bounds the subscriptions one WebSocket connection may have
	// running at once; a subscribe beyond it gets an error coded TOO_MANY_SUBSCRIPTIONS and the
	// connection stays up. 0 means 100, -1 disables the limit.
	MaxSubscriptionsPerConnection int
	// WebSocketInitTimeout is how long a WebSocket may stay open without connection_init;
	// 0 means 10s.
	WebSocketInitTimeout time.Duration
	// WebSocketPingInterval is how often the server pings (graphql-transport-ws) or sends
	// keep-alives (graphql-ws); a graphql-transport-ws client that misses two pongs is
	// dropped. 0 means 15s.
	WebSocketPingInterval time.Duration
	// RequestTimeout bounds reading a request (body included) and, twice over, writing its
	// answer, for everything but WebSockets; 0 means 30s. It is set per request, so the
	// http.Server may leave ReadTimeout and WriteTimeout unset (they would cut WebSockets).
	RequestTimeout time.Duration
	// TokenCacheTTL is how long a looked-up token is trusted without asking the database
	// again, and how often the tokens of open WebSockets are checked: a revoked token stops
	// working, and its WebSockets are closed with code 4401, within it. While WebSockets are
	// open the instance also listens for revocations (TokenRevokedChannel) and acts
	// on them at once. 0 means 5s. The cache runs on GraphQL.NowFunc.
	TokenCacheTTL time.Duration
}

func (c *Config) setDefaults() {
	c.GraphQL = c.GraphQL.WithDefaults()
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxSubscriptionsPerConnection == 0 {
		c.MaxSubscriptionsPerConnection = 100
	}
	if c.MaxWebSocketsPerToken == 0 {
		c.MaxWebSocketsPerToken = 32
	}
	if c.WebSocketInitTimeout <= 0 {
		c.WebSocketInitTimeout = 10 * time.Second
	}
	if c.WebSocketPingInterval <= 0 {
		c.WebSocketPingInterval = 15 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.TokenCacheTTL <= 0 {
		c.TokenCacheTTL = 5 * time.Second
	}
}

// server is the endpoint: authentication, origin and size checks around gqlgen's server.
type server struct {
	cfg   Config
	log   *slog.Logger
	auth  *authenticator
	conns *connLimiter
	// maxSubs bounds the running subscriptions of one WebSocket connection; negative: none.
	maxSubs int
	watcher *revocationWatcher
	gql     *handler.Server
	// next is the handler after the origin check: cross-origin protection, then serveGraphQL.
	next    http.Handler
	origins map[string]bool
	anyOrig bool
}

// NewHandler returns the GraphQL endpoint: POST (JSON), GET (queries only) and WebSocket
// (graphql-transport-ws and the legacy graphql-ws) on one path. POST and GET follow the
// GraphQL-over-HTTP spec (graphqlhttp.go): the response is application/graphql-response+json
// or application/json as the Accept header asks. Every request needs a bearer token
// (WebSocket: in connection_init); without a valid one the answer is HTTP 401 with a GraphQL
// error coded UNAUTHENTICATED. It panics if cfg.GraphQL.Runner or cfg.Tokens is nil.
func NewHandler(cfg Config) http.Handler {
	if cfg.GraphQL.Runner == nil {
		panic("httpapi: Config.GraphQL.Runner is required")
	}
	if cfg.Tokens == nil {
		panic("httpapi: Config.Tokens is required")
	}
	cfg.setDefaults()
	store := cfg.Tokens
	s := &server{
		cfg:     cfg,
		log:     cfg.GraphQL.Logger,
		auth:    newAuthenticator(store, cfg.TokenCacheTTL, cfg.GraphQL.NowFunc),
		conns:   &connLimiter{max: max(cfg.MaxWebSocketsPerToken, 0), n: map[int64]int{}},
		maxSubs: cfg.MaxSubscriptionsPerConnection,
		origins: map[string]bool{},
	}
	s.watcher = newRevocationWatcher(store, s.auth, cfg.TokenCacheTTL, s.log)
	cop := http.NewCrossOriginProtection()
	for _, o := range cfg.AllowedOrigins {
		if o == "*" {
			s.anyOrig = true
			continue
		}
		norm := normalizeOrigin(o)
		s.origins[norm] = true
		if err := cop.AddTrustedOrigin(norm); err != nil {
			panic(fmt.Sprintf("httpapi: allowed origin %q: %v", o, err))
		}
	}
	if s.anyOrig {
		cop.AddInsecureBypassPattern("/")
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A browser's cross-site request that came without an Origin header (Sec-Fetch-Site
		// gave it away): refused like a foreign origin, as a GraphQL response.
		s.writeError(w, r, http.StatusForbidden, graph.CodeForbidden, "cross-origin requests are not allowed")
	}))

	gcfg := cfg.GraphQL
	gcfg.AdmitOperation = s.aroundOperations // per subscriber, before shared execution
	gql := graph.NewServer(gcfg)
	readLimit := cfg.MaxBodyBytes
	// The WebSocket transport first: the others must not see upgrade requests.
	gql.AddTransport(transport.Websocket{
		Implementation: sessionImplementation{impl: wsgorilla.Implementation{
			Upgrader: websocket.Upgrader{
				CheckOrigin:      s.originAllowed,
				HandshakeTimeout: 10 * time.Second,
			},
			WriteTimeout: 10 * time.Second,
		}},
		InitFunc:              s.wsInit,
		InitTimeout:           cfg.WebSocketInitTimeout,
		CloseFunc:             s.wsClose,
		ErrorFunc:             s.wsError,
		KeepAlivePingInterval: cfg.WebSocketPingInterval,
		PingPongInterval:      cfg.WebSocketPingInterval,
		PayloadReadLimit:      &readLimit,
	})
	gql.AddTransport(graphQLOverHTTP{maxTokens: cfg.GraphQL.MaxTokens, log: s.log})
	s.gql = gql
	s.next = cop.Handler(http.HandlerFunc(s.serveGraphQL))
	return s
}

// ServeHTTP refuses foreign origins, answers CORS preflights for allowed ones, and passes
// the rest on through cross-origin protection to serveGraphQL.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin != "" {
		if !s.originAllowed(r) {
			s.writeError(w, r, http.StatusForbidden, graph.CodeForbidden, "origin "+origin+" is not allowed")
			return
		}
		if !sameOrigin(r, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET, POST")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
	}
	s.next.ServeHTTP(w, r)
}

// nulMessage refuses NUL characters: no text Baton stores may hold one (PostgreSQL refuses
// them), so a request carrying one is refused whole, before it can half-happen.
const nulMessage = "strings must not contain the NUL character (\\u0000)"

// serveGraphQL checks the method, the media types, the size and the token, then hands over
// to gqlgen.
func (s *server) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	upgrade := websocket.IsWebSocketUpgrade(r)
	if !upgrade && r.Header.Get("Upgrade") != "" {
		// An upgrade to something else (h2c, from curl --http2): a server may ignore it, and
		// this one does, serving the request as what it is. gqlgen would hand any upgrade to
		// its WebSocket transport, which refuses it.
		r = r.Clone(r.Context())
		r.Header.Del("Upgrade")
	}
	if !upgrade {
		// Deadlines on the connection, against clients that send or read slowly. They are
		// cleared afterwards: the connection may serve further requests.
		rc := http.NewResponseController(w)
		now := time.Now()
		_ = rc.SetReadDeadline(now.Add(s.cfg.RequestTimeout))
		_ = rc.SetWriteDeadline(now.Add(2 * s.cfg.RequestTimeout))
		defer func() { _ = rc.SetReadDeadline(time.Time{}); _ = rc.SetWriteDeadline(time.Time{}) }()
	}
	switch {
	case r.Method == http.MethodGet:
		if int64(len(r.URL.RawQuery)) > s.cfg.MaxBodyBytes {
			s.writeError(w, r, http.StatusRequestURITooLong, graph.CodePayloadTooLarge, fmt.Sprintf("query string is larger than %d bytes: send the request as a POST", s.cfg.MaxBodyBytes))
			return
		}
		if strings.Contains(r.URL.RawQuery, "%00") || strings.Contains(r.URL.RawQuery, `\u0000`) {
			s.writeError(w, r, http.StatusBadRequest, graph.CodeBadUserInput, nulMessage)
			return
		}
	case r.Method == http.MethodPost && !upgrade:
	default:
		w.Header().Set("Allow", "GET, POST")
		s.writeError(w, r, http.StatusMethodNotAllowed, graph.CodeBadRequest, "use POST, GET (queries only) or a WebSocket")
		return
	}
	if !upgrade {
		if accept := r.Header.Get("Accept"); accept != "" {
			if _, ok := negotiateMediaType(accept); !ok {
				s.writeError(w, r, http.StatusNotAcceptable, graph.CodeBadRequest, fmt.Sprintf(
					"the Accept header %q allows neither %s nor %s", accept, mediaTypeGraphQLResponse, mediaTypeJSON))
				return
			}
		}
		if r.Method == http.MethodPost {
			if msg := checkRequestContentType(r.Header.Get("Content-Type")); msg != "" {
				s.writeError(w, r, http.StatusUnsupportedMediaType, graph.CodeBadRequest, msg)
				return
			}
		}
	}

	ctx, expires, ok := s.authenticateHeader(w, r, upgrade)
	if !ok {
		return
	}
	if upgrade {
		sess := &wsSession{expires: expires}
		ctx = context.WithValue(ctx, wsSessionKey{}, sess)
		ctx = graph.WithSubscriptionWriter(ctx, sess)
	}

	if r.Method == http.MethodPost && !s.readBody(w, r) {
		return
	}
	s.gql.ServeHTTP(w, r.WithContext(ctx))
}

// readBody reads a POST's body, bounded in size and time, into memory for gqlgen, refusing a
// body too large, too slow or holding a NUL; it reports whether the request may go on.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.writeError(w, r, http.StatusRequestEntityTooLarge, graph.CodePayloadTooLarge, fmt.Sprintf("request body is larger than %d bytes", s.cfg.MaxBodyBytes))
			return false
		}
		// The rest of the body will not be read: without this, the server would wait for it
		// (with the deadline lifted) before answering, whatever the client sends.
		w.Header().Set("Connection", "close")
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.writeError(w, r, http.StatusRequestTimeout, graph.CodeBadRequest, fmt.Sprintf("the request body did not arrive within %s", s.cfg.RequestTimeout))
			return false
		}
		s.writeError(w, r, http.StatusBadRequest, graph.CodeBadRequest, "could not read the request body")
		return false
	}
	if bytes.Contains(body, []byte(`\u0000`)) || bytes.IndexByte(body, 0) >= 0 {
		s.writeError(w, r, http.StatusBadRequest, graph.CodeBadUserInput, nulMessage)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

// authenticateHeader authenticates the request's Authorization header and returns the context
// with its caller and the token's expiry. A WebSocket upgrade may come without one (its
// clients authenticate in connection_init). When it returns false it has answered the request.
func (s *server) authenticateHeader(w http.ResponseWriter, r *http.Request, upgrade bool) (context.Context, *time.Time, bool) {
	ctx := r.Context()
	var expires *time.Time // of the header's token
	if header := r.Header.Get("Authorization"); header != "" {
		token, ok := bearerToken(header)
		if !ok {
			s.writeUnauthenticated(w, r, "the Authorization header must be: Bearer <token>")
			return nil, nil, false
		}
		v, exp, err := s.auth.authenticate(ctx, token)
		expires = exp
		var expired *tokenExpiredError
		switch {
		case errors.Is(err, errBadToken):
			s.writeUnauthenticated(w, r, "unknown or revoked token")
			return nil, nil, false
		case errors.As(err, &expired):
			s.writeUnauthenticated(w, r, expired.Error())
			return nil, nil, false
		case err != nil:
			ref := runner.NewErrorRef()
			s.log.ErrorContext(ctx, "httpapi: authenticate", "ref", ref, "err", err)
			s.writeError(w, r, http.StatusInternalServerError, graph.CodeInternal, runner.InternalMessage(ref))
			return nil, nil, false
		}
		ctx = graph.WithCaller(ctx, v)
	} else if !upgrade {
		// WebSocket clients authenticate in connection_init instead.
		s.writeUnauthenticated(w, r, "authentication required: send Authorization: Bearer <token>")
		return nil, nil, false
	}
	return ctx, expires, true
}

// aroundOperations makes sure every operation has a caller (a defence in depth: the HTTP and
// WebSocket entrances already refuse anonymous requests) and keeps subscriptions on
// WebSockets.
func (s *server) aroundOperations(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	v := graph.CallerFrom(ctx)
	if v == nil {
		return graphql.OneShot(errorResponse(graph.CodeUnauthenticated, "authentication required: send Authorization: Bearer <token>"))
	}
	if op := graphql.GetOperationContext(ctx).Operation; op != nil && op.Operation == ast.Subscription {
		if !v.WebSocket {
			return graphql.OneShot(errorResponse(graph.CodeBadRequest, "subscriptions are served over WebSocket only"))
		}
		if subs, ok := ctx.Value(subscriptionsKey{}).(*subscriptionCount); ok {
			release, ok := subs.acquire(s.maxSubs)
			if !ok {
				return graphql.OneShot(errorResponse(graph.CodeTooManySubscriptions,
					fmt.Sprintf("this connection already has %d subscriptions running; stop one first", s.maxSubs)))
			}
			// The operation's context ends when the client stops it or the connection closes;
			// the handler returns nil when the subscription ends by itself.
			context.AfterFunc(ctx, release)
			responses := next(ctx)
			return func(ctx context.Context) *graphql.Response {
				r := responses(ctx)
				if r == nil {
					release()
				}
				return r
			}
		}
	}
	return next(ctx)
}

type subscriptionsKey struct{}

// subscriptionCount counts the running subscriptions of one WebSocket connection.
type subscriptionCount struct {
	mu sync.Mutex
	n  int
}

// acquire takes a place for one more subscription if fewer than max (negative: no limit) are
// running, and returns the function that gives it back (idempotent).
func (c *subscriptionCount) acquire(max int) (func(), bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if max >= 0 && c.n >= max {
		return nil, false
	}
	c.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.n--
			c.mu.Unlock()
		})
	}, true
}

type releaseKey struct{}

// wsInit authenticates a WebSocket in its connection_init payload: {"authorization": "Bearer
// <token>"} or {"token": "<token>"} (or an Authorization header on the upgrade request). It
// refuses with close code 4401 without a valid token and 4403 when the token has too many
// connections open.
func (s *server) wsInit(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	refuse := func(code int, msg string) (context.Context, *transport.InitPayload, error) {
		ctx := transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, code), msg)
		return ctx, nil, errors.New(msg)
	}
	raw := p.GetString("token")
	if a := p.Authorization(); a != "" {
		if t, ok := bearerToken(a); ok {
			raw = t
		} else {
			raw = a
		}
	}
	var v *graph.Caller
	var expires *time.Time
	switch {
	case raw != "":
		var err error
		v, expires, err = s.auth.authenticate(ctx, raw)
		var expired *tokenExpiredError
		if errors.Is(err, errBadToken) {
			return refuse(4401, "unauthenticated: unknown or revoked token")
		}
		if errors.As(err, &expired) {
			return refuse(4401, "unauthenticated: "+expired.Error())
		}
		if err != nil {
			ref := runner.NewErrorRef()
			s.log.ErrorContext(ctx, "httpapi: authenticate websocket", "ref", ref, "err", err)
			return refuse(websocket.CloseInternalServerErr, runner.InternalMessage(ref))
		}
	case graph.CallerFrom(ctx) != nil:
		v = graph.CallerFrom(ctx)
	default:
		return refuse(4401, "unauthenticated: send {\"authorization\": \"Bearer <token>\"} in connection_init")
	}
	release, ok := s.conns.acquire(v.TokenID)
	if !ok {
		return refuse(4403, fmt.Sprintf("forbidden: this token already has %d WebSocket connections open", s.conns.max))
	}
	ws := *v
	ws.WebSocket = true
	ctx = graph.WithCaller(ctx, &ws)
	ctx = context.WithValue(ctx, releaseKey{}, release)
	ctx = context.WithValue(ctx, subscriptionsKey{}, &subscriptionCount{})
	if sess := sessionFrom(ctx); sess != nil {
		// Ending this context makes gqlgen close the connection: how the watcher closes
		// the connections of a token revoked while they are open.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		sess.mu.Lock()
		sess.tokenID, sess.name, sess.cancel = v.TokenID, v.Name, cancel
		if raw != "" { // else the upgrade request's header authenticated it, and set expires
			sess.expires = expires
		}
		sess.mu.Unlock()
		s.watcher.add(sess)
	}
	return ctx, nil, nil
}

func (s *server) wsClose(ctx context.Context, _ int) {
	if release, ok := ctx.Value(releaseKey{}).(func()); ok {
		release()
	}
	if sess := sessionFrom(ctx); sess != nil {
		s.watcher.remove(sess)
	}
}

func (s *server) wsError(ctx context.Context, err error) {
	s.log.DebugContext(ctx, "httpapi: websocket", "err", err)
}

// originAllowed reports whether r may come from its Origin: none (not a browser), the
// server's own, or an allowed one.
func (s *server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	return origin == "" || s.anyOrig || sameOrigin(r, origin) || s.origins[normalizeOrigin(origin)]
}

func sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// normalizeOrigin lower-cases an origin and drops a trailing slash.
func normalizeOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

func errorResponse(code, message string) *graphql.Response {
	return &graphql.Response{Errors: gqlerror.List{{Message: message, Extensions: map[string]any{"code": code}}}}
}

// writeError answers r outside of gqlgen with a GraphQL response of one error coded code, in
// the media type r accepts.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	writeJSON(w, s.log, responseMediaType(r), status, errorBody(code, message))
}

func (s *server) writeUnauthenticated(w http.ResponseWriter, r *http.Request, message string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
	s.writeError(w, r, http.StatusUnauthorized, graph.CodeUnauthenticated, message)
}
