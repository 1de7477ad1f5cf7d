package demo

import (
	"context"
	_ "embed"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/migrations"
)

// oldProductDemoTables is the product's migration 3 as binaries before the demo had its own
// migrations shipped it: what a database they migrated holds.
//
//go:embed testdata/product_000003_demo_provider.up.sql
var oldProductDemoTables string

// demoTables are the tables the demo's jobs read and write.
var demoTables = []string{"demo_collected", "demo_provider_effects"}

func TestMigrateCreatesTheDemoTablesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.Schema(t)
	if got := testenv.Tables(t, url); slices.ContainsFunc(demoTables, func(n string) bool { return slices.Contains(got, n) }) {
		t.Fatalf("the product's migrations alone made demo tables: %v", got)
	}
	// Three at once, as three demo instances starting together: one migrates, the others wait
	// on the chain's lock and then find nothing to do.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = Migrate(ctx, url) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Migrate %d: %v", i, err)
		}
	}
	got := testenv.Tables(t, url)
	for _, n := range append(slices.Clone(demoTables), MigrationsTable) {
		if !slices.Contains(got, n) {
			t.Errorf("after Migrate no table %s in %v", n, got)
		}
	}
	wantVersions(t, ctx, url)
	if err := Migrate(ctx, url); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	wantVersions(t, ctx, url)
}

// TestMigrateKeepsTablesAnOldBinaryMade runs the demo's migrations over a database migrated
// when the product's migration 3 made the demo tables: the tables and their rows stay, the
// demo's chain records its version, and the product's history is untouched.
func TestMigrateKeepsTablesAnOldBinaryMade(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := testenv.Schema(t)
	pool := testenv.Pool(t, url)
	if _, err := pool.Exec(ctx, oldProductDemoTables); err != nil {
		t.Fatalf("old migration 3: %v", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO demo_collected (page, business_date, items, run_id) VALUES (1, '2026-01-02', 7, 42);
		INSERT INTO demo_provider_effects (idempotency_key, target_key, amount) VALUES ('k', 'acct:0001', 5)`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := Migrate(ctx, url); err != nil {
			t.Fatalf("Migrate over an old binary's schema: %v", err)
		}
		wantVersions(t, ctx, url)
		var pages, effects int
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM demo_collected), (SELECT count(*) FROM demo_provider_effects)`).Scan(&pages, &effects); err != nil {
			t.Fatal(err)
		}
		if pages != 1 || effects != 1 {
			t.Fatalf("after Migrate %d collected pages and %d effects, want the old binary's 1 and 1", pages, effects)
		}
	}
	// The provider still works on the kept table: its identity column goes on counting.
	p := NewProvider(pool, quiet)
	if eff, err := p.Apply(ctx, Payment{IdempotencyKey: "k2", Target: "acct:0002", Amount: 9}); err != nil || eff.ID != 2 {
		t.Fatalf("apply on the kept table: %+v, %v", eff, err)
	}
}

// wantVersions checks the product at its latest version and the demo's chain at its own, clean.
func wantVersions(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if v, dirty, err := migrations.Version(ctx, url); err != nil || dirty || v != latest {
		t.Fatalf("product schema at version %d (dirty %v, %v), want %d", v, dirty, err, latest)
	}
	if v, dirty, err := schema.Version(ctx, url); err != nil || dirty || v != 1 {
		t.Fatalf("demo schema at version %d (dirty %v, %v), want 1", v, dirty, err)
	}
}
