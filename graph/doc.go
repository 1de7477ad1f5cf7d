// Package graph is Baton's GraphQL admin API and nothing but GraphQL: a gqlgen schema
// (graph/*.graphqls), thin resolvers over the runner, loaders and prefetch, the @hasRole
// directive with the per-token mutation rate limit, the depth, complexity and token limits,
// the error presenter, and live subscriptions fed by the pubsub Hub.
//
// NewServer returns gqlgen's server for the schema, without transports; server/httpapi
// carries it over HTTP and WebSocket, authenticates each request and puts its Caller in the
// context (WithCaller). NewEventPublisher returns the runner's EventSink that feeds the
// subscriptions of every instance.
//
// Regenerate the executable schema after editing the schema with `go generate ./graph/...`.
package graph
