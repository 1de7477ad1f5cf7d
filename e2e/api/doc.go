// Package api tests Baton's GraphQL API from the outside, with reference npm packages run by
// node against real `baton serve` instances on a private PostgreSQL and Redis:
//
//   - the WebSocket clients graphql-ws and subscriptions-transport-ws, on two instances
//     (clients.mjs, TestReferenceClients);
//   - graphql-http's GraphQL-over-HTTP audit suite, on one (audit.mjs,
//     TestGraphQLOverHTTPAudit), which fails on any audit that is not ok.
//
// `go test ./e2e/api` installs the packages with scripts/npm-deps.sh.
package api
