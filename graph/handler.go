package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/baton-run/baton/graph/generated"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/server/httpapi/wsgorilla"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
)

// Config configures the GraphQL endpoint. Runner is required; every other field has a
// default.
type Config struct {
	// Runner serves every read and operation. The instance's own worker pool runs the jobs
	// started through this endpoint.
	Runner *runner.Runner
	// Hub delivers live events from every instance. Nil makes subscriptions poll the
	// database every PollInterval instead (reads of one run shared by its subscribers).
	Hub *pubsub.Hub
	// AllowedOrigins lists the browser origins ("https://console.example.com") allowed
	// besides the server's own, for WebSocket upgrades and for POSTs. Requests without an
	// Origin header (non-browser clients) are not affected. "*" allows every origin: for
	// development only.
	AllowedOrigins []string
	// DevMode turns introspection on for every role and shows field suggestions in
	// validation errors. Off, introspection needs OPERATOR or higher.
	DevMode bool
	// Logger receives internal errors (whose text clients never see). Nil means
	// slog.Default().
	Logger *slog.Logger

	// MaxBodyBytes bounds a request body (and a GET query string); 0 means 1 MiB. A larger
	// one is refused with HTTP 413.
	MaxBodyBytes int64
	// MaxDepth bounds how deeply an operation's fields nest; 0 means 12.
	MaxDepth int
	// MaxComplexity bounds an operation's complexity, in which lists count once per item
	// they may return (connections by `first`); 0 means 2000.
	MaxComplexity int
	// MaxTokens bounds the lexical tokens of an operation, before it is even parsed; 0
	// means 10000.
	MaxTokens int
	// MutationRatePerMinute is the average rate of mutations each API token may make, per
	// instance; 0 means 120, -1 disables the limit. MutationBurst is how many may come at
	// once; 0 means MutationRatePerMinute.
	MutationRatePerMinute int
	MutationBurst         int
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
	// PollInterval is how often subscriptions re-read the database when Hub is nil; 0
	// means 1s.
	PollInterval time.Duration
	// AlertPollInterval is how often alertRaised checks the active alarms; 0 means 5s.
	AlertPollInterval time.Duration
	// RequestTimeout bounds reading a request (body included) and, twice over, writing its
	// answer, for everything but WebSockets; 0 means 30s. It is set per request, so the
	// http.Server may leave ReadTimeout and WriteTimeout unset (they would cut WebSockets).
	RequestTimeout time.Duration
	// TokenCacheTTL is how long a looked-up token is trusted without asking the database
	// again, and how often the tokens of open WebSockets are checked: a revoked token stops
	// working, and its WebSockets are closed with code 4401, within it. While WebSockets are
	// open the instance also listens for revocations (postgres.TokenRevokedChannel) and acts
	// on them at once. 0 means 5s.
	TokenCacheTTL time.Duration
	// NowFunc is the clock of the rate limiter and the token cache; nil means time.Now.
	NowFunc func() time.Time
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = 12
	}
	if c.MaxSubscriptionsPerConnection == 0 {
		c.MaxSubscriptionsPerConnection = 100
	}
	if c.MaxComplexity <= 0 {
		c.MaxComplexity = 2000
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 10000
	}
	if c.MutationRatePerMinute == 0 {
		c.MutationRatePerMinute = 120
	}
	if c.MutationBurst <= 0 {
		c.MutationBurst = max(c.MutationRatePerMinute, 1)
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
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.AlertPollInterval <= 0 {
		c.AlertPollInterval = 5 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.TokenCacheTTL <= 0 {
		c.TokenCacheTTL = 5 * time.Second
	}
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
}

// server is the endpoint: authentication, origin and size checks around gqlgen's server.
type server struct {
	cfg     Config
	log     *slog.Logger
	auth    *authenticator
	limiter *rateLimiter
	conns   *connLimiter
	// maxSubs bounds the running subscriptions of one WebSocket connection; negative: none.
	maxSubs int
	watcher *revocationWatcher
	runner  *runner.Runner
	gql     *handler.Server
	// next is the handler after the origin check: cross-origin protection, then serveGraphQL.
	next    http.Handler
	origins map[string]bool
	anyOrig bool
}

// NewHandler returns the GraphQL endpoint: POST (JSON), GET (queries only) and WebSocket
// (graphql-transport-ws and the legacy graphql-ws) on one path. Every request needs a bearer
// token (WebSocket: in connection_init); without a valid one the answer is HTTP 401 with a
// GraphQL error coded UNAUTHENTICATED. It panics if cfg.Runner is nil.
func NewHandler(cfg Config) http.Handler {
	if cfg.Runner == nil {
		panic("graph: Config.Runner is required")
	}
	cfg.setDefaults()
	s := &server{
		cfg:     cfg,
		log:     cfg.Logger,
		auth:    newAuthenticator(cfg.Runner.Store(), cfg.TokenCacheTTL, cfg.NowFunc),
		conns:   &connLimiter{max: max(cfg.MaxWebSocketsPerToken, 0), n: map[int64]int{}},
		maxSubs: cfg.MaxSubscriptionsPerConnection,
		runner:  cfg.Runner,
		origins: map[string]bool{},
	}
	s.watcher = newRevocationWatcher(cfg.Runner.Store(), s.auth, cfg.TokenCacheTTL, cfg.Logger)
	if cfg.MutationRatePerMinute > 0 {
		s.limiter = newRateLimiter(cfg.MutationRatePerMinute, cfg.MutationBurst, cfg.NowFunc)
	}
	cop := http.NewCrossOriginProtection()
	for _, o := range cfg.AllowedOrigins {
		if o == "*" {
			s.anyOrig = true
			continue
		}
		norm := normalizeOrigin(o)
		s.origins[norm] = true
		if err := cop.AddTrustedOrigin(norm); err != nil {
			panic(fmt.Sprintf("graph: allowed origin %q: %v", o, err))
		}
	}
	if s.anyOrig {
		cop.AddInsecureBypassPattern("/")
	}

	var f feed
	if cfg.Hub != nil {
		f = hubFeed{hub: cfg.Hub}
	} else {
		f = newPollFeed(cfg.PollInterval)
	}
	res := newResolver(cfg.Runner, f, cfg.Logger, cfg.AlertPollInterval)
	gcfg := generated.Config{Resolvers: res, Complexity: complexity()}
	gcfg.Directives.HasRole = s.hasRole

	gql := handler.New(generated.NewExecutableSchema(gcfg))
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
	gql.AddTransport(transport.GET{UseGrapQLResponseJsonByDefault: true})
	gql.AddTransport(transport.POST{UseGrapQLResponseJsonByDefault: true})
	gql.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	gql.SetParserTokenLimit(cfg.MaxTokens)
	gql.SetDisableSuggestion(!cfg.DevMode)
	gql.SetErrorPresenter(presentError(cfg.Logger))
	gql.SetRecoverFunc(recoverPanic(cfg.Logger))
	gql.Use(operationLimits{maxDepth: cfg.MaxDepth, dev: cfg.DevMode})
	gql.Use(extension.FixedComplexityLimit(cfg.MaxComplexity))
	gql.AroundOperations(s.aroundOperations)
	store := cfg.Runner.Store()
	gql.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		return next(withLoaders(ctx, store))
	})
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
			writeError(w, http.StatusForbidden, CodeForbidden, "origin "+origin+" is not allowed")
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

