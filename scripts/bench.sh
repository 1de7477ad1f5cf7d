#!/usr/bin/env bash
# bench.sh [PACKAGES...] — `make bench`: Baton's Go benchmarks side by side with baselines measured
# on the same PostgreSQL and Redis in the same run, interleaved in ROUNDS rounds so that noise
# from other work on the machine hits every figure alike, then BENCHMARKS.md at the repo root.
#
# One round is, in this order:
#   1. pgbench, 1 connection: single-row INSERT + COMMIT into a scratch table (tps)
#   2. pgbench, 8 connections: the same (tps; group commit)
#   3. Baton: one `go test -p 1 -run '^$' -bench "$BENCH" -benchmem -count 1` over every package
#      that has a Benchmark function (or PACKAGES), so benchmarks added later are picked up (the
#      default BENCH=. runs them all but BenchmarkHA*, e.g. BenchmarkShardedLatency and
#      BenchmarkShardedCPU of runner/, whose instances are Runners of the one test process)
#   4. River v0.51.2 working no-op jobs (bench/river; a separate Go module), RIVER_JOBS jobs, and
#      RIVER_SMALL_JOBS jobs (the per-run item count of Baton's items benchmarks)
#   5. redis-benchmark SET, REDIS_CLIENTS clients (rps, p50/p99 latency)
# Raw output goes to .data/bench/<UTC time>/ (.data/bench/latest points at it); all Go-format
# benchmark lines are also gathered in .data/bench.txt for benchstat. bench/report then writes
# BENCHMARKS.md from the raw directory: medians over rounds, per-round ratios and their medians,
# goals met or not. Rerun only the report: (cd bench && go run ./report -dir ../.data/bench/latest)
#
# Knobs (environment):
#   ROUNDS=5             rounds (medians need >= 5; fewer only for a trial)
#   BENCH=.              go test -bench regexp
#   BENCHTIME=1s         go test -benchtime
#   PGBENCH_SECONDS=10   duration of each pgbench run
#   RIVER_JOBS=20000     jobs per River repetition (the figure the batch goal is judged against)
#   RIVER_SMALL_JOBS=2000  a second River run with this many jobs (0 skips it)
#   RIVER_REPS=3         timed repetitions per River run (after one untimed warm-up)
#   REDIS_REQUESTS=100000  REDIS_CLIENTS=1
#   BATON_BENCH_SCALE=     "full" runs the scale benchmarks at the sizes the issues name (1M
#                        ledger targets, 1M runs, 10M ledger rows, 10,000 WebSocket subscribers,
#                        longer storms: hours, not minutes); empty keeps the defaults, which fit
#                        `make bench` in under half an hour on 2 cores. Sizes are in the
#                        benchmark names, so the report never mixes them.
#   GO_BENCH_TIMEOUT=20m go test -timeout of one round's Go benchmarks (default 180m when full)
#   BENCH_OUT=BENCHMARKS.md  where the report goes
# The figures are only comparable within one run: compare ratios, never absolute numbers across
# runs or machines.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
ROUNDS=${ROUNDS:-5}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-1s}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-10}
RIVER_JOBS=${RIVER_JOBS:-20000}
RIVER_SMALL_JOBS=${RIVER_SMALL_JOBS:-2000}
RIVER_REPS=${RIVER_REPS:-3}
REDIS_REQUESTS=${REDIS_REQUESTS:-100000}
REDIS_CLIENTS=${REDIS_CLIENTS:-1}
BATON_BENCH_SCALE=${BATON_BENCH_SCALE:-}
if [[ $BATON_BENCH_SCALE == full ]]; then
	GO_BENCH_TIMEOUT=${GO_BENCH_TIMEOUT:-180m}
else
	GO_BENCH_TIMEOUT=${GO_BENCH_TIMEOUT:-20m}
fi
BENCH_OUT=${BENCH_OUT:-BENCHMARKS.md}

