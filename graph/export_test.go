package graph

import (
	"context"
	"net/http"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner/postgres"
)

// The fuzz targets are internal tests (they check the unexported id and cursor codecs too),
// yet they drive the real HTTP endpoint and mint a real token, both of package httpapi, which
// imports this package. An internal test cannot import it back; the external test package
// sets these in endpoint_test.go instead.
var (
	// HTTPEndpoint returns the /graphql endpoint over cfg (httpapi.NewHandler).
	HTTPEndpoint func(cfg Config) http.Handler
	// MintToken mints an API token (httpapi.CreateToken).
	MintToken func(ctx context.Context, s *postgres.Store, name string, role model.Role) (string, error)
)