// serveGraphQL checks the method, the size and the token, then hands over to gqlgen.
func (s *server) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	upgrade := r.Header.Get("Upgrade") != ""
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
			writeError(w, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Sprintf("query string is larger than %d bytes", s.cfg.MaxBodyBytes))
			return
		}
		if strings.Contains(r.URL.RawQuery, "%00") || strings.Contains(r.URL.RawQuery, `\u0000`) {
			writeError(w, http.StatusBadRequest, CodeBadUserInput, nulMessage)
			return
		}
	case r.Method == http.MethodPost && !upgrade:
	default:
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, CodeBadRequest, "use POST, GET (queries only) or a WebSocket")
		return
	}

	ctx := r.Context()
	if header := r.Header.Get("Authorization"); header != "" {
		token, ok := bearerToken(header)
		if !ok {
			writeUnauthenticated(w, "the Authorization header must be: Bearer <token>")
			return
		}
		v, err := s.auth.authenticate(ctx, token)
		switch {
		case errors.Is(err, errBadToken):
			writeUnauthenticated(w, "unknown or revoked token")
			return
		case err != nil:
			ref := runner.NewErrorRef()
			s.log.ErrorContext(ctx, "graph: authenticate", "ref", ref, "err", err)
			writeError(w, http.StatusInternalServerError, CodeInternal, runner.InternalMessage(ref))
			return
		}
		ctx = withViewer(ctx, v)
	} else if !upgrade {
		// WebSocket clients authenticate in connection_init instead.
		writeUnauthenticated(w, "authentication required: send Authorization: Bearer <token>")
		return
	}
	if upgrade {
		ctx = context.WithValue(ctx, wsSessionKey{}, &wsSession{})
	}

	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Sprintf("request body is larger than %d bytes", s.cfg.MaxBodyBytes))
				return
			}
			writeError(w, http.StatusBadRequest, CodeBadRequest, "could not read the request body")
			return
		}
		if bytes.Contains(body, []byte(`\u0000`)) || bytes.IndexByte(body, 0) >= 0 {
			writeError(w, http.StatusBadRequest, CodeBadUserInput, nulMessage)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.gql.ServeHTTP(w, r.WithContext(ctx))
}

