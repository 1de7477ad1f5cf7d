// Command report turns the raw output of one scripts/bench.sh run into BENCHMARKS.md.
//
//	report -dir .data/bench/latest -out BENCHMARKS.md
//
// The run directory holds meta.tsv (machine facts, settings), commands.tsv (the exact commands
// of a round) and round-N/ directories with the outputs of one round: pgbench-1.txt, pgbench-8.txt
// (pgbench), baton.txt (go test -bench), river*.txt (bench/river, Go benchmark format),
// redis.csv (redis-benchmark --csv), status.tsv (exit status and seconds per step) and loadavg.
//
// Every figure is summarised by its median over the rounds. A ratio against a baseline is
// computed per round (both measured in that round, so they saw the same noise) and summarised
// by the median of those per-round ratios; the ratio of the two medians is shown beside it.
// Goals are judged on the median of the per-round ratios (or of the per-round values).
//
// Every Go benchmark the run produced appears in the figures table, whatever its name. The goals
// of issues 2-4 and the scale section of issue 6 look for benchmarks by name (see goals and
// scale below); one whose benchmark does not exist yet is listed as "not measured yet".
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("dir", "../.data/bench/latest", "raw output of one scripts/bench.sh run")
	out := flag.String("out", "", "write the report here (default: standard output)")
	flag.Parse()
	run, err := load(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	text := render(run)
	if *out == "" {
		fmt.Print(text)
		return
	}
	if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

// ---------------------------------------------------------------------------------------------
// Loading

// Source groups figures in the report.
type Source int

const (
	Baseline Source = iota
	Baton
	River
)

// Figure is one measured quantity (a benchmark and a unit) with its value in each round.
type Figure struct {
	Bench  string
	Unit   string
	Source Source
	Order  int             // first appearance, to keep the benchmarks' own order
	Rounds map[int]float64 // round -> value
}

func (f *Figure) key() string { return f.Bench + "\x00" + f.Unit }

// Step is one command of one round.
type Step struct {
	Name    string
	Rc      int
	Seconds int
}

// Run is everything one bench.sh run left.
type Run struct {
	Dir      string
	Meta     map[string]string
	Commands [][2]string
	Rounds   []int
	Load     map[int]string
	Steps    map[int][]Step
	Figures  []*Figure
	byKey    map[string]*Figure
	Declared []string // Benchmark functions found in the source (declared.txt)
	GoCPU    string   // the cpu: line of go test
	Problems []string
}

const (
	pg1     = "pgbench INSERT+COMMIT, 1 connection"
	pg8     = "pgbench INSERT+COMMIT, 8 connections"
	redisOp = "redis-benchmark SET"
)

func (r *Run) add(src Source, round int, bench, unit string, v float64) {
	k := bench + "\x00" + unit
	f := r.byKey[k]
	if f == nil {
		f = &Figure{Bench: bench, Unit: unit, Source: src, Order: len(r.Figures), Rounds: map[int]float64{}}
		r.byKey[k] = f
		r.Figures = append(r.Figures, f)
	}
	if old, ok := f.Rounds[round]; ok {
		// Several lines for one benchmark in one round (-count > 1): keep their mean.
		v = (old + v) / 2
	}
	f.Rounds[round] = v
}

func (r *Run) fig(bench, unit string) *Figure { return r.byKey[bench+"\x00"+unit] }

func load(dir string) (*Run, error) {
	r := &Run{Dir: dir, Meta: map[string]string{}, Load: map[int]string{}, Steps: map[int][]Step{}, byKey: map[string]*Figure{}}
	if err := eachLine(filepath.Join(dir, "meta.tsv"), func(l string) {
		if k, v, ok := strings.Cut(l, "\t"); ok {
			r.Meta[k] = v
		}
	}); err != nil {
		return nil, err
	}
	_ = eachLine(filepath.Join(dir, "commands.tsv"), func(l string) {
		if k, v, ok := strings.Cut(l, "\t"); ok {
			r.Commands = append(r.Commands, [2]string{k, v})
		}
	})
	_ = eachLine(filepath.Join(dir, "declared.txt"), func(l string) {
		if l = strings.TrimSpace(l); l != "" {
			r.Declared = append(r.Declared, l)
		}
	})
	rounds, _ := filepath.Glob(filepath.Join(dir, "round-*"))
	for _, rd := range rounds {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(rd), "round-"))
		if err != nil {
			continue
		}
		r.Rounds = append(r.Rounds, n)
	}
	slices.Sort(r.Rounds)
	if len(r.Rounds) == 0 {
		return nil, fmt.Errorf("%s has no round-N directories", dir)
	}
	for _, n := range r.Rounds {
		rd := filepath.Join(dir, fmt.Sprintf("round-%d", n))
		if b, err := os.ReadFile(filepath.Join(rd, "loadavg")); err == nil {
			r.Load[n] = strings.TrimSpace(string(b))
		}
		_ = eachLine(filepath.Join(rd, "status.tsv"), func(l string) {
			p := strings.Split(l, "\t")
			if len(p) != 3 {
				return
			}
			rc, _ := strconv.Atoi(p[1])
			s, _ := strconv.Atoi(p[2])
			r.Steps[n] = append(r.Steps[n], Step{p[0], rc, s})
			if rc != 0 {
				r.Problems = append(r.Problems, fmt.Sprintf("round %d: %s exited %d (see %s/%s*)", n, p[0], rc, rd, p[0]))
			}
		})
		r.parsePgbench(n, filepath.Join(rd, "pgbench-1.txt"), pg1)
		r.parsePgbench(n, filepath.Join(rd, "pgbench-8.txt"), pg8)
		r.parseGoBench(n, filepath.Join(rd, "baton.txt"), Baton)
		rivers, _ := filepath.Glob(filepath.Join(rd, "river*.txt"))
		for _, f := range rivers {
			r.parseGoBench(n, f, River)
		}
		r.parseRedis(n, filepath.Join(rd, "redis.csv"))
	}
	return r, nil
}

func eachLine(path string, fn func(string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	return sc.Err()
}

var (
	tpsRE     = regexp.MustCompile(`^tps = ([0-9.]+)`)
	latRE     = regexp.MustCompile(`^latency average = ([0-9.]+) ms`)
	benchRE   = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(.*)$`)
	procsRE   = regexp.MustCompile(`-\d+$`)
	memUnitRE = regexp.MustCompile(`^(B/op|allocs/op|MB/s)$`)
)

func (r *Run) parsePgbench(round int, path, name string) {
	_ = eachLine(path, func(l string) {
		if m := tpsRE.FindStringSubmatch(l); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				r.add(Baseline, round, name, "tps", v)
			}
		}
		if m := latRE.FindStringSubmatch(l); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				r.add(Baseline, round, name, "latency-avg-ms", v)
			}
		}
	})
}

func (r *Run) parseGoBench(round int, path string, src Source) {
	_ = eachLine(path, func(l string) {
		if c, ok := strings.CutPrefix(l, "cpu: "); ok && src == Baton {
			r.GoCPU = strings.TrimSpace(c)
		}
		m := benchRE.FindStringSubmatch(l)
		if m == nil {
			return
		}
		name := procsRE.ReplaceAllString(m[1], "")
		fields := strings.Fields(m[3])
		custom := false
		type pair struct {
			v float64
			u string
		}
		var pairs []pair
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return
			}
			pairs = append(pairs, pair{v, fields[i+1]})
			if fields[i+1] != "ns/op" && !memUnitRE.MatchString(fields[i+1]) {
				custom = true
			}
		}
		for _, p := range pairs {
			// Allocation figures stay in the raw files. ns/op is kept only for benchmarks that
			// report nothing of their own (for the others it mixes setup and waiting).
			if memUnitRE.MatchString(p.u) || (p.u == "ns/op" && custom) {
				continue
			}
			r.add(src, round, name, p.u, p.v)
		}
	})
}

func (r *Run) parseRedis(round int, path string) {
	var header []string
	_ = eachLine(path, func(l string) {
		cells := strings.Split(l, ",")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), `"`)
		}
		if header == nil {
			header = cells
			return
		}
		if len(cells) != len(header) || cells[0] != "SET" {
			return
		}
		for i, h := range header {
			unit := map[string]string{"rps": "ops/s", "p50_latency_ms": "p50-ms", "p99_latency_ms": "p99-ms"}[h]
			if unit == "" {
				continue
			}
			if v, err := strconv.ParseFloat(cells[i], 64); err == nil {
				r.add(Baseline, round, redisOp, unit, v)
			}
		}
	})
}

// ---------------------------------------------------------------------------------------------
// Statistics

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (f *Figure) values() []float64 {
	var v []float64
	for _, x := range f.Rounds {
		v = append(v, x)
	}
	slices.Sort(v)
	return v
}

func (f *Figure) median() float64 { return median(f.values()) }

// perRound divides num by den in every round where both were measured.
func perRound(num, den *Figure) []float64 {
	if num == nil || den == nil {
		return nil
	}
	var out []float64
	for r, n := range num.Rounds {
		if d, ok := den.Rounds[r]; ok && d != 0 {
			out = append(out, n/d)
		}
	}
	slices.Sort(out)
	return out
}

// ---------------------------------------------------------------------------------------------
// What is compared with what

