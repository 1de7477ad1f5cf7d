package graph_test

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/server/httpapi"
)

// init gives the internal fuzz targets the HTTP endpoint and token minting (see
// export_test.go).
func init() {
	graph.HTTPEndpoint = func(cfg graph.Config, pool *pgxpool.Pool) http.Handler {
		return httpapi.NewHandler(httpapi.Config{GraphQL: cfg, Tokens: httpapi.NewTokenStore(pool)})
	}
	graph.MintToken = func(ctx context.Context, pool *pgxpool.Pool, name string, role model.Role) (string, error) {
		tok, _, err := httpapi.CreateToken(ctx, httpapi.NewTokenStore(pool), name, role)
		return tok, err
	}
}
