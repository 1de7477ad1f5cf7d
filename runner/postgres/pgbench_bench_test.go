package postgres

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
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
//   - BenchmarkPgbenchFencedInsert: the ledger row's INSERT behind the least fence the strict
//     path may have — the run row read under FOR SHARE by the lease's own conditions, with no
//     counters, checkpoint or heartbeat — one commit each. The share lock is the weakest that
//     keeps the recoverer's UPDATE of the run row waiting until the item commits, so it is
//     the least any per-item statement can cost and still refuse a stale worker at the moment
//     of the write.
//   - BenchmarkPgbenchCountedInsert: the strict path's own statement with its fence made that
//     least one — the share-locked read, with the run row's counters, checkpoint and heartbeat
//     left out — and everything else kept: the ledger row and the counters' upsert
//     (job_ledger_counts), one commit each. It is the least a per-item statement can cost that
//     keeps its fence and its counters in the item's own transaction, so a crash never leaves
//     the counts behind the ledger; what it gains over the item statement is what the fence's
//     UPDATE of the run row costs.
//
//   - BenchmarkPgbenchAdvisoryFencedInsert and BenchmarkPgbenchLedgerKeysInsert (below): the
//     other fence that writes nothing to the run row, and the ledger row with only its keys'
//     indexes.
//
// Each also measures its baseline beside it (insert-tps, see pgbenchBench), and the report
// judges the statement goal and its ceilings by that: the round's own pgbench run comes
// minutes earlier, and the machine's load between the two moved the ratio by more than the
// differences it was read for.

func BenchmarkPgbenchItemStatement(b *testing.B) { pgbenchBench(b, 1, itemStatementScript(b)) }

func BenchmarkPgbenchCountedInsert(b *testing.B) { pgbenchBench(b, 1, countedInsertScript(b)) }

func BenchmarkPgbenchLedgerInsert(b *testing.B) { pgbenchBench(b, 1, ledgerInsertScript) }

func BenchmarkPgbenchFencedInsert(b *testing.B) { pgbenchBench(b, 1, fencedInsertScript) }

// BenchmarkPgbenchAdvisoryFencedInsert is the ledger row's INSERT behind the other fence a
// statement can have without writing to the run row: a shared advisory lock on the run
// (pg_advisory_xact_lock_shared), then the run row read by the lease's conditions with a
// snapshot taken after the lock, in a VOLATILE PL/pgSQL function so that it stays one
// statement. A takeover would take the same lock exclusively before changing the lease, so
// that it waits for writes in flight and they, once it commits, see the new lease. Only the
// writer's side is measured: what this fence costs each item, against the share-locked read
// of BenchmarkPgbenchFencedInsert, which writes the lock into the run row's tuple and the WAL.
func BenchmarkPgbenchAdvisoryFencedInsert(b *testing.B) {
	pgbenchBench(b, 1, func(run, gen int64) string {
		return fmt.Sprintf(`SELECT bench_fenced_insert(%d + :client_id, 'tok', 'j' || :client_id, %d, 't' || :n, 'bt_' || :n)`, run, gen)
	}, `CREATE FUNCTION bench_fenced_insert(r bigint, tok text, job text, gen bigint, target text, key text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
	PERFORM pg_advisory_xact_lock_shared(7, r::int);
	INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, run_id)
	SELECT job, gen, target, '', 'CONFIRMED', 1, key, id FROM job_runs
	WHERE id = r AND lease_token = tok AND status = 'RUNNING' AND lease_until > clock_timestamp();
	RETURN FOUND;
END $f$`)
}

// BenchmarkPgbenchLedgerKeysInsert is BenchmarkPgbenchLedgerInsert on a job_ledger left with
// only the indexes of its keys (the primary key and the unique (job, generation, target, step)
// every ledger write is judged by); the indexes that serve the ledger's reads (by run, by job,
// by target prefix, the partial ones of open states) are dropped first. It is the least a
// ledger row committed on its own can cost here, however few indexes a design keeps.
func BenchmarkPgbenchLedgerKeysInsert(b *testing.B) {
	pgbenchBench(b, 1, ledgerInsertScript, `DO $$
DECLARE i regclass;
BEGIN
	FOR i IN SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'job_ledger'::regclass AND NOT indisprimary AND NOT indisunique LOOP
		EXECUTE 'DROP INDEX ' || i;
	END LOOP;
END $$`)
}

// The 8-connection forms are the ceilings of 8 concurrent strict runs
// (BenchmarkProcessStrictConcurrent): each connection writes its own run of its own job, as
// each of those runs does, against pgbench's 8-connection INSERT+COMMIT.
func BenchmarkPgbenchItemStatement8(b *testing.B) { pgbenchBench(b, 8, itemStatementScript(b)) }

