// Package api tests Baton's GraphQL API from the outside, with reference clients: two real
// `baton serve` instances on one PostgreSQL and Redis, and the graphql-ws and
// subscriptions-transport-ws npm clients run by node (clients.mjs). `go test ./e2e/api`
// installs the clients with scripts/npm-deps.sh.
package api
