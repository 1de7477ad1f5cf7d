#!/usr/bin/env bash
# fuzz.sh [PACKAGES...] — run every Fuzz* target in the module (or in PACKAGES), one after the
# other, each for FUZZTIME (default 30s). `go test -fuzz` takes one target in one package at a
# time, so the targets are listed first with `go test -list`. New crashers land in the
# package's testdata/fuzz/ and become regression cases of the ordinary `go test`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}

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

failed=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	printf '\n==> fuzz %s %s for %s\n' "$pkg" "$name" "$FUZZTIME"
	if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
		failed+=("$pkg.$name")
	fi
done
echo
if ((${#failed[@]})); then
	echo "fuzz: FAILED: ${failed[*]}"
	exit 1
fi
echo "fuzz: ${#targets[@]} target(s) ran for $FUZZTIME each without failure"