// riverFigure is River's jobs/s with the most jobs per repetition: the steady-state figure, the
// harder one to beat, which the batch goal is judged against.
func (r *Run) riverFigure() *Figure {
	var best *Figure
	bestN := -1
	re := regexp.MustCompile(`jobs=(\d+)`)
	for _, f := range r.Figures {
		if f.Source != River || f.Unit != "jobs/s" {
			continue
		}
		n := 0
		if m := re.FindStringSubmatch(f.Bench); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		if n > bestN {
			best, bestN = f, n
		}
	}
	return best
}

// baselineFor names the baseline a Baton figure is read against, if it has one.
func (r *Run) baselineFor(f *Figure) (*Figure, string) {
	switch {
	case f.Unit == "tps" && strings.HasPrefix(f.Bench, "BenchmarkPgbench") && r.fig(f.Bench, "insert-tps") != nil:
		return r.fig(f.Bench, "insert-tps"), "pgbench INSERT beside it, tps"
	case f.Unit == "items/s" && f.Bench == "BenchmarkProcessBatchPaired":
		return r.fig(f.Bench, "copy-rows/s"), "the COPY beside it, rows/s"
	case f.Unit == "items/s" && f.Bench == "BenchmarkProcessStrictPaired":
		return r.fig(f.Bench, "statement-tps"), "its statement beside it, tps"
	case f.Unit == "items/s" && strings.Contains(f.Bench, "ProcessStrictConcurrent"),
		f.Unit == "tps" && regexp.MustCompile(`^BenchmarkPgbench\w*8$`).MatchString(f.Bench):
		return r.fig(pg8, "tps"), "pgbench 8 conn tps"
	case f.Unit == "items/s" && f.Bench == "BenchmarkWriteItemsBatches",
		f.Unit == "rows/s" && (f.Bench == "BenchmarkCopyLedgerChunked" || f.Bench == "BenchmarkCopyLedgerOrdered"):
		return r.fig("BenchmarkCopyLedger", "rows/s"), "a bare COPY, rows/s"
	case f.Unit == "items/s" && regexp.MustCompile(`ProcessStrict|Write(Fresh)?Item$`).MatchString(f.Bench),
		f.Unit == "tps" && regexp.MustCompile(`^Benchmark(Pgbench|PgxInsert)`).MatchString(f.Bench):
		return r.fig(pg1, "tps"), "pgbench 1 conn tps"
	case f.Unit == "items/s" && strings.Contains(f.Bench, "ProcessBatch"):
		rf := r.riverFigure()
		if rf == nil {
			return nil, ""
		}
		return rf, "River jobs/s (" + shortRiver(rf.Bench) + ")"
	case f.Unit == "ops/s" && regexp.MustCompile(`AcquireRelease|Extend`).MatchString(f.Bench):
		return r.fig(redisOp, "ops/s"), "redis SET ops/s"
	case f.Source == Baton && regexp.MustCompile(`^p\d+-ms$`).MatchString(f.Unit) && graphStartRE.MatchString(f.Bench):
		// startJob over HTTP against Runner.Start on the same instance; with past runs loaded,
		// against the same call without them.
		m := graphStartRE.FindStringSubmatch(f.Bench)
		switch {
		case m[2] != "0":
			return r.fig("BenchmarkGraphStartJob/"+m[1]+"/history=0", f.Unit), "the same with no past runs"
		case m[1] == "http":
			return r.fig("BenchmarkGraphStartJob/runner/history=0", f.Unit), "Runner.Start, same instance"
		}
		return r.fig(pg1, "latency-avg-ms"), "one INSERT+COMMIT, ms"
	case f.Source == Baton && regexp.MustCompile(`^p\d+-ms$`).MatchString(f.Unit) && insertBaselineRE.MatchString(f.Bench):
		return r.fig(pg1, "latency-avg-ms"), "one INSERT+COMMIT, ms"
	}
	return nil, ""
}

var (
	graphStartRE = regexp.MustCompile(`^BenchmarkGraphStartJob/(http|runner)/history=(\w+)$`)
	// insertBaselineRE: latencies of a few database round trips, read against one INSERT+COMMIT.
	// (Fire lateness, subscriber latency and list queries have no meaningful baseline here.)
	insertBaselineRE = regexp.MustCompile(`^BenchmarkStart$|^BenchmarkLedgerScale/[^/]+/preflight$`)
)

func shortRiver(name string) string {
	if i := strings.Index(name, "jobs="); i >= 0 {
		return name[i:]
	}
	return name
}

// Goal is a target from issues 2-4.
type Goal struct {
	Issue string
	What  string
	// Func matches the Benchmark function(s) that measure it, to tell "not run this time" from
	// "not written yet".
	Func string
	// Ratio goals: Num / Den per round, judged against Min.
	Num, Den func(*Run) *Figure
	Min      float64
	// Value goals: the figure's per-round values, judged against Max (in the figure's unit).
	Val func(*Run) []*Figure
	Max float64
	// MaxIn, if set, is the unit Max is in (e.g. "µs"): the figures are compared as they are,
	// not as latencies converted to milliseconds.
	MaxIn string
	// Zero: every round of every Val figure must be 0 (a count of violations).
	Zero bool
	// Extra lists figures shown beside Val's for context, never judged.
	Extra func(*Run) []*Figure
	// Note explains a goal without a numeric threshold or a figure's ceiling; beside a
	// verdict, it says what is judged.
	Note string
	// Absent, if set, replaces "not run this time" when the benchmark exists but does not
	// produce this figure by default (a size that runs only with BATON_BENCH_SCALE=full).
	Absent string
	// Explain, if set, words the note from the run's own figures (what limits a figure);
	// an empty answer leaves Note.
	Explain func(*Run) string
}

// note is the goal's note: Explain's reading of the run, or Note.
func (g Goal) note(r *Run) string {
	if g.Explain != nil {
		if s := g.Explain(r); s != "" {
			return s
		}
	}
	return g.Note
}

func byName(nameRE, unitRE string) func(*Run) []*Figure {
	n, u := regexp.MustCompile(nameRE), regexp.MustCompile(unitRE)
	return func(r *Run) []*Figure {
		var out []*Figure
		for _, f := range r.Figures {
			if f.Source == Baton && n.MatchString(f.Bench) && u.MatchString(f.Unit) {
				out = append(out, f)
			}
		}
		return out
	}
}

func one(nameRE, unit string) func(*Run) *Figure {
	find := byName(nameRE, "^"+regexp.QuoteMeta(unit)+"$")
	return func(r *Run) *Figure {
		if fs := find(r); len(fs) > 0 {
			return fs[0]
		}
		return nil
	}
}

