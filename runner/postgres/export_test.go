package postgres

import (
	"context"
	"os/exec"
	"testing"

	"github.com/baton-run/baton/internal/testenv"
)

// PgbenchItemStatement readies, on the schema at url, a RUNNING run of a job "j0" of its own
// and returns a function that runs the strict path's fresh single-item statement (what
// BenchmarkPgbenchItemStatement measures) n times from pgbench on one connection, checks that
// each wrote its ledger row, and returns pgbench's tps. It lets a benchmark of the runner
// measure the statement beside it, on the same schema (BenchmarkProcessStrictPaired).
func PgbenchItemStatement(b *testing.B, url string) func(n int) float64 {
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		b.Skip("pgbench is not installed (Debian: postgresql-client)")
	}
	s := New(testenv.Pool(b, url))
	run, gen := runningRuns(b, s, 1)
	conninfo, err := libpqURL(url)
	if err != nil {
		b.Fatal(err)
	}
	file := pgbenchScript(b, "\\set n random(1, 4611686018427387904)\n"+stripComments(itemStatementScript(b)(run, gen))+";\n")
	written := int64(0)
	return func(n int) float64 {
		tps := runPgbench(b, pgbench, conninfo, file, 1, n)
		written += int64(n)
		var rows int64
		if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM job_ledger WHERE job_name = 'j0'`).Scan(&rows); err != nil {
			b.Fatal(err)
		}
		if rows != written {
			b.Fatalf("%d statements wrote %d ledger rows: the script does not write what it measures", written, rows)
		}
		return tps
	}
}