func BenchmarkPgbenchLedgerInsert8(b *testing.B) { pgbenchBench(b, 8, ledgerInsertScript) }

func BenchmarkPgbenchFencedInsert8(b *testing.B) { pgbenchBench(b, 8, fencedInsertScript) }

// itemStatementScript is the fresh single-item statement with its parameters written in:
// pgbench's client c writes run run+c of job "j<c>".
func itemStatementScript(b *testing.B) func(run, gen int64) string {
	return statementScript(b, freshItemSQL)
}

// countedInsertScript is the fresh single-item statement with the least fence in place of the
// fenced UPDATE of the run row (see BenchmarkPgbenchCountedInsert).
func countedInsertScript(b *testing.B) func(run, gen int64) string {
	fence := fenceCTE(`true`, stmtClock)
	if !strings.Contains(freshItemSQL, fence) {
		b.Fatal("the item statement no longer starts with the fenced UPDATE of the run row: the statement changed")
	}
	return statementScript(b, strings.Replace(freshItemSQL, fence, `fence AS (
	SELECT id FROM job_runs WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > `+stmtClock+`
	FOR SHARE
)`, 1))
}

// statementScript writes the parameters of the fresh single-item statement into sql, a form
// of it.
func statementScript(b *testing.B, sql string) func(run, gen int64) string {
	return func(run, gen int64) string {
		args := map[int]string{1: fmt.Sprintf("(%d + :client_id)", run), 2: "'tok'", 3: "1", 4: "1", 5: "0", 6: "0", 7: "0",
			8: "('c' || :n)", 9: "('j' || :client_id)", 10: strconv.FormatInt(gen, 10), 11: "('t' || :n)", 12: "''",
			13: "'CONFIRMED'", 14: "1", 15: "('bt_' || :n)", 16: "''", 17: "false", 18: "false", 19: "NULL::text",
			20: "NULL::text", 21: "NULL::text", 22: "NULL::text", 23: "0", 24: "true", 25: "''", 26: "''"}
		return regexp.MustCompile(`\$(\d+)`).ReplaceAllStringFunc(sql, func(p string) string {
			n, _ := strconv.Atoi(p[1:])
			v, ok := args[n]
			if !ok {
				b.Fatalf("the item statement's parameter $%d has no value here: the statement changed", n)
			}
			return v
		})
	}
}

func ledgerInsertScript(run, gen int64) string {
	return fmt.Sprintf(`INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, run_id)
VALUES ('j' || :client_id, %d, 't' || :n, '', 'CONFIRMED', 1, 'bt_' || :n, %d + :client_id)`, gen, run)
}

func fencedInsertScript(run, gen int64) string {
	return fmt.Sprintf(`WITH fence AS (
	SELECT id FROM job_runs WHERE id = %d + :client_id AND lease_token = 'tok' AND status = 'RUNNING' AND lease_until > statement_timestamp()
	FOR SHARE
)
INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, run_id)
SELECT 'j' || :client_id, %d, 't' || :n, '', 'CONFIRMED', 1, 'bt_' || :n, id FROM fence`, run, gen)
}

