package graph

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/graph/model"
)

// The fuzz targets are internal tests (they check the unexported id and cursor codecs too),
// yet they drive the real HTTP endpoint and mint a real token, both of package httpapi, which
// imports this package. An internal test cannot import it back; the external test package
// sets these in endpoint_test.go instead.
var (
	// HTTPEndpoint returns the /graphql endpoint over cfg, its tokens in pool's api_tokens
	// (httpapi.NewHandler).
	HTTPEndpoint func(cfg Config, pool *pgxpool.Pool) http.Handler
	// MintToken mints an API token in pool's api_tokens (httpapi.CreateToken).
	MintToken func(ctx context.Context, pool *pgxpool.Pool, name string, role model.Role) (string, error)
)