log() { printf 'bench: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$ROUNDS'"
[[ -z $BATON_BENCH_SCALE || $BATON_BENCH_SCALE == full ]] || die "BATON_BENCH_SCALE must be empty or 'full', not '$BATON_BENCH_SCALE'"
export BATON_BENCH_SCALE
((ROUNDS >= 5)) || log "warning: ROUNDS=$ROUNDS; medians of fewer than 5 rounds are for trials only"

# --- tools and services -------------------------------------------------------------------------
if ! command -v pgbench >/dev/null || ! command -v psql >/dev/null || ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		log "installing the PostgreSQL and Redis client tools (apt-get)"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client redis-tools >/dev/null
	fi
fi
for tool in pgbench psql redis-benchmark redis-cli; do
	command -v "$tool" >/dev/null || die "$tool is missing (Debian: pgbench and psql come with postgresql-client or the server package, redis-benchmark with redis-tools)"
done

scripts/dev-services.sh up >/dev/null
# shellcheck source=/dev/null
. .data/env
: "${DATABASE_URL:?}" "${REDIS_URL:?}"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
RAW=.data/bench/$stamp
mkdir -p "$RAW/bin"
ln -sfn "$stamp" .data/bench/latest
log "raw output in $RAW"

# --- build everything before the first round, so no round pays for compiling --------------------
# Packages with Benchmark functions in their test files (as go list sees them: build tags apply),
# and the names of those functions, so the report can tell "not run this time" from "not written
# yet". bench/ is a module of its own, so ./... does not reach it.
: >"$RAW/declared.txt"
bench_pkgs=()
while read -r pkg files; do
	[[ -n $files ]] || continue
	# shellcheck disable=SC2086 # $files is a list of paths without spaces, from go list
	names=$(grep -hEo '^func Benchmark[A-Za-z0-9_]*' $files | sed 's/^func //' || true)
	[[ -n $names ]] || continue
	bench_pkgs+=("$pkg")
	printf '%s\n' "$names" >>"$RAW/declared.txt"
done < <("$GO" list -f '{{.ImportPath}}{{range .TestGoFiles}} {{$.Dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$.Dir}}/{{.}}{{end}}' "${@:-./...}")
if (($# == 0)); then
	((${#bench_pkgs[@]})) || die "no package has a Benchmark function"
	set -- "${bench_pkgs[@]}"
fi
log "packages: $*"
log "building the benchmarks, ./cmd/baton, bench/river and bench/report"
"$GO" test -p 1 -count 1 -run '^$' -bench '^$' "$@" >"$RAW/build.log" 2>&1 || {
	cat "$RAW/build.log" >&2
	die "go test could not build the benchmarks"
}
# BenchmarkIdleRSS runs `baton serve`: built once here, not in every round.
"$GO" build -o "$RAW/bin/baton" ./cmd/baton || die "could not build ./cmd/baton"
export BATON_BIN="$ROOT/$RAW/bin/baton"
(cd bench && "$GO" build -o "../$RAW/bin/river" ./river && "$GO" build -o "../$RAW/bin/report" ./report) ||
	die "could not build bench/river or bench/report"

# --- scratch table for pgbench -------------------------------------------------------------------
scratch="bench_pgbench_$$"
psql "$DATABASE_URL" -qX -v ON_ERROR_STOP=1 -c "CREATE SCHEMA $scratch" \
	-c "CREATE TABLE $scratch.t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int NOT NULL)" >/dev/null
cleanup() { psql "$DATABASE_URL" -qX -c "DROP SCHEMA IF EXISTS $scratch CASCADE" >/dev/null 2>&1 || true; }
trap cleanup EXIT
printf 'INSERT INTO %s.t (v) VALUES (1);\n' "$scratch" >"$RAW/insert.sql"

# --- the commands of one round (also written to commands.tsv, as the report quotes them) --------
pgb1=(pgbench -n -M prepared -c 1 -j 1 -T "$PGBENCH_SECONDS" -f "$RAW/insert.sql" "$DATABASE_URL")
pgb8=(pgbench -n -M prepared -c 8 -j 2 -T "$PGBENCH_SECONDS" -f "$RAW/insert.sql" "$DATABASE_URL")
gob=("$GO" test -p 1 -run '^$' -bench "$BENCH" -skip '^BenchmarkHA' -benchtime "$BENCHTIME" -benchmem -count 1 -timeout "$GO_BENCH_TIMEOUT" "$@")
river=("$RAW/bin/river" -url "$DATABASE_URL" -jobs "$RIVER_JOBS" -reps "$RIVER_REPS")
river_small=("$RAW/bin/river" -url "$DATABASE_URL" -jobs "$RIVER_SMALL_JOBS" -reps "$RIVER_REPS")
redisb=(redis-benchmark -u "$REDIS_URL" -c "$REDIS_CLIENTS" -n "$REDIS_REQUESTS" -t set --csv)

# show prints a command as a shell would take it (single quotes where needed), with the URLs as
# "$DATABASE_URL" / "$REDIS_URL" and paths relative to the run directory.
# shellcheck disable=SC2016 # the $ signs are meant literally
show() {
	local a out=()
	for a in "$@"; do
		case $a in
		"$DATABASE_URL") a='"$DATABASE_URL"' ;;
		"$REDIS_URL") a='"$REDIS_URL"' ;;
		*)
			[[ $a =~ ^[A-Za-z0-9_./=:,+-]+$ ]] || a="'${a//\'/\'\\\'\'}'"
			;;
		esac
		out+=("$a")
	done
	printf '%s' "${out[*]}"
}
{
	printf 'setup\t%s\n' "scripts/dev-services.sh up && . .data/env"
	printf 'setup\t%s\n' "psql \"\$DATABASE_URL\" -c 'CREATE SCHEMA $scratch' -c 'CREATE TABLE $scratch.t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int NOT NULL)'"
	printf 'setup\t%s\n' "insert.sql: $(cat "$RAW/insert.sql")"
	printf 'setup\t%s\n' "(cd bench && go build -o ../$RAW/bin/river ./river)"
	printf 'setup\t%s\n' "go build -o $RAW/bin/baton ./cmd/baton && export BATON_BIN=\$PWD/$RAW/bin/baton${BATON_BENCH_SCALE:+ BATON_BENCH_SCALE=$BATON_BENCH_SCALE}"
	printf 'pgbench-1\t%s\n' "$(show "${pgb1[@]}")"
	printf 'pgbench-8\t%s\n' "$(show "${pgb8[@]}")"
	printf 'baton\t%s\n' "$(show "${gob[@]}")"
	printf 'river\t%s\n' "$(show "${river[@]}")"
	((RIVER_SMALL_JOBS > 0)) && printf 'river\t%s\n' "$(show "${river_small[@]}")"
	printf 'redis\t%s\n' "$(show "${redisb[@]}")"
} >"$RAW/commands.tsv"

# --- machine facts -------------------------------------------------------------------------------
meta() { printf '%s\t%s\n' "$1" "$2" >>"$RAW/meta.tsv"; }
# redact hides a password in a URL.
redact() { sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#' <<<"$1"; }
pgq() { psql "$DATABASE_URL" -AtqX -c "$1" 2>/dev/null || echo '?'; }
: >"$RAW/meta.tsv"
meta started "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta host "$(hostname 2>/dev/null || echo '?')"
meta cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/ *$//')"
meta nproc "$(nproc)"
meta memory "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
meta kernel "$(uname -sr)"
meta postgres "$(pgq 'SHOW server_version')"
meta postgres_settings "fsync=$(pgq 'SHOW fsync'), synchronous_commit=$(pgq 'SHOW synchronous_commit'), shared_buffers=$(pgq 'SHOW shared_buffers'), max_connections=$(pgq 'SHOW max_connections')"
meta postgres_source "${BATON_DEV_PG_SOURCE:-?}: $(redact "$DATABASE_URL")"
meta redis "$(redis-cli -u "$REDIS_URL" INFO server 2>/dev/null | tr -d '\r' | awk -F: '$1 == "redis_version" { print $2 }')"
meta redis_source "${BATON_DEV_REDIS_SOURCE:-?}: $(redact "$REDIS_URL")"
meta go "$("$GO" version)"
meta river "$(awk '$1 == "github.com/riverqueue/river" { print $2 }' bench/go.mod)"
meta pgbench "$(pgbench --version)"
meta redis_benchmark "$(redis-benchmark --version)"
meta git "$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')"
meta loadavg_before "$(cut -d' ' -f1-3 /proc/loadavg)"
meta rounds "$ROUNDS"
meta settings "BENCH=$BENCH BENCHTIME=$BENCHTIME PGBENCH_SECONDS=$PGBENCH_SECONDS RIVER_JOBS=$RIVER_JOBS RIVER_SMALL_JOBS=$RIVER_SMALL_JOBS RIVER_REPS=$RIVER_REPS REDIS_REQUESTS=$REDIS_REQUESTS REDIS_CLIENTS=$REDIS_CLIENTS${BATON_BENCH_SCALE:+ BATON_BENCH_SCALE=$BATON_BENCH_SCALE}"

# --- rounds --------------------------------------------------------------------------------------
failures=0
# step DIR NAME FILE CMD...: run CMD, stdout to DIR/FILE, stderr to DIR/FILE.stderr, record the exit status.
step() {
	local dir=$1 name=$2 file=$3 rc=0 t0=$SECONDS
	shift 3
	"$@" >"$dir/$file" 2>"$dir/$file.stderr" || rc=$?
	printf '%s\t%d\t%d\n' "$name" "$rc" $((SECONDS - t0)) >>"$dir/status.tsv"
	if ((rc != 0)); then
		failures=$((failures + 1))
		log "round ${dir##*-}: $name FAILED (exit $rc); see $dir/$file.stderr"
		tail -n 20 "$dir/$file.stderr" "$dir/$file" >&2 || true
	fi
}

t_start=$SECONDS
for ((r = 1; r <= ROUNDS; r++)); do
	dir=$RAW/round-$r
	mkdir -p "$dir"
	cut -d' ' -f1-3 /proc/loadavg >"$dir/loadavg"
	log "round $r/$ROUNDS (load $(cat "$dir/loadavg"))"
	step "$dir" pgbench-1 pgbench-1.txt "${pgb1[@]}"
	step "$dir" pgbench-8 pgbench-8.txt "${pgb8[@]}"
	step "$dir" baton baton.txt "${gob[@]}"
	step "$dir" river river.txt "${river[@]}"
	if ((RIVER_SMALL_JOBS > 0)); then
		step "$dir" river-small river-small.txt "${river_small[@]}"
	fi
	step "$dir" redis redis.csv "${redisb[@]}"
	log "round $r done after $((SECONDS - t_start))s"
done
meta loadavg_after "$(cut -d' ' -f1-3 /proc/loadavg)"
meta finished "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta duration "$((SECONDS - t_start)) s"

# Every Go-format benchmark line of every round, for benchstat.
cat "$RAW"/round-*/baton.txt "$RAW"/round-*/river*.txt >.data/bench.txt 2>/dev/null || true

"$RAW/bin/report" -dir "$RAW" -out "$BENCH_OUT" || die "the report generator failed"
log "wrote $BENCH_OUT from $RAW ($failures failed steps)"
((failures == 0)) || die "$failures benchmark steps failed; BENCHMARKS.md says which"
