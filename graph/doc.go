// Package graph is Baton's GraphQL admin API: a gqlgen schema (graph/*.graphqls), thin
// resolvers over the runner, bearer-token authentication with roles, limits, and live
// subscriptions fed by the pubsub Hub.
//
// NewHandler returns the endpoint; NewEventPublisher returns the runner's EventSink that
// feeds the subscriptions of every instance; CreateToken mints API tokens.
//
// Regenerate the executable schema after editing the schema with `go generate ./graph/...`.
package graph
