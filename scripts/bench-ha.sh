#!/usr/bin/env bash
# bench-ha.sh — `make bench-ha`: the high-availability figures (the BenchmarkHA* benchmarks of
# ./runner/: a Sentinel failover's event gap and promotion, batch runs through PgBouncer against
# direct, SIGKILL of an instance to its run auto-resumed on another), ROUNDS rounds, then
# bench/ha.md: per figure the median over the rounds with min and max, the goals met or not.
#
# Each iteration of these benchmarks starts private servers of its own (internal/testenv), so a
# round runs each once (-benchtime 1x). make bench leaves them out (scripts/bench.sh -skip).
# Raw output goes to .data/bench-ha/<UTC time>/ (.data/bench-ha/latest points at it). Rerun only
# the report: (cd bench && go run ./hareport -dir ../.data/bench-ha/latest -out ha.md)
#
# Knobs (environment):
#   ROUNDS=5                 rounds (medians need >= 5; fewer only for a trial)
#   GO_BENCH_TIMEOUT=10m     go test -timeout of one round
#   BENCH_HA_OUT=bench/ha.md where the report goes
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
ROUNDS=${ROUNDS:-5}
GO_BENCH_TIMEOUT=${GO_BENCH_TIMEOUT:-10m}
BENCH_HA_OUT=${BENCH_HA_OUT:-bench/ha.md}

log() { printf 'bench-ha: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$ROUNDS'"
((ROUNDS >= 5)) || log "warning: ROUNDS=$ROUNDS; medians of fewer than 5 rounds are for trials only"

# --- tools and services -------------------------------------------------------------------------
# PgBouncer and the Redis server (which also runs the sentinels) are started privately by the
# benchmarks; the shared PostgreSQL and Redis hold the kill-to-resumed benchmark's runs.
if ! [[ -x /usr/sbin/pgbouncer ]] && ! command -v pgbouncer >/dev/null; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		log "installing pgbouncer (apt-get)"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
	fi
	[[ -x /usr/sbin/pgbouncer ]] || command -v pgbouncer >/dev/null || die "pgbouncer is missing (Debian: apt-get install pgbouncer)"
fi
command -v redis-server >/dev/null || die "redis-server is missing (Debian: apt-get install redis-server)"
scripts/dev-services.sh up >/dev/null
# shellcheck source=/dev/null
. .data/env

stamp=$(date -u +%Y%m%dT%H%M%SZ)
RAW=.data/bench-ha/$stamp
mkdir -p "$RAW/bin"
ln -sfn "$stamp" .data/bench-ha/latest
log "raw output in $RAW"

# --- build before the first round, so no round pays for compiling --------------------------------
gob=("$GO" test -p 1 -run '^$' -bench '^BenchmarkHA' -benchtime 1x -count 1 -timeout "$GO_BENCH_TIMEOUT" ./runner/)
log "building the benchmarks and bench/hareport"
"$GO" test -p 1 -count 1 -run '^$' -bench '^$' ./runner/ >"$RAW/build.log" 2>&1 || {
	cat "$RAW/build.log" >&2
	die "go test could not build the benchmarks"
}
(cd bench && "$GO" build -o "../$RAW/bin/hareport" ./hareport) || die "could not build bench/hareport"
printf 'baton\t%s\n' "go test -p 1 -run '^\$' -bench '^BenchmarkHA' -benchtime 1x -count 1 -timeout $GO_BENCH_TIMEOUT ./runner/" >"$RAW/commands.tsv"

# --- machine facts -------------------------------------------------------------------------------
meta() { printf '%s\t%s\n' "$1" "$2" >>"$RAW/meta.tsv"; }
: >"$RAW/meta.tsv"
meta raw "$RAW"
meta started "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/ *$//')"
meta nproc "$(nproc)"
meta memory "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
meta kernel "$(uname -sr)"
meta go "$("$GO" version)"
meta git "$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')"

# --- rounds --------------------------------------------------------------------------------------
failures=0
t_start=$SECONDS
for ((r = 1; r <= ROUNDS; r++)); do
	dir=$RAW/round-$r
	mkdir -p "$dir"
	log "round $r/$ROUNDS (load $(cut -d' ' -f1-3 /proc/loadavg))"
	rc=0 t0=$SECONDS
	"${gob[@]}" >"$dir/ha.txt" 2>"$dir/ha.txt.stderr" || rc=$?
	printf 'baton\t%d\t%d\n' "$rc" $((SECONDS - t0)) >"$dir/status.tsv"
	if ((rc != 0)); then
		failures=$((failures + 1))
		log "round $r FAILED (exit $rc); see $dir/ha.txt"
		tail -n 20 "$dir/ha.txt" >&2 || true
	fi
	log "round $r done after $((SECONDS - t_start))s"
done
meta finished "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta duration "$((SECONDS - t_start)) s"

"$RAW/bin/hareport" -dir "$RAW" -out "$BENCH_HA_OUT" || die "the report generator failed"
log "wrote $BENCH_HA_OUT from $RAW ($failures failed rounds)"
((failures == 0)) || die "$failures rounds failed; $BENCH_HA_OUT says which"