// goals lists what issues 2-4 ask the benchmarks to show. Benchmarks added later are found by
// name: name them so these patterns match (e.g. BenchmarkFireLateness reporting p99-ms,
// BenchmarkGraphQLStartJob reporting p50-ms/p99-ms, BenchmarkSubscribers/n=1000 reporting p99-ms).
var goals = []Goal{
	{Issue: "#2, #3", What: "Strict path (Process, one commit per item) ≥ 0.8× pgbench 1-connection INSERT+COMMIT tps", Func: `^BenchmarkProcessStrict$`,
		Num: one(`^BenchmarkProcessStrict$`, "items/s"), Den: func(r *Run) *Figure { return r.fig(pg1, "tps") }, Min: 0.8},
	{Issue: "#2, #3", What: "Strict path against the same INSERT+COMMIT made from Go through pgx (BenchmarkPgxInsert): the statement's share of the gap", Func: `^BenchmarkPgxInsert$`,
		Num: one(`^BenchmarkProcessStrict$`, "items/s"), Den: one(`^BenchmarkPgxInsert$`, "tps"),
		Note: "no goal of its own; pgx INSERT ÷ pgbench is the client's share"},
	{Issue: "#2, #3", What: "pgbench's INSERT+COMMIT from Go through pgx, against pgbench itself", Func: `^BenchmarkPgxInsert$`,
		Num: one(`^BenchmarkPgxInsert$`, "tps"), Den: func(r *Run) *Figure { return r.fig(pg1, "tps") },
		Note: "the ceiling of any per-item commit made from Go"},
	{Issue: "#2, #3", What: "The strict path's own per-item statement run by pgbench (C client, 1 connection), against pgbench's INSERT+COMMIT: what the statement costs PostgreSQL, no Go client", Func: `^BenchmarkPgbenchItemStatement$`,
		Num: one(`^BenchmarkPgbenchItemStatement$`, "tps"), Den: func(r *Run) *Figure { return r.fig(pg1, "tps") },
		Note: "no goal of its own: the ceiling of the strict path on this database, whatever the client"},
	{Issue: "#2, #3", What: "Only the ledger row's INSERT (job_ledger and its indexes) run by pgbench, against pgbench's INSERT+COMMIT", Func: `^BenchmarkPgbenchLedgerInsert$`,
		Num: one(`^BenchmarkPgbenchLedgerInsert$`, "tps"), Den: func(r *Run) *Figure { return r.fig(pg1, "tps") },
		Note: "no goal of its own: the least a per-item ledger commit can cost"},
	{Issue: "#2, #3", What: "Only the ledger row's INSERT, from Go through pgx (BenchmarkPgxLedgerInsert), against pgbench's INSERT+COMMIT", Func: `^BenchmarkPgxLedgerInsert$`,
		Num: one(`^BenchmarkPgxLedgerInsert$`, "tps"), Den: func(r *Run) *Figure { return r.fig(pg1, "tps") },
		Note: "no goal of its own: the least a per-item ledger commit made from Go can cost — the strict path's ceiling, with no fence, counters or checkpoint"},
	{Issue: "#3", What: "Batch path (ProcessBatch, 500 items per commit) ≥ 3× River jobs/s", Func: `^BenchmarkProcessBatch$`,
		Num: one(`^BenchmarkProcessBatch$`, "items/s"), Den: (*Run).riverFigure, Min: 3},
	{Issue: "#3", What: "Batch path with external effect (intent + result commit per 500), against River jobs/s", Func: `^BenchmarkProcessBatchExternal$`,
		Num: one(`^BenchmarkProcessBatchExternal$`, "items/s"), Den: (*Run).riverFigure,
		Note: "reported: River's no-op jobs have no intent to make durable before a call; the issue's 3× is judged on the batch path above, River's like for like"},
	{Issue: "#3", What: "Strict path with external effect (intent + result: two commits per item), against pgbench 1 conn", Func: `^BenchmarkProcessStrictExternal$`,
		Num: one(`^BenchmarkProcessStrictExternal$`, "items/s"), Den: func(r *Run) *Figure { return r.fig(pg1, "tps") },
		Note: "no goal of its own: two commits per item put its ceiling near 0.5×"},
	{Issue: "#19", What: "Batch path (20,000 items, 500 per commit) ≥ 0.85× a bare COPY of the same rows into the same job_ledger and its indexes on one connection, the two measured in turn in one benchmark (BenchmarkProcessBatchPaired: items/s against copy-rows/s)", Func: `^BenchmarkProcessBatchPaired$`,
		Num: one(`^BenchmarkProcessBatchPaired$`, "items/s"), Den: one(`^BenchmarkProcessBatchPaired$`, "copy-rows/s"), Min: 0.85},
	{Issue: "#19", What: "The same ratio with each side in a benchmark of its own, minutes apart in other processes and schemas: BenchmarkProcessBatch against BenchmarkCopyLedger", Func: `^BenchmarkCopyLedger$`,
		Num: one(`^BenchmarkProcessBatch$`, "items/s"), Den: one(`^BenchmarkCopyLedger$`, "rows/s"),
		Note: "no goal of its own: how the goal was judged before its baseline was measured beside it (ADR 5); the gap to the row above is the machine's drift between the two benchmarks"},
	{Issue: "#19", What: "Batch path ≥ 5× River jobs/s, in the same rounds", Func: `^BenchmarkProcessBatch$`,
		Num: one(`^BenchmarkProcessBatch$`, "items/s"), Den: (*Run).riverFigure, Min: 5},
	{Issue: "#19", What: "The batch path's store writes made one after another with no runner (BenchmarkWriteItemsBatches: 40 fenced writes of 500 fresh rows, each a transaction of fence, counters, checkpoint and COPY), against the bare COPY", Func: `^BenchmarkWriteItemsBatches$`,
		Num: one(`^BenchmarkWriteItemsBatches$`, "items/s"), Den: one(`^BenchmarkCopyLedger$`, "rows/s"),
		Note: "no goal of its own: what 40 commits of 500 rows cost when each waits for the one before"},
	{Issue: "#19", What: "The same rows COPYed as the batch path commits them, 40 transactions of 500, two at once, with no fence, counters or checkpoint (BenchmarkCopyLedgerChunked), against the bare COPY", Func: `^BenchmarkCopyLedgerChunked$`,
		Num: one(`^BenchmarkCopyLedgerChunked$`, "rows/s"), Den: one(`^BenchmarkCopyLedger$`, "rows/s"),
		Note: "no goal of its own: what a commit every 500 rows costs the database when a batch's commit need not wait for the one before"},
	{Issue: "#19", What: "The same, each COMMIT after the one before it, as the batch path's writes land (BenchmarkCopyLedgerOrdered), against the bare COPY", Func: `^BenchmarkCopyLedgerOrdered$`,
		Num: one(`^BenchmarkCopyLedgerOrdered$`, "rows/s"), Den: one(`^BenchmarkCopyLedger$`, "rows/s"),
		Note: "no goal of its own: the ceiling of a batch path that commits every 500 rows in order, so that a checkpoint never passes lost results (ADR 5); below 0.85×, the batch goal is out of reach here for such a design, whatever its fence and counters cost"},
	{Issue: "#19", What: "Batch path against those ordered COPYs (BenchmarkCopyLedgerOrdered)", Func: `^BenchmarkCopyLedgerOrdered$`,
		Num: one(`^BenchmarkProcessBatch$`, "items/s"), Den: one(`^BenchmarkCopyLedgerOrdered$`, "rows/s"),
		Note: "no goal of its own: what the fence, counters, checkpoint and the runner cost on top of the ordered commits (1.00× would be nothing)"},
	{Issue: "#19", What: "Batch path against those writes made one after another (BenchmarkWriteItemsBatches)", Func: `^BenchmarkWriteItemsBatches$`,
		Num: one(`^BenchmarkProcessBatch$`, "items/s"), Den: one(`^BenchmarkWriteItemsBatches$`, "items/s"),
		Note: "no goal of its own: what writing behind buys — the runner stages the next batch's rows on a second connection while one commits, and prepares the batch after it meanwhile"},
	{Issue: "#19", What: "The ceiling of the River goal: the COPY measured beside the batch path (BenchmarkProcessBatchPaired, copy-rows/s) against River jobs/s, in the same rounds", Func: `^BenchmarkProcessBatchPaired$`,
		Num: one(`^BenchmarkProcessBatchPaired$`, "copy-rows/s"), Den: (*Run).riverFigure,
		Note: "no goal of its own: below 5×, not even a bare COPY of the rows into the batch path's own table, with no fence, counters or commits per batch, is 5× River here"},
	{Issue: "#19", What: "The same ceiling from the COPY in a benchmark of its own (BenchmarkCopyLedger) against River jobs/s, in the same rounds", Func: `^BenchmarkCopyLedger$`,
		Num: one(`^BenchmarkCopyLedger$`, "rows/s"), Den: (*Run).riverFigure,
		Note: "no goal of its own: below 5×, not even a bare COPY of the rows, with no fence, counters or commits per batch, is 5× River here"},
	{Issue: "#19", What: "The strict path's per-item statement run by pgbench ≥ 0.75× pgbench's INSERT+COMMIT, measured beside it (BenchmarkPgbenchItemStatement: tps against insert-tps)", Func: `^BenchmarkPgbenchItemStatement$`,
		Num: one(`^BenchmarkPgbenchItemStatement$`, "tps"), Den: one(`^BenchmarkPgbenchItemStatement$`, "insert-tps"), Min: 0.75},
	{Issue: "#19", What: "The same statement against the round's own pgbench INSERT+COMMIT, run minutes before it", Func: `^BenchmarkPgbenchItemStatement$`,
		Num: one(`^BenchmarkPgbenchItemStatement$`, "tps"), Den: func(r *Run) *Figure { return r.fig(pg1, "tps") },
		Note: "no goal of its own: how the goal was judged before its baseline was measured beside it (ADR 5)"},
	{Issue: "#19", What: "Only the ledger row's INSERT, one commit each, against pgbench's INSERT+COMMIT measured beside it (BenchmarkPgbenchLedgerInsert: tps against insert-tps)", Func: `^BenchmarkPgbenchLedgerInsert$`,
		Num: one(`^BenchmarkPgbenchLedgerInsert$`, "tps"), Den: one(`^BenchmarkPgbenchLedgerInsert$`, "insert-tps"),
		Note: "no goal of its own: the least any per-item commit of a ledger row with today's indexes can cost, with no fence and no counters; below 0.75×, the statement goal is out of reach here for any design that keeps those indexes"},
	{Issue: "#19", What: "Strict path (Process) ≥ 0.9× its own per-item statement run by pgbench, the two measured in turn on one schema (BenchmarkProcessStrictPaired: items/s against statement-tps)", Func: `^BenchmarkProcessStrictPaired$`,
		Num: one(`^BenchmarkProcessStrictPaired$`, "items/s"), Den: one(`^BenchmarkProcessStrictPaired$`, "statement-tps"), Min: 0.9},
	{Issue: "#19", What: "The same ratio with each side in a benchmark of its own, in other processes and schemas: BenchmarkProcessStrict against BenchmarkPgbenchItemStatement", Func: `^BenchmarkPgbenchItemStatement$`,
		Num: one(`^BenchmarkProcessStrict$`, "items/s"), Den: one(`^BenchmarkPgbenchItemStatement$`, "tps"),
		Note: "no goal of its own: how the goal was judged before its baseline was measured beside it (ADR 5)"},
	{Issue: "#19", What: "The strict path's per-item statement made from Go through pgx with no runner (BenchmarkWriteFreshItem: the store's fresh single-item write, one after another), against the same statement run by pgbench", Func: `^BenchmarkWriteFreshItem$`,
		Num: one(`^BenchmarkWriteFreshItem$`, "items/s"), Den: one(`^BenchmarkPgbenchItemStatement$`, "tps"),
		Note: "no goal of its own: what the Go client costs; below 0.9×, no runner whose writes go through pgx, the project's PostgreSQL driver, can reach the runner goal here"},
	{Issue: "#19", What: "Strict path against that statement made from Go (BenchmarkWriteFreshItem)", Func: `^BenchmarkWriteFreshItem$`,
		Num: one(`^BenchmarkProcessStrict$`, "items/s"), Den: one(`^BenchmarkWriteFreshItem$`, "items/s"),
		Note: "no goal of its own: what the runner adds over its own write (1.00× would be nothing)"},
	{Issue: "#19", What: "The least fenced per-item statement: the ledger row's INSERT behind a share-locked read of the run row by the lease's conditions (BenchmarkPgbenchFencedInsert), against pgbench's INSERT+COMMIT measured beside it", Func: `^BenchmarkPgbenchFencedInsert$`,
		Num: one(`^BenchmarkPgbenchFencedInsert$`, "tps"), Den: one(`^BenchmarkPgbenchFencedInsert$`, "insert-tps"),
		Note: "no goal of its own: the least a per-item statement can cost and still refuse a stale worker at the moment of the write; below 0.75×, the statement goal is out of reach here whatever its counters and checkpoint cost"},
	{Issue: "#19", What: "The same least statement with the other fence that writes nothing to the run row: a shared advisory lock on the run, then the run row read by the lease's conditions (BenchmarkPgbenchAdvisoryFencedInsert), against pgbench's INSERT+COMMIT measured beside it", Func: `^BenchmarkPgbenchAdvisoryFencedInsert$`,
		Num: one(`^BenchmarkPgbenchAdvisoryFencedInsert$`, "tps"), Den: one(`^BenchmarkPgbenchAdvisoryFencedInsert$`, "insert-tps"),
		Note: "no goal of its own: with the row above, the two fences the issue names that keep a stale worker out at the moment of the write without a new version of the run row; when both are below 0.75×, the statement goal is out of reach here for any per-item statement that keeps its fence, whatever its counters and checkpoint cost"},
	{Issue: "#19", What: "The ledger row's INSERT alone on a job_ledger left with only its keys' indexes, the read paths' indexes dropped (BenchmarkPgbenchLedgerKeysInsert), against pgbench's INSERT+COMMIT measured beside it", Func: `^BenchmarkPgbenchLedgerKeysInsert$`,
		Num: one(`^BenchmarkPgbenchLedgerKeysInsert$`, "tps"), Den: one(`^BenchmarkPgbenchLedgerKeysInsert$`, "insert-tps"),
		Note: "no goal of its own: what the ledger's read-path indexes cost a row (against the bare ledger INSERT with all of them); the most a ledger row committed on its own can reach here, however few indexes a design keeps"},
	{Issue: "#19", What: "The strict path's per-item statement against that least fenced statement (BenchmarkPgbenchFencedInsert)", Func: `^BenchmarkPgbenchFencedInsert$`,
		Num: one(`^BenchmarkPgbenchItemStatement$`, "tps"), Den: one(`^BenchmarkPgbenchFencedInsert$`, "tps"),
		Note: "no goal of its own: what the fence's UPDATE of the run row, the counters and the checkpoint cost on top of the least statement (1.00× would cost nothing)"},
	{Issue: "#19", What: "The least fenced per-item statement that keeps its counters in the item's own transaction: the strict path's statement with the share-locked read for its fence and no update of the run row (BenchmarkPgbenchCountedInsert), against pgbench's INSERT+COMMIT measured beside it", Func: `^BenchmarkPgbenchCountedInsert$`,
		Num: one(`^BenchmarkPgbenchCountedInsert$`, "tps"), Den: one(`^BenchmarkPgbenchCountedInsert$`, "insert-tps"),
		Note: "no goal of its own: below 0.75×, the statement goal is out of reach here for any design that keeps the counters (job_ledger_counts) in the item's transaction, however little it writes to the run row; the counters must then follow the ledger outside it (ADR 5)"},
	{Issue: "#19", What: "The strict path's per-item statement against that counted statement (BenchmarkPgbenchCountedInsert)", Func: `^BenchmarkPgbenchCountedInsert$`,
		Num: one(`^BenchmarkPgbenchItemStatement$`, "tps"), Den: one(`^BenchmarkPgbenchCountedInsert$`, "tps"),
		Note: "no goal of its own: what the fence's UPDATE of the run row (its counters, checkpoint and heartbeat) costs; the counted statement against the least fenced one (figures table) is what the counters cost"},
	{Issue: "#19", What: "8 concurrent strict runs (BenchmarkProcessStrictConcurrent, 8 × 500 items) ≥ 0.8× pgbench 8-connection INSERT+COMMIT tps", Func: `^BenchmarkProcessStrictConcurrent$`,
		Num: one(`^BenchmarkProcessStrictConcurrent$`, "items/s"), Den: func(r *Run) *Figure { return r.fig(pg8, "tps") }, Min: 0.8},
	{Issue: "#19", What: "The ceiling of 8 concurrent strict runs: their per-item statement run by pgbench on 8 connections, each writing its own run (BenchmarkPgbenchItemStatement8), against pgbench's 8-connection INSERT+COMMIT measured beside it", Func: `^BenchmarkPgbenchItemStatement8$`,
		Num: one(`^BenchmarkPgbenchItemStatement8$`, "tps"), Den: one(`^BenchmarkPgbenchItemStatement8$`, "insert-tps"),
		Note: "no goal of its own: what 8 strict runs could reach with no Go client at all; its machine-cpu-us/tx (figures table) against the 2 cores says why"},
	{Issue: "#19", What: "Only the ledger row's INSERT on 8 connections (BenchmarkPgbenchLedgerInsert8), against pgbench's 8-connection INSERT+COMMIT measured beside it", Func: `^BenchmarkPgbenchLedgerInsert8$`,
		Num: one(`^BenchmarkPgbenchLedgerInsert8$`, "tps"), Den: one(`^BenchmarkPgbenchLedgerInsert8$`, "insert-tps"),
		Note: "no goal of its own: the least any per-item ledger commit on 8 connections can cost, with no fence, counters or checkpoint"},
	{Issue: "#19", What: "The least fenced per-item statement on 8 connections (BenchmarkPgbenchFencedInsert8), against pgbench's 8-connection INSERT+COMMIT measured beside it", Func: `^BenchmarkPgbenchFencedInsert8$`,
		Num: one(`^BenchmarkPgbenchFencedInsert8$`, "tps"), Den: one(`^BenchmarkPgbenchFencedInsert8$`, "insert-tps"),
		Note: "no goal of its own: below 0.8×, 8 concurrent strict runs cannot reach their goal here with any per-item statement that keeps the fence"},
	{Issue: "#19", What: "8 concurrent strict runs against their own per-item statement on 8 connections (BenchmarkPgbenchItemStatement8)", Func: `^BenchmarkProcessStrictConcurrent$`,
		Num: one(`^BenchmarkProcessStrictConcurrent$`, "items/s"), Den: one(`^BenchmarkPgbenchItemStatement8$`, "tps"),
		Note: "no goal of its own: how near the runner comes to its statement's ceiling"},
	{Issue: "#19", What: "Server CPU per update delivered to one subscriber (1,000 subscribers) ≤ 12 µs, a fifth of the 60 µs before subscriptions shared their execution", Func: `^BenchmarkGraphSubscribers$`,
		Val: byName(`^BenchmarkGraphSubscribers/n=1000$`, `^server-cpu-us/update$`), Max: 12, MaxIn: "µs",
		Extra:   byName(`^BenchmarkGraphSubscribers/n=1000$`, `^(server-cpu-us/update-net|run-cpu-us/item)$`),
		Note:    "the server's CPU includes the run's own item commits (run-cpu-us/item, measured with no subscriber); server-cpu-us/update-net leaves them out",
		Explain: subscriberShares},
	{Issue: "#19", What: "The floor under it: a bare gorilla/websocket server writing the same updates at the same rate to the same client process, the same bytes framed once (BenchmarkWebSocketFloor)", Func: `^BenchmarkWebSocketFloor$`,
		Val:  byName(`^BenchmarkWebSocketFloor/n=(1000|5000)$`, `^server-cpu-us/update$`),
		Note: "no goal of its own: no server can deliver an update for less on this machine; when it is above 12 µs, the 12 µs goal is out of reach here"},
	{Issue: "#19", What: "Baton's delivery net of the run's own work, against that floor (n=1000)", Func: `^BenchmarkWebSocketFloor$`,
		Num: one(`^BenchmarkGraphSubscribers/n=1000$`, "server-cpu-us/update-net"), Den: one(`^BenchmarkWebSocketFloor/n=1000$`, "server-cpu-us/update"),
		Note: "no goal of its own: what the GraphQL layer adds per update over the bare write (1.00× would be the floor)"},
	{Issue: "#19", What: "5,000 WebSocket subscribers on one instance: p99 commit-to-client ≤ 100 ms, no lost final event (10,000 extrapolated from it)", Func: `^BenchmarkGraphSubscribers$`,
		Val: byName(`^BenchmarkGraphSubscribers/n=5000$`, `^p99-ms$`), Max: 100,
		Extra: byName(`^BenchmarkGraphSubscribers/n=5000$`, `^(lost-finals|server-cpu-cores|server-cpu-us/update|server-cpu-us/update-net|rss-kB/subscriber|server-rss-MB)$`),
		Note:  "this machine's 2 cores also run the clients, so the 5,000 size already shares its CPU with them: its p99 shows a saturated machine, not the server alone"},
	{Issue: "#19", What: "10,000 WebSocket subscribers on one instance: ≤ 1 core (extrapolated from 5,000: twice its updates a second, at its CPU per update, run commits included)", Func: `^BenchmarkGraphSubscribers$`,
		Val: atTenThousand(`BenchmarkGraphSubscribers/n=5000`), Max: 1, MaxIn: "cores",
		Extra: func(r *Run) []*Figure {
			return append(atTenThousand(oneWriterFloor)(r), atTenThousand(`BenchmarkWebSocketFloor/n=5000`)(r)...)
		},
		Explain: tenThousandCeiling},
	{Issue: "#2", What: "Runner.Start latency p50 / p99 (lock + insert + dispatch)", Func: `^BenchmarkStart$`,
		Val: byName(`^BenchmarkStart$`, `^p(50|99)-ms$`), Note: "reported; the issue sets no number"},
	{Issue: "#2, #6", What: "Scheduled fire lateness p99 ≤ 1 s (3 runners, five jobs firing every second; started_at − scheduled_for by the database clock)", Func: `^BenchmarkFireLateness$`,
		Val: byName(`^BenchmarkFireLateness/`, `^p(50|99)-ms$`), Max: 1000, Extra: byName(`^BenchmarkFireLateness/`, `^(max-ms|fires)$`)},
	{Issue: "#4", What: "startJob over HTTP (GraphQL) latency p50 / p99, next to Runner.Start", Func: `^BenchmarkGraphStartJob$`,
		Val:  byName(`^BenchmarkGraphStartJob/(http|runner)/history=0$`, `^p(50|99)-ms$`),
		Note: "reported; the issue sets no number (ratios to Runner.Start in the figures table)"},
	{Issue: "#4", What: "1,000 WebSocket subscribers to one busy run: item-commit-to-client p99 ≤ 100 ms (with server CPU and RSS)", Func: `^BenchmarkGraphSubscribers$`,
		Val: byName(`^BenchmarkGraphSubscribers/n=1000$`, `^p99-ms$`), Max: 100,
		Extra: byName(`^BenchmarkGraphSubscribers/n=1000$`, `^(p50-ms|item-p99-ms|lost-finals|server-cpu-cores|server-cpu-us/update|server-rss-MB|rss-kB/subscriber)$`),
		Note:  "judged on p99-ms: each update against the newest item it carries; item-p99-ms (every item against the first update that includes it) adds the coalescing wait, up to ~100 ms by design"},
	{Issue: "#4", What: "10,000 WebSocket subscribers: the same, scaled", Func: `^BenchmarkGraphSubscribers$`,
		Val: byName(`^BenchmarkGraphSubscribers/n=10000$`, `^p99-ms$`), Max: 100,
		Extra:  byName(`^BenchmarkGraphSubscribers/n=10000$`, `^(p50-ms|item-p99-ms|lost-finals|server-cpu-cores|server-cpu-us/update|server-rss-MB)$`),
		Absent: "runs with BATON_BENCH_SCALE=full only"},
	{Issue: "#4", What: "runs(first: 50) latency with 1M runs loaded (default run: 100k; BATON_BENCH_SCALE=full for 1M)", Func: `^BenchmarkGraphRuns$`,
		Val: byName(`^BenchmarkGraphRuns/`, `^p99-ms$`), Extra: byName(`^BenchmarkGraphRuns/[^/]+/all$`, `^p50-ms$`),
		Note: "reported (p99 of each query shape; p50s in the figures table); the issue sets no number"},
	{Issue: "#4", What: "ledger(first: 50) latency with 10M ledger rows loaded (default run: 1M; BATON_BENCH_SCALE=full for 10M)", Func: `^BenchmarkGraphLedger$`,
		Val: byName(`^BenchmarkGraphLedger/`, `^p99-ms$`), Extra: byName(`^BenchmarkGraphLedger/[^/]+/job$`, `^p50-ms$`),
		Note: "reported (p99 of each query shape; p50s in the figures table); the issue sets no number"},
}

