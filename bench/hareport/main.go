// Command hareport turns the raw output of one scripts/bench-ha.sh run into bench/ha.md.
//
//	hareport -dir .data/bench-ha/latest -out bench/ha.md
//
// The run directory holds meta.tsv (machine facts), commands.tsv (the exact command of a
// round) and round-N/ directories, each with ha.txt (go test -bench output of the BenchmarkHA
// benchmarks) and status.tsv (exit status and seconds). Every figure is summarised by its
// median over the rounds, with its minimum and maximum; goals are judged on the median and
// counted per round.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("dir", "../.data/bench-ha/latest", "raw output of one scripts/bench-ha.sh run")
	out := flag.String("out", "", "write the report here (default: standard output)")
	flag.Parse()
	run, err := load(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hareport:", err)
		os.Exit(1)
	}
	text := render(run)
	if *out == "" {
		fmt.Print(text)
		return
	}
	if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "hareport:", err)
		os.Exit(1)
	}
}

// Figure is one benchmark's metric in each round.
type Figure struct {
	Bench, Unit string
	Rounds      map[int]float64
}

// Run is what one bench-ha.sh run left.
type Run struct {
	Dir      string
	Meta     map[string]string
	Commands [][2]string
	Rounds   []int
	Figures  []*Figure
	Problems []string
}

func (r *Run) fig(bench, unit string) *Figure {
	for _, f := range r.Figures {
		if f.Bench == bench && f.Unit == unit {
			return f
		}
	}
	return nil
}

func (r *Run) add(round int, bench, unit string, v float64) {
	f := r.fig(bench, unit)
	if f == nil {
		f = &Figure{Bench: bench, Unit: unit, Rounds: map[int]float64{}}
		r.Figures = append(r.Figures, f)
	}
	f.Rounds[round] = v
}

func load(dir string) (*Run, error) {
	r := &Run{Dir: dir, Meta: map[string]string{}}
	if err := eachTSV(filepath.Join(dir, "meta.tsv"), func(p []string) { r.Meta[p[0]] = p[1] }); err != nil {
		return nil, err
	}
	_ = eachTSV(filepath.Join(dir, "commands.tsv"), func(p []string) { r.Commands = append(r.Commands, [2]string{p[0], p[1]}) })
	dirs, _ := filepath.Glob(filepath.Join(dir, "round-*"))
	for _, d := range dirs {
		if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "round-")); err == nil {
			r.Rounds = append(r.Rounds, n)
		}
	}
	slices.Sort(r.Rounds)
	if len(r.Rounds) == 0 {
		return nil, fmt.Errorf("%s has no round-N directories", dir)
	}
	for _, n := range r.Rounds {
		rd := filepath.Join(dir, fmt.Sprintf("round-%d", n))
		_ = eachTSV(filepath.Join(rd, "status.tsv"), func(p []string) {
			if len(p) > 1 && p[1] != "0" {
				r.Problems = append(r.Problems, fmt.Sprintf("round %d: %s exited %s (see %s/ha.txt*)", n, p[0], p[1], rd))
			}
		})
		f, err := os.Open(filepath.Join(rd, "ha.txt"))
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("round %d: %v", n, err))
			continue
		}
		parseBench(f, func(bench, unit string, v float64) { r.add(n, bench, unit, v) })
		f.Close()
	}
	return r, nil
}

// eachTSV calls fn with the fields of each line of path that has at least two.
func eachTSV(path string, fn func([]string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p := strings.Split(sc.Text(), "\t"); len(p) >= 2 {
			fn(p)
		}
	}
	return sc.Err()
}

var benchRE = regexp.MustCompile(`^(Benchmark[^\s]+?)(-\d+)?\s+\d+\s+(.*)$`)

// parseBench calls fn for every metric of every Go benchmark line read from f, but ns/op:
// each iteration of these benchmarks starts servers, so the time of an iteration says nothing.
func parseBench(f io.Reader, fn func(bench, unit string, v float64)) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := benchRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil || fields[i+1] == "ns/op" {
				continue
			}
			fn(m[1], fields[i+1], v)
		}
	}
}