// aroundOperations makes sure every operation has a caller (a defence in depth: the HTTP and
// WebSocket entrances already refuse anonymous requests) and keeps subscriptions on
// WebSockets.
func (s *server) aroundOperations(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	v := viewerFrom(ctx)
	if v == nil {
		return graphql.OneShot(errorResponse(CodeUnauthenticated, errUnauthenticated.Error()))
	}
	if op := graphql.GetOperationContext(ctx).Operation; op != nil && op.Operation == ast.Subscription {
		if !v.websocket {
			return graphql.OneShot(errorResponse(CodeBadRequest, "subscriptions are served over WebSocket only"))
		}
		if subs, ok := ctx.Value(subscriptionsKey{}).(*subscriptionCount); ok {
			release, ok := subs.acquire(s.maxSubs)
			if !ok {
				return graphql.OneShot(errorResponse(CodeTooManySubscriptions,
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

// hasRole implements @hasRole. On a mutation it also applies the token's rate limit, and
// records every refusal in the audit log (the runner records what reaches it).
func (s *server) hasRole(ctx context.Context, _ any, next graphql.Resolver, role model.Role) (any, error) {
	v := viewerFrom(ctx)
	if v == nil {
		return nil, errUnauthenticated
	}
	fc := graphql.GetFieldContext(ctx)
	mutation := fc != nil && fc.Object == "Mutation"
	if mutation && !s.limiter.allow(v.tokenID) {
		s.auditRefusal(ctx, v, fc, CodeRateLimited)
		return nil, errRateLimited
	}
	if !v.role.AtLeast(role) {
		if mutation {
			s.auditRefusal(ctx, v, fc, CodeForbidden)
		}
		return nil, forbidden(role)
	}
	return next(ctx)
}

// auditRefusal records a mutation refused before it reached the runner. A failure to record
// is logged, and does not change the answer: the refusal stands either way.
func (s *server) auditRefusal(ctx context.Context, v *viewer, fc *graphql.FieldContext, outcome string) {
	action, target, args := describeMutation(fc)
	if err := s.runner.Audit(context.WithoutCancel(ctx), v.name, action, target, args, outcome); err != nil {
		s.log.ErrorContext(ctx, "graph: audit refused mutation", "action", action, "actor", v.name, "outcome", outcome, "err", err)
	}
}

// describeMutation returns a mutation field's action, its target in the audit log's form
// (job:<name>, run:<id>, replay:<id>, ledger:<id>, cluster) and its input as a JSON object.
func describeMutation(fc *graphql.FieldContext) (action, target string, args map[string]any) {
	action = fc.Field.Name
	if action == "reconcileEntry" {
		action = "reconcile" // the runner's name for it
	}
	args = map[string]any{}
	if in, ok := fc.Args["input"]; ok {
		if b, err := json.Marshal(in); err == nil {
			_ = json.Unmarshal(b, &args)
		}
	}
	return action, auditTarget(action, args), args
}

// auditTarget names what a mutation acts on, as the runner's audit rows do.
func auditTarget(action string, args map[string]any) string {
	if name, ok := args["name"].(string); ok {
		return "job:" + name
	}
	for _, k := range []struct{ arg, typ, prefix string }{
		{"runId", typeRun, "run:"}, {"requestId", typeReplayRequest, "replay:"}, {"entryId", typeLedgerEntry, "ledger:"},
	} {
		if id, ok := args[k.arg].(string); ok {
			if n, ok := decodeIntID(id, k.typ); ok {
				return k.prefix + strconv.FormatInt(n, 10)
			}
			return k.prefix + id
		}
	}
	if action == "setMaintenance" {
		return "cluster"
	}
	return ""
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
	var v *viewer
	switch {
	case raw != "":
		var err error
		v, err = s.auth.authenticate(ctx, raw)
		if errors.Is(err, errBadToken) {
			return refuse(4401, "unauthenticated: unknown or revoked token")
		}
		if err != nil {
			ref := runner.NewErrorRef()
			s.log.ErrorContext(ctx, "graph: authenticate websocket", "ref", ref, "err", err)
			return refuse(websocket.CloseInternalServerErr, runner.InternalMessage(ref))
		}
	case viewerFrom(ctx) != nil:
		v = viewerFrom(ctx)
	default:
		return refuse(4401, "unauthenticated: send {\"authorization\": \"Bearer <token>\"} in connection_init")
	}
	release, ok := s.conns.acquire(v.tokenID)
	if !ok {
		return refuse(4403, fmt.Sprintf("forbidden: this token already has %d WebSocket connections open", s.conns.max))
	}
	ws := *v
	ws.websocket = true
	ctx = withViewer(ctx, &ws)
	ctx = context.WithValue(ctx, releaseKey{}, release)
	ctx = context.WithValue(ctx, subscriptionsKey{}, &subscriptionCount{})
	if sess := sessionFrom(ctx); sess != nil {
		// Ending this context makes gqlgen close the connection: how the watcher closes
		// the connections of a token revoked while they are open.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		sess.mu.Lock()
		sess.tokenID, sess.cancel = v.tokenID, cancel
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
	s.log.DebugContext(ctx, "graph: websocket", "err", err)
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

// writeError answers with a GraphQL-shaped error outside of gqlgen.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorResponse(code, message))
}

func writeUnauthenticated(w http.ResponseWriter, message string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
	writeError(w, http.StatusUnauthorized, CodeUnauthenticated, message)
}