// scale lists the scale section of issue 6 (item 6, and the simulation of item 4).
var scale = []Goal{
	{Issue: "#6", What: "One scheduler poll with 10,000 registered jobs (ScheduleState + next fire of every job)", Func: `^BenchmarkScaleSchedulerPass$`,
		Val: byName(`^BenchmarkScaleSchedulerPass/`, `^ms/pass$`), Extra: byName(`^BenchmarkScaleSchedulerPass/`, `^(register-ms/job|set-next-ms/job|startup-s)$`),
		Note: "reported; register-ms/job and set-next-ms/job are start-up costs per job (Register upserts in bulk, the first pass sets every next fire in one statement); startup-s is both for all jobs"},
	{Issue: "#6", What: "Preflight latency on a 1M-target generation (default run: 200k targets; BATON_BENCH_SCALE=full for 1M)", Func: `^BenchmarkLedgerScale$`,
		Val: byName(`^BenchmarkLedgerScale/[^/]+/preflight$`, `^p(50|99)-ms$`), Note: "reported; preflight reads counters, so it must not grow with the generation"},
	{Issue: "#6", What: "Ledger bytes per million items (table + indexes + counters)", Func: `^BenchmarkLedgerScale$`,
		Val:   byName(`^BenchmarkLedgerScale/[^/]+/bytes$`, `^(MB/1M-items|organic-MB/1M-items)$`),
		Extra: byName(`^BenchmarkLedgerScale/[^/]+/bytes$`, `^(heap|index)-MB/1M-items$`),
		Note:  "reported: bulk-loaded rows, and rows grown by a real run of external-effect items (intent, then result) before autovacuum"},
	{Issue: "#6", What: "Idle RSS per instance (`baton serve`, scheduler and 4 workers, no jobs but the built-in one) and its database transactions/s", Func: `^BenchmarkIdleRSS$`,
		Val: byName(`^BenchmarkIdleRSS$`, `^(rss-MB|db-xact/s)$`), Note: "reported"},
	{Issue: "#6", What: "Scale simulation, 50 instances × 1,000 jobs: database queries per second per instance at idle", Func: `^BenchmarkScaleSimulation$`,
		Val: byName(`^BenchmarkScaleSimulation/`, `^(db-xact/s/instance|stmt/s/instance)$`), Extra: byName(`^BenchmarkScaleSimulation/`, `^(register-s|settle-s)$`),
		Note: "reported"},
	{Issue: "#6", What: "Scale simulation: every fire of a cron storm (50 jobs every second) runs at most once, and every second is run or recorded", Func: `^BenchmarkScaleSimulation$`,
		Val: byName(`^BenchmarkScaleSimulation/`, `^storm-(duplicates|unaccounted)$`), Zero: true,
		Extra: byName(`^BenchmarkScaleSimulation/`, `^storm-(runs|skipped|missed|p50-ms|p99-ms|db-xact/s/instance)$`)},
}

