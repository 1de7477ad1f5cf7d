package migrations_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/demo"
	"github.com/baton-run/baton/internal/testenv"
)

// TestUpCreatesNoDemoTable checks that a production `baton migrate up` on a fresh database
// creates none of the demo's tables: neither one named demo_* nor any table the demo's own
// migrations create (found by applying them on top and taking the difference).
func TestUpCreatesNoDemoTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.Schema(t) // the product's migrations, and only those
	product := testenv.Tables(t, url)
	if !slices.Contains(product, "job_runs") {
		t.Fatalf("the product's migrations left %v: no job_runs, so the listing looks in the wrong place", product)
	}
	for _, name := range product {
		if strings.HasPrefix(name, "demo_") {
			t.Errorf("the product's migrations created demo table %s (all tables: %v)", name, product)
		}
	}

	if err := demo.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, name := range testenv.Tables(t, url) {
		if !slices.Contains(product, name) {
			added = append(added, name)
		}
	}
	if len(added) == 0 {
		t.Fatal("the demo's migrations added no table to the product's schema")
	}
	for _, name := range added {
		// Every demo table is named demo_*, which is what makes the prefix check above complete.
		if !strings.HasPrefix(name, "demo_") {
			t.Errorf("the demo's migrations created %s, a table not named demo_*", name)
		}
	}
}
