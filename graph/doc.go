// Package graph is Baton's GraphQL admin API and nothing but GraphQL: a gqlgen schema
// (graph/*.graphqls), thin resolvers over the runner, loaders and prefetch, the @hasRole
// directive with the per-token mutation rate limit, the depth, complexity and token limits,
// the error presenter, and the subscriptions, which map the streams of package live.
//
// NewServer returns gqlgen's server for the schema, without transports; server/httpapi
// carries it over HTTP and WebSocket, authenticates each request and puts its Caller in the
// context (WithCaller). Every read goes through the runner's services (Runner.Runs,
// Runner.Jobs, …); graph never reaches the store itself.
//
// Regenerate the executable schema after editing the schema with `go generate ./graph/...`.
package graph
