#!/usr/bin/env bash
# bench.sh [PACKAGES...] — run the Go benchmarks against the dev PostgreSQL and Redis and keep
# the output in .data/bench.txt (benchstat reads it: `benchstat old.txt .data/bench.txt`).
# BENCH (default .) selects benchmarks, BENCH_COUNT (default 5) repeats them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
out=.data/bench.txt

scripts/dev-services.sh up >/dev/null
# shellcheck source=/dev/null
. .data/env

mkdir -p .data
(($#)) || set -- ./...
tmp=$(mktemp .data/bench.XXXXXX)
trap 'rm -f "$tmp"' EXIT
"$GO" test -run '^$' -bench "${BENCH:-.}" -benchmem -count "${BENCH_COUNT:-5}" "$@" 2>&1 | tee "$tmp"
mv "$tmp" "$out"
echo "bench: results in $out" >&2
