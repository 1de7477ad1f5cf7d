package graph

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/graph/generated"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
)

// Config configures the GraphQL schema and its execution. Runner is required; every other
// field has a default.
type Config struct {
	// Runner serves every read and operation. The instance's own worker pool runs the jobs
	// started through this endpoint.
	Runner *runner.Runner
	// Hub delivers live events from every instance. Nil makes subscriptions poll the
	// database every PollInterval instead (reads of one run shared by its subscribers).
	Hub *pubsub.Hub
	// DevMode turns introspection on for every role and shows field suggestions in
	// validation errors. Off, introspection needs OPERATOR or higher.
	DevMode bool
	// Logger receives internal errors (whose text clients never see). Nil means
	// slog.Default().
	Logger *slog.Logger

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
	// PollInterval is how often subscriptions re-read the database when Hub is nil; 0
	// means 1s.
	PollInterval time.Duration
	// BatchWait is how long a response's loaders gather the keys of a page before they
	// query (one query per kind of read, not one per item); 0 means 2ms. A longer wait adds
	// its length to each batched read of a response, and keeps the batches whole on a host
	// too busy to schedule a page's resolvers within 2ms.
	BatchWait time.Duration
	// AlertPollInterval is how often alertRaised checks the active alarms; 0 means 5s.
	AlertPollInterval time.Duration
	// NowFunc is the clock of the rate limiter (and of the transport's token cache); nil
	// means time.Now.
	NowFunc func() time.Time
	// TracerProvider makes a span of each operation (operationSpans); nil makes none.
	TracerProvider trace.TracerProvider
	// LiveStats, when set, counts the work of shared subscription executions.
	LiveStats *LiveStats
	// OnError, when set, is called with the code (extensions.code) of every top-level error
	// the API answers, once per error, or with "" for one that has none: an instance counts
	// them (baton_graphql_errors_total). The codes are the API's own, the runner's and
	// gqlgen's, never a client's text.
	OnError func(code string)
	// AdmitOperation, when set, runs around each operation before a subscription joins its
	// shared execution (ADR 0030): the transport's checks and per-connection accounting, which
	// must see every subscriber. Nil admits every operation.
	AdmitOperation graphql.OperationMiddleware
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = 12
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
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.BatchWait <= 0 {
		c.BatchWait = defaultBatchWait
	}
	if c.AlertPollInterval <= 0 {
		c.AlertPollInterval = 5 * time.Second
	}
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	return c
}

// NewServer returns gqlgen's server for Baton's schema: the resolvers, @hasRole with the
// per-token mutation rate limit, the error presenter, the loaders, and the depth, complexity
// and token limits. It has no transport: the caller adds those, and must put the
// authenticated Caller in each request's context (WithCaller). It panics if cfg.Runner is
// nil.
func NewServer(cfg Config) *handler.Server {
	if cfg.Runner == nil {
		panic("graph: Config.Runner is required")
	}
	cfg = cfg.WithDefaults()
	d := &directives{runner: cfg.Runner, log: cfg.Logger}
	if cfg.MutationRatePerMinute > 0 {
		d.limiter = newRateLimiter(cfg.MutationRatePerMinute, cfg.MutationBurst, cfg.NowFunc)
	}

	var f live.Feed
	if cfg.Hub != nil {
		f = live.HubFeed(cfg.Hub)
	} else {
		f = live.NewPollFeed(cfg.PollInterval)
	}
	res := newResolver(cfg.Runner, f, cfg.Logger, cfg.AlertPollInterval)
	gcfg := generated.Config{Resolvers: res, Complexity: complexity()}
	gcfg.Directives.HasRole = d.hasRole

	gql := handler.New(generated.NewExecutableSchema(gcfg))
	gql.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	gql.SetParserTokenLimit(cfg.MaxTokens)
	gql.SetDisableSuggestion(!cfg.DevMode)
	gql.SetErrorPresenter(countErrors(presentError(cfg.Logger), cfg.OnError))
	gql.SetRecoverFunc(recoverPanic(cfg.Logger))
	if cfg.TracerProvider != nil {
		gql.Use(operationSpans{tracer: cfg.TracerProvider.Tracer("github.com/baton-run/baton/graph")})
	}
	gql.Use(operationLimits{maxDepth: cfg.MaxDepth, dev: cfg.DevMode})
	gql.Use(inputLimits{runner: cfg.Runner, log: cfg.Logger})
	gql.Use(extension.FixedComplexityLimit(cfg.MaxComplexity))
	if cfg.AdmitOperation != nil {
		gql.AroundOperations(cfg.AdmitOperation)
	}
	gql.Use(subscriptionIDs{})
	gql.AroundOperations(newSharedSubscriptions(cfg.LiveStats).intercept)
	gql.AroundOperations(trackStreams)
	gql.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		return next(withLoaders(ctx, cfg.Runner, cfg.BatchWait))
	})
	return gql
}

// directives implements the schema's directives.
type directives struct {
	runner  *runner.Runner
	log     *slog.Logger
	limiter *rateLimiter // nil: no rate limit
}

// hasRole implements @hasRole. On a mutation it also applies the token's rate limit, and
// records every refusal in the audit log (the runner records what reaches it).
func (d *directives) hasRole(ctx context.Context, _ any, next graphql.Resolver, role model.Role) (any, error) {
	v := CallerFrom(ctx)
	if v == nil {
		return nil, errUnauthenticated
	}
	fc := graphql.GetFieldContext(ctx)
	mutation := fc != nil && fc.Object == "Mutation"
	if mutation && !d.limiter.allow(v.TokenID) {
		d.auditRefusal(ctx, v, fc, CodeRateLimited)
		return nil, errRateLimited
	}
	if !v.Role.AtLeast(role) {
		if mutation {
			d.auditRefusal(ctx, v, fc, CodeForbidden)
		}
		return nil, forbidden(role)
	}
	return next(ctx)
}

// auditRefusal records a mutation refused before it reached the runner. A failure to record
// is logged, and does not change the answer: the refusal stands either way.
func (d *directives) auditRefusal(ctx context.Context, v *Caller, fc *graphql.FieldContext, outcome string) {
	action, target, args := describeMutation(fc)
	if err := d.runner.Audit().Record(context.WithoutCancel(ctx), v.Name, action, target, args, outcome); err != nil {
		d.log.ErrorContext(ctx, "graph: audit refused mutation", "action", action, "actor", v.Name, "outcome", outcome, "err", err)
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
		if action == "updateDownstream" {
			return "downstream:" + name
		}
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
	if ids, ok := args["runIds"].([]any); ok {
		// A bulk action on runs: runs:<n>,<n>,… as the runner records it.
		nums := make([]string, 0, len(ids))
		for _, v := range ids {
			id, _ := v.(string)
			if n, ok := decodeIntID(id, typeRun); ok {
				nums = append(nums, strconv.FormatInt(n, 10))
			} else {
				nums = append(nums, "?")
			}
		}
		return "runs:" + strings.Join(nums, ",")
	}
	return ""
}
