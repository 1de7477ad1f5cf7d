// Package httpapi is Baton's HTTP transport for the GraphQL API: the /graphql endpoint
// (POST, GET and WebSocket, through the gorilla adapter in wsgorilla), bearer-token
// authentication and API token minting, the origin allowlist, request size and time bounds,
// the per-token WebSocket and per-connection subscription caps, and the health endpoints.
//
// It carries requests to the schema that package graph builds (graph.NewServer) and puts the
// authenticated graph.Caller in each request's context; graph knows nothing of HTTP.
package httpapi
