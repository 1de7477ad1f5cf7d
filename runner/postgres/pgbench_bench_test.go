package postgres

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/store/storetest"
)

// The strict path's goal is judged against pgbench's single-row INSERT+COMMIT. These two
// benchmarks run Baton's own statements from pgbench — a C client, one connection, prepared
// statements, like the baseline — so that the report can tell what the statements cost
// PostgreSQL from what the Go client adds:
//
//   - BenchmarkPgbenchItemStatement: the strict path's whole per-item statement (the fresh
//     single-item form a first run uses: fence, ledger row, counters), one commit each.
//   - BenchmarkPgbenchLedgerInsert: only the ledger row's INSERT into job_ledger with its
//     indexes, one commit each — the least any per-item ledger commit can cost.

func BenchmarkPgbenchItemStatement(b *testing.B) {
	pgbenchBench(b, func(runID, gen int64) string {
		args := map[int]string{1: strconv.FormatInt(runID, 10), 2: "'tok'", 3: "1", 4: "1", 5: "0", 6: "0", 7: "0",
			8: "('c' || :n)", 9: "'j'", 10: strconv.FormatInt(gen, 10), 11: "('t' || :n)", 12: "''",
			13: "'CONFIRMED'", 14: "1", 15: "('bt_' || :n)", 16: "''", 17: "false", 18: "false", 19: "NULL::text",
			20: "NULL::text", 21: "NULL::text", 22: "NULL::text", 23: "0", 24: "true", 25: "''", 26: "''"}
		return regexp.MustCompile(`\$(\d+)`).ReplaceAllStringFunc(freshItemSQL, func(p string) string {
			n, _ := strconv.Atoi(p[1:])
			v, ok := args[n]
			if !ok {
				b.Fatalf("the item statement's parameter $%d has no value here: the statement changed", n)
			}
			return v
		})
	})
}

func BenchmarkPgbenchLedgerInsert(b *testing.B) {
	pgbenchBench(b, func(runID, gen int64) string {
		return fmt.Sprintf(`INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, run_id)
VALUES ('j', %d, 't' || :n, '', 'CONFIRMED', 1, 'bt_' || :n, %d)`, gen, runID)
	})
}

// pgbenchBench runs the statement script(runID, gen) gives b.N times from pgbench, one
// connection, on a fresh schema holding one RUNNING run, and reports its tps. Every
// transaction writes a new target (:n is random over 2^62).
func pgbenchBench(b *testing.B, script func(runID, gen int64) string) {
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		b.Skip("pgbench is not installed (Debian: postgresql-client)")
	}
	u := testenv.Schema(b)
	s := New(testenv.Pool(b, u))
	f, gen := storetest.RunningRun(b, s, 86400)
	file := filepath.Join(b.TempDir(), "script.sql")
	text := "\\set n random(1, 4611686018427387904)\n" + regexp.MustCompile(`--[^\n]*`).ReplaceAllString(script(f.RunID, gen), "") + ";\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	conninfo, err := libpqURL(u)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	out, err := exec.Command(pgbench, "-n", "-M", "prepared", "-c", "1", "-j", "1", "-t", strconv.Itoa(b.N), "-f", file, conninfo).CombinedOutput()
	b.StopTimer()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindSubmatch(out)
	if m == nil {
		b.Fatalf("no tps in pgbench's output:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	b.ReportMetric(tps, "tps")
}

// libpqURL turns a test database URL, whose search_path is a query parameter pgx understands,
// into one libpq takes (options=-csearch_path=…).
func libpqURL(databaseURL string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if sp := q.Get("search_path"); sp != "" {
		q.Del("search_path")
		q.Set("options", "-csearch_path="+sp)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}
