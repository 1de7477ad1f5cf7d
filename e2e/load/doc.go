// Package load holds Baton's load tests: several instances of cmd/loadnode (package server
// with jobs that commit no-op items as fast as Baton can) on a fresh database, GraphQL clients
// querying every instance without pause, WebSocket subscribers (graphql-transport-ws) following
// the runs' progress and events, and runs committing items throughout. The tests assert that
// no request is answered 5xx or with an internal error and that every subscriber receives its
// run's final state, and report API latency and items per second.
//
// TestLoadSmoke, a small and short form, runs in `go test` (and so in `make test`);
// TestSoakLoad, the full load (200 clients, 1,000 subscribers, 3 runs for 2 minutes), runs
// behind the soak build tag (`make soak`) and writes its report to .data/soak/report.txt.
// Traffic goes to 127.0.0.1 only.
package load