func (f *Figure) values() []float64 {
	var xs []float64
	for _, v := range f.Rounds {
		xs = append(xs, v)
	}
	slices.Sort(xs)
	return xs
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Verdict is a goal's judgement.
type Verdict struct {
	Goal, Measured, Rounds, Verdict string
}

// killToRunning judges "SIGKILL of the instance running a run → the AUTO_RESUME run RUNNING
// on the survivor ≤ lease + poll interval", on the median and round by round.
func killToRunning(r *Run) Verdict {
	const bench = "BenchmarkHAKillToResumed"
	v := Verdict{Goal: "SIGKILL of the instance running a run → its AUTO_RESUME run RUNNING on the survivor ≤ lease + poll interval (backoff 0)"}
	kill, lease, poll := r.fig(bench, "s/kill-to-running"), r.fig(bench, "s/lease"), r.fig(bench, "s/poll")
	if kill == nil || lease == nil || poll == nil {
		v.Measured, v.Rounds, v.Verdict = "—", "—", "not measured (no "+bench+" figures in this run)"
		return v
	}
	met, n := 0, 0
	for round, k := range kill.Rounds {
		l, ok1 := lease.Rounds[round]
		p, ok2 := poll.Rounds[round]
		if ok1 && ok2 {
			n++
			if k <= l+p {
				met++
			}
		}
	}
	km, limit := median(kill.values()), median(lease.values())+median(poll.values())
	v.Measured = fmt.Sprintf("**%s s** (lease %s s + poll %s s = %s s)", num(km), num(median(lease.values())), num(median(poll.values())), num(limit))
	v.Rounds = fmt.Sprintf("%d of %d", met, n)
	if km <= limit {
		v.Verdict = fmt.Sprintf("**MET** (%s s ≤ %s s)", num(km), num(limit))
	} else {
		v.Verdict = fmt.Sprintf("**NOT MET** (%s s > %s s)", num(km), num(limit))
	}
	return v
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func num(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func render(r *Run) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	m := r.Meta
	w("# Baton high-availability figures\n\n")
	w("Generated by `make bench-ha` (scripts/bench-ha.sh → bench/hareport) from the raw output in `%s/`. Do not edit by hand: rerun `make bench-ha`.\n\n", m["raw"])
	w("**Machine:** %s cores (nproc), %s, %s RAM, %s; %s. **Date:** %s → %s (%s, %s). **Commit:** %s.\n\n",
		m["nproc"], m["cpu"], m["memory"], m["kernel"], m["go"], m["started"], m["finished"], m["duration"], plural(len(r.Rounds), "round"), m["git"])
	w("Every iteration of a BenchmarkHA benchmark starts private servers of its own (internal/testenv), so each round runs each benchmark once (`-benchtime 1x`); the figures are the **median over the rounds**, with the smallest and largest round beside it. The machine is shared: compare within one run, never absolute numbers across runs or machines.\n\n")
	w("## Goals\n\n| goal | measured (median) | rounds that met it | verdict |\n|---|---|---|---|\n")
	v := killToRunning(r)
	w("| %s | %s | %s | %s |\n\n", v.Goal, v.Measured, v.Rounds, v.Verdict)
	w("## Figures\n\n| benchmark | unit | median | min | max | rounds |\n|---|---|---|---|---|---|\n")
	for _, f := range r.Figures {
		xs := f.values()
		w("| %s | %s | **%s** | %s | %s | %d |\n", strings.TrimPrefix(f.Bench, "Benchmark"), f.Unit, num(median(xs)), num(xs[0]), num(xs[len(xs)-1]), len(xs))
	}
	w("\n%s\n", about)
	if len(r.Problems) > 0 {
		w("\n## Problems\n\n")
		for _, p := range r.Problems {
			w("- %s\n", p)
		}
	}
	w("\n## Commands\n\nEach round, from the repository root, after `scripts/dev-services.sh up && . .data/env`:\n\n```\n")
	for _, c := range r.Commands {
		w("%s\n", c[1])
	}
	w("```\n\nRerun only the report: `(cd bench && go run ./hareport -dir ../%s -out ha.md)`.\n", m["raw"])
	return b.String()
}

// about says what each benchmark measures; the benchmarks' doc comments in
// runner/ha_bench_test.go say it at length.
const about = `What the figures are:

- **HASentinelEventGap** — Redis Sentinel (1 master, 1 replica, 3 sentinels, down-after 1 s) behind a runner, publisher and hub on a ` + "`redis+sentinel://`" + ` URL, a run publishing an event per item every 20 ms; the master is SIGKILLed. ` + "`s/promotion`" + `: kill → the first sentinel names the replica master. ` + "`s/event-gap`" + `: the last event the subscriber received before the hub's Resync → the first after it; beyond the promotion it holds the hub's and the publisher's reconnection backoff (exponential from 50 ms, jittered, capped at 5 s).
- **HAPgBouncerBatch** — the same batch run (5,000 no-op items, 500 per commit, 8 at a time) on a private PostgreSQL directly and through a private PgBouncer (transaction mode, 10 server connections) in front of it, interleaved, 5 timed runs each way.
- **HAKillToResumed** — a run (5 ms items, lease 5 s, renewed at half-life) in a child process (the test binary as a worker) and a survivor runner in the benchmark's process with runner.Config's defaults (poll 10 s) and the scheduler on, both on the shared PostgreSQL and Redis; the job's auto-resume backoff is set to 0; the child is SIGKILLed at a random moment of the survivor's poll cycle. ` + "`s/kill-to-failed`" + `: SIGKILL → the survivor's recoverer fails the run (LEASE_EXPIRED). ` + "`s/kill-to-running`" + `: SIGKILL → the AUTO_RESUME run RUNNING on the survivor. ` + "`s/lease`" + ` and ` + "`s/poll`" + ` are the settings that bound it: the lease must run out and a recoverer pass see it, so the worst case is lease + poll.
- **HAPostgresPromotion** — a private primary with a synchronous streaming standby and a runner on the multi-host URL (` + "`target_session_attrs=read-write`" + `, lease 2 s); a run charging accounts (a call out) when the primary is SIGKILLed and the standby promoted at once. ` + "`s/promotion`" + `: kill → the standby accepts writes. ` + "`s/first-commit`" + `: kill → the first account committed again, by the AUTO_RESUME run once the cut run has ended (its worker records DATABASE_UNAVAILABLE) and the job's default 5 s backoff has passed.
- Any other BenchmarkHA benchmark of the runner package appears in the table as it reports.`
