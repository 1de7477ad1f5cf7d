package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
)

// BenchmarkListQueries times a page (20 rows) of each list query shape on the tables of
// TestListQueryPlansUseIndexes (200k ledger rows, 100k runs, ...), after ten executions of the
// shape (so that a cached prepared statement would have gone to its generic plan): p50-ms.
func BenchmarkListQueries(b *testing.B) {
	ctx := context.Background()
	url := testenv.Schema(b)
	pool := testenv.Pool(b, url)
	ids := loadListTablesB(b, pool)
	s := postgres.New(pool)
	shapes := []struct {
		name string
		run  func() error
	}{
		{"ledger-job-recent", func() error {
			_, err := s.Ledger(ctx, store.LedgerQuery{JobName: "recent"})
			return err
		}},
		{"ledger-job-run", func() error {
			_, err := s.Ledger(ctx, store.LedgerQuery{JobName: "recent", RunID: ids.recentRun})
			return err
		}},
		{"runs-active", func() error {
			_, err := s.Runs(ctx, store.RunFilter{Statuses: []bt.RunStatus{bt.StatusStarting, bt.StatusRunning}})
			return err
		}},
		{"runs-job", func() error {
			_, err := s.Runs(ctx, store.RunFilter{JobName: "recent"})
			return err
		}},
		{"replays-pending", func() error {
			_, err := s.ReplayRequests(ctx, []bt.ReplayStatus{bt.ReplayPendingApproval}, 0, 20)
			return err
		}},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			for range 10 {
				if err := sh.run(); err != nil {
					b.Fatal(err)
				}
			}
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := sh.run(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "p50-ms")
		})
	}
}