// history lists the cost of a job's history (issue 15): the job page's charts, read through
// aggregate queries on indexes, with 100k runs in the table.
var history = []Goal{
	{Issue: "#15", What: "A job's history over 24 h / 7 d / 30 d (runs per status, duration p50/p95, items/s, failures by class, downstream error rate) with 100k runs, their errors and 576k call-statistics rows loaded", Func: `^BenchmarkJobHistory$`,
		Val: byName(`^BenchmarkJobHistory/`, `^p(50|99)-ms$`), Extra: byName(`^BenchmarkJobHistory/`, `^runs/query$`),
		Note: "reported; runs/query is the job's ended runs in the window, which the cost follows (never the table's size); plans: TestJobHistoryPlansUseIndexes"},
}

// downstream lists what a downstream limit costs (issue 16): a call's turn at the limiter, and
// the most calls one downstream lets through across three instances.
var downstream = []Goal{
	{Issue: "#16", What: "A limited call: Acquire + Release with a rate and a concurrency limit set (slot, rate turn and quota in one Lua script; the slot's release), µs per call", Func: `^BenchmarkAcquireLimited$`,
		Val: byName(`^BenchmarkAcquireLimited$`, `^µs/call$`), Note: "reported; the issue sets no number"},
	{Issue: "#16", What: "An unlimited call (no limit set: no Redis), µs per call", Func: `^BenchmarkAcquireUnlimited$`,
		Val: byName(`^BenchmarkAcquireUnlimited$`, `^µs/call$`), Note: "reported"},
	{Issue: "#16", What: "A limited call against one Redis round trip (PING) from the same client", Func: `^BenchmarkAcquireLimited$`,
		Num: one(`^BenchmarkAcquireLimited$`, "µs/call"), Den: one(`^BenchmarkRedisRoundTrip$`, "µs/call"),
		Note: "no goal of its own: the limiter's cost in round trips (about 2: the script, the release)"},
	{Issue: "#16", What: "Most limited calls/s one downstream sustains across 3 instances (3 limiters on 3 clients, a limit far above the load)", Func: `^BenchmarkLimitedThroughput3$`,
		Val: byName(`^BenchmarkLimitedThroughput3$`, `^calls/s$`), Note: "reported; the ceiling is the Redis server's script throughput on this machine"},
	{Issue: "#16", What: "A freed slot handed to a waiter of the same instance, µs per handoff", Func: `^BenchmarkSlotHandoff$`,
		Val: byName(`^BenchmarkSlotHandoff$`, `^µs/handoff$`), Note: "reported"},
}

