package postgres_test

import (
	"testing"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store/storetest"
)

// TestStore runs the store's conformance suite against PostgreSQL, each test on a fresh schema.
func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.DB {
		pool := testenv.Postgres(t)
		return storetest.DB{Store: postgres.New(pool), Pool: pool}
	})
}
