package graph_test

import (
	"context"
	"net/http"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/server/httpapi"
)

// init gives the internal fuzz targets the HTTP endpoint and token minting (see
// export_test.go).
func init() {
	graph.HTTPEndpoint = func(cfg graph.Config) http.Handler {
		return httpapi.NewHandler(httpapi.Config{GraphQL: cfg})
	}
	graph.MintToken = func(ctx context.Context, s *postgres.Store, name string, role model.Role) (string, error) {
		tok, _, err := httpapi.CreateToken(ctx, s, name, role)
		return tok, err
	}
}