// sharded lists what one sharded run gains from more instances (ADR 19): latency-bound items
// across 1, 2 and 3 instances, and a CPU-bound job sharded against the same job on one slot.
var sharded = []Goal{
	{Issue: "ADR 19", What: "Sharded runs: one run of latency-bound items (20 ms a call, External, 24 shards) on 3 instances of 4 slots ≥ 2.7× the items/s of 1 instance", Func: `^BenchmarkShardedLatency$`,
		Num: one(`^BenchmarkShardedLatency/instances=3/`, "items/s"), Den: one(`^BenchmarkShardedLatency/instances=1/`, "items/s"), Min: 2.7},
	{Issue: "ADR 19", What: "The same on 2 instances against 1", Func: `^BenchmarkShardedLatency$`,
		Num: one(`^BenchmarkShardedLatency/instances=2/`, "items/s"), Den: one(`^BenchmarkShardedLatency/instances=1/`, "items/s"),
		Note: "no goal of its own: 2× is the ceiling"},
	{Issue: "ADR 19", What: "Latency-bound items/s per number of instances; how many instances held shards, how many of the instances' PostgreSQL backends were at work, waited on a lock and waited on I/O or the WAL on average, and the whole machine's CPU in cores", Func: `^BenchmarkShardedLatency$`,
		Val: byName(`^BenchmarkShardedLatency/`, `^items/s$`), Extra: byName(`^BenchmarkShardedLatency/`, `^(instances-used|pg-active|pg-lock-waits|pg-io-waits|machine-cpu-cores)$`),
		Note: "reported; the ceiling is 50 calls/s per slot: 200 items/s per instance, less each item's two commits"},
	{Issue: "ADR 19", What: "CPU-bound (no-op items, ProcessBatch of 500): 12 shards on 3 instances × 4 slots against the same job unsharded on one slot", Func: `^BenchmarkShardedCPU$`,
		Num: one(`^BenchmarkShardedCPU/shards=`, "items/s"), Den: one(`^BenchmarkShardedCPU/unsharded$`, "items/s"),
		Explain: cpuLimit, Note: "no goal: the sharded run is bounded by what its figures below show"},
	{Issue: "ADR 19", What: "CPU-bound: items/s and what each run cost (CPU of Baton, of its PostgreSQL backends and of the whole machine, in cores; backends working, waiting on a lock, waiting on I/O or the WAL, on average)", Func: `^BenchmarkShardedCPU$`,
		Val:   byName(`^BenchmarkShardedCPU/`, `^items/s$`),
		Extra: byName(`^BenchmarkShardedCPU/`, `^(baton-cpu-cores|pg-cpu-cores|machine-cpu-cores|pg-active|pg-lock-waits|pg-io-waits)$`),
		Note:  "reported; pg-cpu-cores only when PostgreSQL runs on this machine"},
}

// subscriberShares splits the server's CPU per update at 1,000 subscribers into the run's own
// commits (gross − net) and the delivery (net), against the bare write's floor.
func subscriberShares(r *Run) string {
	gross := one(`^BenchmarkGraphSubscribers/n=1000$`, "server-cpu-us/update")(r)
	net := one(`^BenchmarkGraphSubscribers/n=1000$`, "server-cpu-us/update-net")(r)
	if gross == nil || net == nil {
		return ""
	}
	out := fmt.Sprintf("of the %s µs, the run's own commits in the same process took %s µs per update delivered (gross − net) and the delivery %s µs",
		num(gross.median()), num(gross.median()-net.median()), num(net.median()))
	if floor := one(`^BenchmarkWebSocketFloor/n=1000$`, "server-cpu-us/update")(r); floor != nil {
		out += fmt.Sprintf("; a bare gorilla server writing the same updates (BenchmarkWebSocketFloor) took %s µs", num(floor.median()))
	}
	if gross.median()-net.median() >= 12 {
		out += ": with the run committing in the same process, 12 µs is less than its commits alone cost per update"
	}
	return out
}

// oneWriterFloor is the lowest floor under the subscriber goals: the bare write of each
// update by one goroutine, no goroutine per connection and no GraphQL.
const oneWriterFloor = `BenchmarkWebSocketOneWriterFloor/n=5000`

// atTenThousand extrapolates bench, one of the 5,000-subscriber benchmarks, to the goal's
// 10,000 subscribers, round by round: the cores it would take to deliver, at its CPU per
// update, twice the updates a second Baton's 5,000 subscribers got in the same round. Every
// benchmark is priced on Baton's updates, so a floor's figure is what the same deliveries
// would cost it.
func atTenThousand(bench string) func(*Run) []*Figure {
	return func(r *Run) []*Figure {
		cost := one("^"+regexp.QuoteMeta(bench)+"$", "server-cpu-us/update")(r)
		rate := one(`^BenchmarkGraphSubscribers/n=5000$`, "updates/s/client")(r)
		if cost == nil || rate == nil {
			return nil
		}
		f := &Figure{Bench: bench + " ×2", Unit: "server-cpu-cores", Source: Baton, Rounds: map[int]float64{}}
		for round, us := range cost.Rounds {
			if hz, ok := rate.Rounds[round]; ok {
				f.Rounds[round] = us * hz * 10000 / 1e6
			}
		}
		if len(f.Rounds) == 0 {
			return nil
		}
		return []*Figure{f}
	}
}

// tenThousandCeiling says whether the one-core goal at 10,000 subscribers is out of reach on
// the machine of the run: it is when the bare write alone, one writer and no GraphQL, would
// already take more than a core for the same updates.
func tenThousandCeiling(r *Run) string {
	baton, floor := atTenThousand(`BenchmarkGraphSubscribers/n=5000`)(r), atTenThousand(oneWriterFloor)(r)
	if len(baton) == 0 || len(floor) == 0 {
		return ""
	}
	b, f := baton[0].median(), floor[0].median()
	if f > 1 {
		return fmt.Sprintf("ruled out on this machine: the bare write alone, one goroutine writing each update's prepared frame to every connection with no GraphQL (BenchmarkWebSocketOneWriterFloor), would take %.2f cores (%s) for the same updates; Baton takes %.2f× that",
			f, rangeOf(floor[0].values(), num), b/f)
	}
	return fmt.Sprintf("not ruled out: the bare write alone, one goroutine writing each update's prepared frame to every connection with no GraphQL (BenchmarkWebSocketOneWriterFloor), would take %.2f cores (%s) for the same updates; Baton takes %.2f× that, and would need at most %.2f×",
		f, rangeOf(floor[0].values(), num), b/f, 1/f)
}

// cpuLimit words what bounds the sharded CPU-bound run, from its median figures: the machine's
// cores when they were nearly all busy (the machine is shared: other work counts), else
// PostgreSQL's row locks or its I/O when many of the working backends waited on them.
func cpuLimit(r *Run) string {
	get := func(unit string) float64 {
		if f := one(`^BenchmarkShardedCPU/shards=`, unit)(r); f != nil {
			return f.median()
		}
		return math.NaN()
	}
	baton, pg, machine := get("baton-cpu-cores"), get("pg-cpu-cores"), get("machine-cpu-cores")
	active, locks, io := get("pg-active"), get("pg-lock-waits"), get("pg-io-waits")
	if math.IsNaN(baton) || math.IsNaN(active) {
		return ""
	}
	cores, err := strconv.ParseFloat(r.Meta["nproc"], 64)
	if err != nil || cores <= 0 {
		cores = math.NaN()
	}
	facts := fmt.Sprintf("Baton used %s cores", num(baton))
	if !math.IsNaN(pg) {
		facts += fmt.Sprintf(", its PostgreSQL backends %s", num(pg))
	}
	if !math.IsNaN(machine) {
		facts += fmt.Sprintf(", the whole machine %s", num(machine))
	}
	facts += fmt.Sprintf(" of %s; of %s backends at work on average, %s waited on a lock and %s on I/O or the WAL",
		strconv.FormatFloat(cores, 'g', -1, 64), num(active), num(locks), num(io))
	var limit string
	switch {
	case machine >= 0.9*cores && !math.IsNaN(pg):
		limit = fmt.Sprintf("the machine's CPU (Baton and PostgreSQL %.0f %% of it)", 100*(baton+pg)/machine)
	case machine >= 0.9*cores:
		limit = "the machine's CPU"
	case locks > 0 && locks >= 0.3*active:
		limit = "PostgreSQL's row locks (the run's row, the generation's counters)"
	case io > 0 && io >= 0.3*active:
		limit = "PostgreSQL's I/O (WAL flushes)"
	case math.IsNaN(machine):
		limit = "not known: the machine's CPU could not be read"
	default:
		limit = "neither the CPU nor PostgreSQL's locks or I/O: the commits' round trips"
	}
	return fmt.Sprintf("no goal; limit: **%s** — %s", limit, facts)
}

