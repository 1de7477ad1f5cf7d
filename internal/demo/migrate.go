package demo

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/migrations"
	"github.com/baton-run/baton/runner"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// MigrationsTable records how far a database has come in the demo's own migrations. It is
// not the product's schema_migrations: the demo's tables are no part of Baton's schema, so
// `baton migrate` neither creates nor drops them (docs/adr/0007-demo-schema.md).
const MigrationsTable = "demo_schema_migrations"

// migrationLockKey serialises demo instances migrating at once, apart from the product's lock.
const migrationLockKey int64 = 0x62746e64656d6f // "btndemo"

// schema is the demo's migration chain.
var schema = func() migrations.Chain {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded above; only a broken build gets here
	}
	return migrations.Chain{Files: sub, Table: MigrationsTable, LockKey: migrationLockKey}
}()

// Migrate creates the demo's tables in databaseURL's database (its search_path's schema),
// applying every pending demo migration. It is safe to call from several instances at once and
// again on every start, and over a database an older binary migrated, whose product schema
// held these tables: the first demo migration keeps them and their rows.
func Migrate(ctx context.Context, databaseURL string) error {
	if err := schema.Up(ctx, databaseURL); err != nil {
		return fmt.Errorf("demo schema: %w", err)
	}
	return nil
}

// Setup migrates the demo's tables in pool's database, then returns the demo jobs and their
// provider as Jobs does: what a server that serves the demo calls on its pool. A source or
// provider limit that cannot be (CollectConfig.SourceLimit, ProviderConfig.Limit) is refused
// with an INVALID_INPUT error before anything is done.
func Setup(ctx context.Context, pool *pgxpool.Pool, cfg Config) ([]runner.Job, *Provider, error) {
	if err := cfg.Collect.SourceLimit.validate(); err != nil {
		return nil, nil, fmt.Errorf("demo-collect source limit: %w", err)
	}
	if err := cfg.Provider.Limit.validate(); err != nil {
		return nil, nil, fmt.Errorf("demo provider limit: %w", err)
	}
	if err := Migrate(ctx, pool.Config().ConnString()); err != nil {
		return nil, nil, err
	}
	jobs, p := Jobs(pool, cfg)
	return jobs, p, nil
}