// pgbenchBench runs the statement script(run, gen) gives b.N times in all from pgbench over
// clients connections, on a fresh schema (changed first by the setup statements) holding one RUNNING run per client (jobs "j0"…,
// runs run, run+1, …, all of generation gen), and reports its tps and the machine's CPU per
// transaction (all cores, PostgreSQL and pgbench alike). Every transaction writes a new target
// (:n is random over 2^62), which it checks by counting the ledger's rows.
//
// It also reports insert-tps, the statement's baseline measured beside it: pgbench's
// single-row INSERT+COMMIT (the script `make bench` measures pgbench by) into a scratch table
// of the same schema, over the same connections, b.N transactions in all, half just before
// the statement and half just after. The ratio of tps to insert-tps is the issue-19 goal's
// with both sides under the same load at the same moment, where the round's own pgbench run
// comes minutes earlier (ADR 5).
func pgbenchBench(b *testing.B, clients int, script func(run, gen int64) string, setup ...string) {
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		b.Skip("pgbench is not installed (Debian: postgresql-client)")
	}
	u := testenv.Schema(b)
	s := New(testenv.Pool(b, u))
	run, gen := runningRuns(b, s, clients)
	for _, sql := range append(setup, `CREATE TABLE pgbench_insert (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int NOT NULL)`) {
		if _, err := s.pool.Exec(context.Background(), sql); err != nil {
			b.Fatal(err)
		}
	}
	conninfo, err := libpqURL(u)
	if err != nil {
		b.Fatal(err)
	}
	statement := pgbenchScript(b, "\\set n random(1, 4611686018427387904)\n"+stripComments(script(run, gen))+";\n")
	insert := pgbenchScript(b, "INSERT INTO pgbench_insert (v) VALUES (1);\n")
	n := max(b.N/clients, 1)
	b.ResetTimer()
	before := runPgbench(b, pgbench, conninfo, insert, clients, max(n/2, 1))
	cpu0, cpuErr := readMachineCPU()
	tps := runPgbench(b, pgbench, conninfo, statement, clients, n)
	cpu1, _ := readMachineCPU()
	after := runPgbench(b, pgbench, conninfo, insert, clients, max(n-n/2, 1))
	b.StopTimer()
	// Every transaction writes one ledger row: fewer means a fence refused or a script wrote
	// nothing, and the tps would be of a statement that did not do its work.
	var written int64
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM job_ledger`).Scan(&written); err != nil {
		b.Fatal(err)
	}
	if written != int64(clients*n) {
		b.Fatalf("%d transactions wrote %d ledger rows: the script does not write what it measures", clients*n, written)
	}
	b.ReportMetric(tps, "tps")
	// The two halves' transactions over their time together.
	nb, na := float64(max(n/2, 1)), float64(max(n-n/2, 1))
	b.ReportMetric((nb+na)/(nb/before+na/after), "insert-tps")
	if cpuErr == nil {
		cores := cpu1.coresSince(cpu0)
		b.ReportMetric(cores, "machine-cores")
		b.ReportMetric(cores*1e6/tps, "machine-cpu-us/tx")
	}
}

// stripComments removes the SQL line comments from a statement before it goes into a pgbench script.
func stripComments(sql string) string {
	return regexp.MustCompile(`--[^\n]*`).ReplaceAllString(sql, "")
}

// pgbenchScript writes text to a script file for pgbench and returns its path.
func pgbenchScript(b *testing.B, text string) string {
	file, err := os.CreateTemp(b.TempDir(), "script-*.sql")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := file.WriteString(text); err != nil {
		b.Fatal(err)
	}
	if err := file.Close(); err != nil {
		b.Fatal(err)
	}
	return file.Name()
}

// runPgbench runs pgbench's prepared-statement mode with the script file over clients
// connections, n transactions each, and returns its tps.
func runPgbench(b *testing.B, pgbench, conninfo, file string, clients, n int) float64 {
	out, err := exec.Command(pgbench, "-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)),
		"-t", strconv.Itoa(n), "-f", file, conninfo).CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindSubmatch(out)
	if m == nil {
		b.Fatalf("no tps in pgbench's output:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	if tps <= 0 {
		b.Fatalf("pgbench reported %v tps:\n%s", tps, out)
	}
	return tps
}

// runningRuns registers jobs "j0" … "j<n-1>" and starts a RUNNING run of each under lease
// token "tok", with consecutive ids, and returns the first id and their generation.
func runningRuns(b *testing.B, s *Store, n int) (first, gen int64) {
	ctx := context.Background()
	for k := range n {
		name := fmt.Sprintf("j%d", k)
		if err := s.EnsureJobs(ctx, []store.JobDefaults{{Name: name, Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90}}); err != nil {
			b.Fatal(err)
		}
		run, err := s.InsertRun(ctx, store.NewRun{JobName: name, Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: "t", Instance: "t", Token: "tok", LeaseSeconds: 86400})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Activate(ctx, store.Fence{RunID: run.ID, Token: "tok"}); err != nil {
			b.Fatal(err)
		}
		if k == 0 {
			first, gen = run.ID, run.Generation
		} else if run.ID != first+int64(k) || run.Generation != gen {
			b.Fatalf("run %d of job %s (generation %d): want id %d, generation %d", run.ID, name, run.Generation, first+int64(k), gen)
		}
	}
	return first, gen
}

// machineCPU is the machine's CPU time from /proc/stat, in clock ticks: busy and all.
type machineCPU struct{ busy, total int64 }

func readMachineCPU() (machineCPU, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var c machineCPU
	for i, f := range fields[1:] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("/proc/stat: %w", err)
		}
		c.total += v
		if i != 3 && i != 4 { // idle, iowait
			c.busy += v
		}
	}
	return c, nil
}

// coresSince is how many of the machine's cores were busy, on average, since c0.
func (c machineCPU) coresSince(c0 machineCPU) float64 {
	if c.total <= c0.total {
		return 0
	}
	return float64(runtime.NumCPU()) * float64(c.busy-c0.busy) / float64(c.total-c0.total)
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