// ---------------------------------------------------------------------------------------------
// Rendering

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.Abs(v) >= 1000:
		return commas(strconv.FormatFloat(v, 'f', 0, 64))
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func commas(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func ratio(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "×"
}

// ratios formats a measured ratio and its goal with as many digits (2 to 6) as it takes to
// tell them apart, so that a verdict never reads "2.70× < 2.70×"; equal to 6 digits, they
// keep 2.
func ratios(measured, goal float64) (string, string) {
	m, g := ratio(measured), ratio(goal)
	for prec := 3; m == g && prec <= 6; prec++ {
		if mp, gp := strconv.FormatFloat(measured, 'f', prec, 64), strconv.FormatFloat(goal, 'f', prec, 64); mp != gp {
			return mp + "×", gp + "×"
		}
	}
	return m, g
}

func rangeOf(xs []float64, f func(float64) string) string {
	if len(xs) == 0 {
		return "—"
	}
	return f(xs[0]) + " – " + f(xs[len(xs)-1])
}

// spread flags a figure whose rounds disagree by more than ±25 % of the median.
func spread(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	m := median(xs)
	if m == 0 {
		return ""
	}
	if (xs[len(xs)-1]-xs[0])/2/math.Abs(m) > 0.25 {
		return " ⚠"
	}
	return ""
}

// writef appends formatted text to the report.
type writef func(format string, a ...any)

// render writes the report of run r: the machine and setup, the goals and the scale figures
// with their verdicts, every figure, what is not measured yet, the rounds, the exact commands
// and how to reproduce them.
func render(r *Run) string {
	var b strings.Builder
	w := writef(func(format string, a ...any) { fmt.Fprintf(&b, format, a...) })
	renderSetup(w, r)
	renderGoals(w, r)
	renderScale(w, r)
	renderHistory(w, r)
	renderDownstream(w, r)
	renderSharded(w, r)
	renderFigures(w, r)
	renderNotMeasured(w, r)
	renderRounds(w, r)
	renderCommands(w, r)
	renderReproduce(w)
	return b.String()
}

// renderSetup writes the title, the machine, the versions and settings, and what is wrong
// with the run (too few rounds, failed steps).
func renderSetup(w writef, r *Run) {
	m := func(k string) string { return cmp.Or(r.Meta[k], "?") }
	w("# Baton benchmarks\n\n")
	runDir := r.Dir
	if d, err := filepath.EvalSymlinks(runDir); err == nil {
		runDir = d
	}
	w("Generated by `make bench` (scripts/bench.sh → bench/report) from the raw output in `.data/bench/%s/`. Do not edit by hand: rerun `make bench`.\n\n", filepath.Base(runDir))
	cpu := m("cpu")
	if r.GoCPU != "" && r.GoCPU != cpu {
		cpu += " (go test: " + r.GoCPU + ")"
	}
	w("**Machine:** %s — %s cores, %s, %s RAM, %s. **Date:** %s → %s (%s, %s).\n\n",
		m("host"), m("nproc"), cpu, m("memory"), m("kernel"), m("started"), m("finished"), m("duration"), plural(len(r.Rounds), "round"))
	w("| | |\n|---|---|\n")
	for _, kv := range [][2]string{
		{"PostgreSQL", m("postgres") + " (" + m("postgres_settings") + ")"},
		{"PostgreSQL server", m("postgres_source")},
		{"Redis", m("redis") + " — " + m("redis_source")},
		{"Go", m("go")},
		{"River", m("river") + " (bench/go.mod; a separate module, never a product dependency)"},
		{"Tools", m("pgbench") + "; " + m("redis_benchmark")},
		{"Baton commit", m("git")},
		{"Load average", "before " + m("loadavg_before") + ", after " + m("loadavg_after")},
		{"Settings", "`" + m("settings") + "`"},
	} {
		w("| %s | %s |\n", kv[0], strings.ReplaceAll(kv[1], "|", `\|`))
	}
	w("\nThe machine is shared and noisy: every figure below is the **median over %s**, each round running every benchmark and baseline once, interleaved, so noise hits all of them alike. Ratios are computed **per round** (a figure and its baseline measured in the same round, a minute or two apart) and summarised by their median. Compare ratios, never absolute numbers across runs or machines. ⚠ marks a figure whose rounds disagree by more than ±25 %% of its median.\n\n", plural(len(r.Rounds), "round"))
	if len(r.Rounds) < 5 {
		w("> **Trial run:** only %s. Medians of fewer than 5 rounds are not the project's figures; rerun `make bench` (ROUNDS=5).\n\n", plural(len(r.Rounds), "round"))
	}
	if len(r.Problems) > 0 {
		w("> **Failed steps** — figures from these are missing:\n")
		for _, p := range r.Problems {
			w("> - %s\n", p)
		}
		w("\n")
	}
}

// renderGoals writes the goals with their verdicts.
func renderGoals(w writef, r *Run) {
	w("## Goals\n\n")
	w("| issue | goal | measured (median of per-round) | per-round range | verdict |\n|---|---|---|---|---|\n")
	for _, g := range goals {
		measured, rng, verdict := judge(r, g)
		w("| %s | %s | %s | %s | %s |\n", g.Issue, g.What, measured, rng, verdict)
	}
}

// renderScale writes what Baton costs as it grows, with verdicts.
func renderScale(w writef, r *Run) {
	w("\n## Scale\n\n")
	w("What Baton costs as it grows (issue 6), %s. Sizes are in the benchmark names (jobs=10k, targets=200k, instances=50); the defaults are sized for `make bench` to take about half an hour on 2 cores, and `BATON_BENCH_SCALE=full make bench` runs the sizes the issues name (hours). Figures in bold are the ones asked for; the others give context.\n\n",
		cmp.Or(scaleSetting(r), "at the default sizes"))
	renderVerdicts(w, r, scale)
}

// renderHistory writes what a job's history costs, and how its statements reach their rows.
func renderHistory(w writef, r *Run) {
	w("\n## Job history\n\n")
	w("The job page's charts (issue 15) read `Job.history(window:)`: three aggregate statements in one read-only transaction, on 10 jobs × 10,000 runs spread over 40 days, 5 %% of them failed with 5 error rows each, and a call-statistics row per job and minute. Every statement reaches its rows through an index condition on the window: runs by `job_runs_job_finished (job_name, finished_at)` (migration 000019), their error rows by `job_run_errors_run (run_id)` probed once per run (a lateral aggregate, never a hash join over every job's errors), call statistics by `job_call_stats_pkey (job_name, minute)`; `TestJobHistoryPlansUseIndexes` (runner/postgres) fails on any sequential scan or a missing index condition. Only this benchmark: `go test -run '^$' -bench BenchmarkJobHistory -benchtime 50x ./runner/postgres/`.\n\n")
	renderVerdicts(w, r, history)
}

// renderDownstream writes what a downstream limit costs.
func renderDownstream(w writef, r *Run) {
	w("\n## Downstream limits\n\n")
	w("An item that names a downstream (issue 16) takes its turn at the limiter before its call: a concurrency slot, the rate turn (GCRA) and the quota count in one Lua script on the Redis clock, and the slot's release after the call (`runner/internal/limiter`). The figures are the limiter's own, on the shared Redis, one client per instance. Only these benchmarks: `go test -run '^$' -bench . ./runner/internal/limiter/`.\n\n")
	renderVerdicts(w, r, downstream)
}

// renderSharded writes what a sharded run gains from more instances, and where it stops.
func renderSharded(w writef, r *Run) {
	w("\n## Sharded runs\n\n")
	w("One run of a sharded job (ADR 19) is worked by every instance with a free slot. Latency-bound: each item waits 20 ms on a call (a sleep standing for an outside system) between its intent commit and its result commit; 24 shards fill 4, 8 and 12 slots in whole waves, each shard has 20 items per instance, so every case lasts about 2.6 s. CPU-bound: 60,000 no-op items through ProcessBatch (500 per commit), unsharded on one slot against 12 shards on 3 instances × 4 slots; what limits it is read from its own figures. The instances are Runners of one process, each with a pool of its own, on one schema and one Redis prefix. Only these benchmarks: `go test -run '^$' -bench Sharded -benchtime 1x ./runner/`.\n\n")
	renderVerdicts(w, r, sharded)
}

// renderVerdicts writes gs as a table of figures and verdicts.
func renderVerdicts(w writef, r *Run, gs []Goal) {
	w("| issue | what | measured (median over rounds) | per-round range | verdict |\n|---|---|---|---|---|\n")
	for _, g := range gs {
		measured, rng, verdict := judge(r, g)
		w("| %s | %s | %s | %s | %s |\n", g.Issue, g.What, measured, rng, verdict)
	}
}

// renderFigures writes every figure with its baseline and ratios, then how the baselines
// are measured.
func renderFigures(w writef, r *Run) {
	w("\n## Figures\n\n")
	w("| benchmark | unit | median | range over rounds | rounds | baseline (median) | ratio: median of per-round | ratio of medians |\n|---|---|---|---|---|---|---|---|\n")
	for _, src := range []Source{Baton, River, Baseline} {
		figs := slices.Clone(r.Figures)
		figs = slices.DeleteFunc(figs, func(f *Figure) bool { return f.Source != src })
		slices.SortStableFunc(figs, func(a, b *Figure) int { return a.Order - b.Order })
		for _, f := range figs {
			vals := f.values()
			base, baseName := r.baselineFor(f)
			bcell, rcell, rmcell := "—", "—", "—"
			if base != nil {
				bcell = fmt.Sprintf("%s: %s", baseName, num(base.median()))
				rcell = ratio(median(perRound(f, base)))
				rmcell = ratio(f.median() / base.median())
			}
			w("| %s | %s | **%s**%s | %s | %d | %s | %s | %s |\n", f.Bench, f.Unit, num(f.median()), spread(vals),
				rangeOf(vals, num), len(vals), bcell, rcell, rmcell)
		}
	}
	w("\nBaselines: pgbench runs `INSERT INTO scratch.t (v) VALUES (1)` (one row, autocommit: one INSERT + one COMMIT per transaction) into a table with an identity primary key, prepared statements, on the same database as the benchmarks — the physical limit for per-item commits. redis-benchmark runs SET with %s client(s). River works no-op jobs inserted beforehand with InsertManyFast, tuned like River's own `river bench` (FetchCooldown 2 ms, FetchPollInterval 20 ms, MaxWorkers 2,000 on the default queue), timed from Client.Start to the last job's completion event (sent after River's completer has marked the job completed in the database), after one untimed warm-up; the largest job count is the one the batch goal is judged against.\n",
		cmp.Or(settingOf(r, "REDIS_CLIENTS"), "?"))
	w("\nBeyond `make bench`: bench/full-scale.md has the API figures at the sizes the issues name (1M runs, 10M ledger rows, 10,000 subscribers), bench/soak.md the load test of `make soak` (3 instances, 200 GraphQL clients, 1,000 subscribers, 3 runs for 2 minutes). Both are single runs, with their commands. bench/ha.md has the high-availability figures of `make bench-ha` (a holder's SIGKILL to its resumed run RUNNING, a Sentinel failover's gap in live events, a PostgreSQL promotion to the first commit after it, batch runs through PgBouncer against direct), medians over rounds. docs/adr/0030-shared-subscription-execution.md has the one-writer floor under the 10,000-subscriber goal (BenchmarkWebSocketOneWriterFloor beside the subscribers, 5 interleaved rounds) and the subscribers before and after shared frames (interleaved, 5 rounds), with their commands.\n")
}

// renderNotMeasured lists the goals no benchmark measures yet.
func renderNotMeasured(w writef, r *Run) {
	w("\n### Asked for by the issues, not measured yet\n\n")
	missing := 0
	for _, g := range slices.Concat(goals, scale, history, downstream, sharded) {
		if _, _, v := judge(r, g); v == notYet {
			w("- %s (issue %s)\n", g.What, g.Issue)
			missing++
		}
	}
	if missing == 0 {
		w("Nothing: every benchmark the issues ask for exists.\n")
	} else {
		w("\nThese rows fill in by themselves once a benchmark whose name matches exists (patterns in bench/report/main.go, `goals`); any other new benchmark appears in the figures table as it is.\n")
	}
}

// renderRounds writes each round's load and steps.
func renderRounds(w writef, r *Run) {
	w("\n## Rounds\n\n| round | load average at start | steps (seconds; exit status if not 0) |\n|---|---|---|\n")
	for _, n := range r.Rounds {
		var parts []string
		for _, s := range r.Steps[n] {
			p := fmt.Sprintf("%s %ds", s.Name, s.Seconds)
			if s.Rc != 0 {
				p += fmt.Sprintf(" **exit %d**", s.Rc)
			}
			parts = append(parts, p)
		}
		w("| %d | %s | %s |\n", n, cmp.Or(r.Load[n], "?"), strings.Join(parts, ", "))
	}
}

// renderCommands writes the commands the run ran.
func renderCommands(w writef, r *Run) {
	w("\n## Exact commands\n\nOnce, before the rounds:\n\n```sh\n")
	for _, c := range r.Commands {
		if c[0] == "setup" {
			w("%s\n", c[1])
		}
	}
	w("```\n\nEach round, in this order:\n\n```sh\n")
	for _, c := range r.Commands {
		if c[0] != "setup" {
			w("%s\n", c[1])
		}
	}
	w("```\n\nThe Go benchmarks run with `-p 1`, one package at a time, so no two benchmarks share the CPUs. The packages are every package of the root module with a `func Benchmark…` (found with `go list` and grep), so benchmarks added later are picked up; `BENCH` narrows them by regexp.\n")
}

// renderReproduce writes how to run the benchmarks again.
func renderReproduce(w writef) {
	w("\n## How to reproduce\n\n")
	w("```sh\nmake bench                      # = scripts/bench.sh: services up, 5 rounds, writes BENCHMARKS.md\nROUNDS=7 BENCH='Process' make bench   # more rounds, only matching benchmarks\nBATON_BENCH_SCALE=full make bench     # the scale benchmarks at the issues' sizes (1M targets, 10M ledger rows, 10,000 subscribers; hours)\n(cd bench && go run ./report -dir ../.data/bench/latest -out ../BENCHMARKS.md)   # only the report again\nbenchstat .data/bench.txt       # every Go-format line of the run (golang.org/x/perf/cmd/benchstat)\n```\n\n")
	w("Raw outputs of every round stay in `.data/bench/<UTC time>/` (`.data/bench/latest`). A quieter machine gives higher absolute numbers; the ratios are what carry across. Knobs: ROUNDS, BENCH, BENCHTIME, PGBENCH_SECONDS, RIVER_JOBS, RIVER_SMALL_JOBS, RIVER_REPS, REDIS_REQUESTS, REDIS_CLIENTS, BATON_BENCH_SCALE, GO_BENCH_TIMEOUT, BENCH_OUT (see scripts/bench.sh).\n")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// scaleSetting describes the BATON_BENCH_SCALE of the run, if it was set.
func scaleSetting(r *Run) string {
	if v := settingOf(r, "BATON_BENCH_SCALE"); v != "" {
		return "with BATON_BENCH_SCALE=" + v
	}
	return ""
}

func settingOf(r *Run, k string) string {
	for _, f := range strings.Fields(r.Meta["settings"]) {
		if v, ok := strings.CutPrefix(f, k+"="); ok {
			return v
		}
	}
	return ""
}

const (
	notYet     = "**not measured yet**"
	notRun     = "**not run this time** (the benchmark exists: BENCH filter, or it failed)"
	noBaseline = "**baseline missing** in every round (see the failed steps)"
)

// absent says why a goal has no figure: no benchmark for it yet, or one that did not run.
func (r *Run) absent(g Goal) string {
	if g.Func != "" {
		re := regexp.MustCompile(g.Func)
		for _, d := range r.Declared {
			if re.MatchString(d) {
				return notRun
			}
		}
	}
	return notYet
}

// judge returns the measured cell, the per-round range and the verdict of a goal.
func judge(r *Run, g Goal) (string, string, string) {
	if g.Num != nil {
		n, d := g.Num(r), g.Den(r)
		if n == nil {
			return "—", "—", r.absent(g)
		}
		rs := perRound(n, d)
		if d == nil || len(rs) == 0 {
			return "—", "—", noBaseline
		}
		med := median(rs)
		cell := fmt.Sprintf("**%s** (%s %s ÷ %s %s)", ratio(med), num(n.median()), n.Unit, num(d.median()), d.Unit)
		switch {
		case g.Min == 0:
			return cell, rangeOf(rs, ratio), g.note(r)
		case med >= g.Min:
			m, b := ratios(med, g.Min)
			return cell, rangeOf(rs, ratio), fmt.Sprintf("**MET** (%s ≥ %s)", m, b)
		default:
			m, b := ratios(med, g.Min)
			return cell, rangeOf(rs, ratio), fmt.Sprintf("**NOT MET** (%s < %s)", m, b)
		}
	}
	figs := g.Val(r)
	if len(figs) == 0 {
		if why := r.absent(g); why != notRun || g.Absent == "" {
			return "—", "—", why
		}
		return "—", "—", g.Absent
	}
	var cells, ranges []string
	met := true
	for _, f := range figs {
		vals := f.values()
		cells = append(cells, fmt.Sprintf("%s %s **%s**", shortName(f.Bench), f.Unit, num(f.median())))
		ranges = append(ranges, rangeOf(vals, num))
		switch {
		case g.Max > 0 && g.MaxIn != "":
			if f.median() > g.Max {
				met = false
			}
		case g.Max > 0:
			ms, err := inMillis(f.median(), f.Unit)
			if err != nil {
				return strings.Join(cells, "; "), strings.Join(ranges, "; "), "cannot judge: " + err.Error()
			}
			if ms > g.Max {
				met = false
			}
		case g.Zero && vals[len(vals)-1] != 0:
			met = false
		}
	}
	if g.Extra != nil {
		for _, f := range g.Extra(r) {
			cells = append(cells, fmt.Sprintf("%s %s %s", shortName(f.Bench), f.Unit, num(f.median())))
			ranges = append(ranges, rangeOf(f.values(), num))
		}
	}
	verdict := cmp.Or(g.note(r), "reported")
	switch {
	case g.Max > 0 && met:
		verdict = fmt.Sprintf("**MET** (≤ %s %s)", num(g.Max), cmp.Or(g.MaxIn, "ms"))
	case g.Max > 0:
		verdict = fmt.Sprintf("**NOT MET** (> %s %s)", num(g.Max), cmp.Or(g.MaxIn, "ms"))
	case g.Zero && met:
		verdict = "**MET** (0 in every round)"
	case g.Zero:
		verdict = "**NOT MET** (not 0 in every round)"
	}
	if note := g.note(r); (g.Max > 0 || g.Zero) && note != "" {
		verdict += "; " + note
	}
	return strings.Join(cells, "; "), strings.Join(ranges, "; "), verdict
}

func shortName(s string) string { return strings.TrimPrefix(s, "Benchmark") }

// inMillis converts a latency in a unit like p99-ms, p99-s or p99-us to milliseconds.
func inMillis(v float64, unit string) (float64, error) {
	switch {
	case strings.HasSuffix(unit, "-ms") || strings.HasSuffix(unit, "ms"):
		return v, nil
	case strings.HasSuffix(unit, "-us") || strings.HasSuffix(unit, "µs"):
		return v / 1000, nil
	case strings.HasSuffix(unit, "-ns"):
		return v / 1e6, nil
	case strings.HasSuffix(unit, "-s"):
		return v * 1000, nil
	}
	return 0, errors.New("unknown latency unit " + unit)
}
