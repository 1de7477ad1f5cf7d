#!/usr/bin/env bash
# fuzz.sh [PACKAGES...] — run every Fuzz* target in the module (or in PACKAGES), one after the
# other, each for FUZZTIME (default 30s): today runner's FuzzParseSchedule and graph's cursor,
# global-id and mutation-input targets. `go test -fuzz` takes one target in one package at a
# time, so the targets are listed first with `go test -list`. New crashers land in the
# package's testdata/fuzz/ and become regression cases of the ordinary `go test`; until their
# bug is fixed, move them to testdata/fuzz-found/ (see graph/testdata/fuzz-found/README.md).
#
# FUZZMINIMIZETIME (default 10s) bounds how long the fuzzer shrinks each new input: the graph
# targets go through a real endpoint and database, so Go's default (60s) would eat most of a
# short FUZZTIME. Inputs failing for a bug already known are skipped (graph's knownBugs);
# BATON_FUZZ_STRICT=1 makes them fail instead.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-10s}

# Fuzz targets that touch the database find it like any test; pure ones do not need it.
if scripts/dev-services.sh up >/dev/null; then
	# shellcheck source=/dev/null
	. .data/env
else
	echo "fuzz: PostgreSQL/Redis not available; fuzzing anyway" >&2
fi

(($#)) || set -- ./...
# `go test -list` prints each package's matching names, then "ok <package> <time>".
listing=$("$GO" test -list '^Fuzz' "$@") || {
	printf '%s\n' "$listing"
	echo "fuzz: could not list the fuzz targets (build failure above)" >&2
	exit 1
}
mapfile -t targets < <(printf '%s\n' "$listing" | awk '
	/^Fuzz/ { names[n++] = $1; next }
	/^ok[ \t]/ { for (i = 0; i < n; i++) print $2, names[i]; n = 0; next }
	{ n = 0 }')

if ((${#targets[@]} == 0)); then
	echo "fuzz: no Fuzz* targets in $*; nothing fuzzed"
	exit 0
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=()
raced=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	printf '\n==> fuzz %s %s for %s\n' "$pkg" "$name" "$FUZZTIME"
	corpus="$("$GO" list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null || true)
	if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg" 2>&1 | tee "$out"; then
		continue
	fi
	# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline exceeded" when
	# -fuzztime ends while a worker is busy (golang/go#75804, fixed in Go 1.27). That is no
	# finding: no failing input is written. Anything else, or a new file in the corpus, is.
	after=$(ls "$corpus" 2>/dev/null || true)
	if [[ $before == "$after" ]] && grep -qx '[[:space:]]*context deadline exceeded' "$out" &&
		! grep -q -e 'Failing input written' -e '^[[:space:]]*--- FAIL: .*/' -e 'panic:' "$out"; then
		echo "fuzz: $pkg.$name stopped on Go's -fuzztime shutdown race (golang/go#75804), no failing input: not a finding"
		raced+=("$pkg.$name")
		continue
	fi
	failed+=("$pkg.$name")
done
echo
if ((${#raced[@]})); then
	echo "fuzz: ended by Go's shutdown race without a finding: ${raced[*]}"
fi
if ((${#failed[@]})); then
	echo "fuzz: FAILED: ${failed[*]}"
	exit 1
fi
echo "fuzz: ${#targets[@]} target(s) ran for $FUZZTIME each without failure"
