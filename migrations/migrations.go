// Package migrations holds Baton's PostgreSQL schema as golang-migrate SQL files, embedded in
// the binary, and the functions that apply them.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
)

//go:embed *.sql
var files embed.FS

// advisoryLockKey serialises migrations across instances starting at once. It is fixed so
// every Baton binary, whatever its version, takes the same lock.
const advisoryLockKey int64 = 0x6261746f6e // "baton"

// product is Baton's own schema: the files here, versions in golang-migrate's default table.
var product = Chain{Files: files, LockKey: advisoryLockKey}

// Chain is one golang-migrate history: its SQL files, the table that records how far a
// database has come, and the advisory lock that serialises instances applying it. The
// product's schema is one chain; a component that keeps tables of its own beside it (the demo
// jobs) is another, with its own table, so its files never enter the product's history and
// `baton migrate` never applies them.
type Chain struct {
	Files   fs.FS  // the *.sql files, at the root
	Table   string // the version table; "" is golang-migrate's schema_migrations
	LockKey int64  // a session-level advisory lock no other chain uses
}

// Up applies every pending migration. It holds a session-level advisory lock for the whole
// run, so N instances starting together migrate once and the rest wait, then find nothing to do.
func Up(ctx context.Context, databaseURL string) error { return product.Up(ctx, databaseURL) }

// Down rolls back the given number of migrations (all of them when steps <= 0).
func Down(ctx context.Context, databaseURL string, steps int) error {
	return product.Down(ctx, databaseURL, steps)
}

// Version reports the applied schema version and whether the last migration failed half-way.
func Version(ctx context.Context, databaseURL string) (version uint, dirty bool, err error) {
	return product.Version(ctx, databaseURL)
}

// Up applies every pending migration of the chain under its lock, as the package's Up does.
func (c Chain) Up(ctx context.Context, databaseURL string) error {
	return c.withLock(ctx, databaseURL, func(m *migrate.Migrate) error {
		if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return fmt.Errorf("migrate up: %w", err)
		}
		return nil
	})
}

// Down rolls back the given number of the chain's migrations (all of them when steps <= 0).
func (c Chain) Down(ctx context.Context, databaseURL string, steps int) error {
	return c.withLock(ctx, databaseURL, func(m *migrate.Migrate) error {
		var err error
		if steps <= 0 {
			err = m.Down()
		} else {
			err = m.Steps(-steps)
		}
		if err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return fmt.Errorf("migrate down: %w", err)
		}
		return nil
	})
}

// Version reports the chain's applied version and whether its last migration failed half-way.
func (c Chain) Version(ctx context.Context, databaseURL string) (version uint, dirty bool, err error) {
	err = c.withLock(ctx, databaseURL, func(m *migrate.Migrate) error {
		version, dirty, err = m.Version()
		if errors.Is(err, migrate.ErrNilVersion) {
			version, dirty, err = 0, false, nil
		}
		return err
	})
	return version, dirty, err
}

// Latest reports the highest migration version embedded in this binary.
func Latest() (uint, error) {
	src, err := iofs.New(files, ".")
	if err != nil {
		return 0, err
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		return 0, err
	}
	for {
		next, err := src.Next(v)
		if err != nil {
			return v, nil
		}
		v = next
	}
}

func (c Chain) withLock(ctx context.Context, databaseURL string, fn func(*migrate.Migrate) error) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect for migrations: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", c.LockKey); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", c.LockKey) //nolint:errcheck

	src, err := iofs.New(c.Files, ".")
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, migrateURL(databaseURL, c.Table))
	if err != nil {
		return fmt.Errorf("open migrations: %w", err)
	}
	defer m.Close()
	return fn(m)
}

// migrateURL turns a postgres:// URL into the pgx5:// form golang-migrate's pgx driver wants,
// naming the version table when it is not the default one (the driver strips x- parameters
// before it connects).
func migrateURL(databaseURL, table string) string {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return databaseURL
	}
	if u.Scheme == "postgres" || u.Scheme == "postgresql" {
		u.Scheme = "pgx5"
	}
	if table != "" {
		q := u.Query()
		q.Set("x-migrations-table", table)
		u.RawQuery = q.Encode()
	}
	return u.String()
}
