#!/usr/bin/env bash
# ldflags.sh — prints the -X flags that stamp a build of baton with its version and commit
# (internal/buildinfo). VERSION and COMMIT override what git says; outside a git checkout
# (a source archive) they stay empty and the binary says "dev".
#   go build -ldflags "-s -w $(scripts/ldflags.sh)" ./cmd/baton
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pkg=github.com/baton-run/baton/internal/buildinfo
version=${VERSION:-}
commit=${COMMIT:-}
if [[ -z $version || -z $commit ]] && git rev-parse --git-dir >/dev/null 2>&1; then
	dirty=
	if ! git diff --quiet HEAD -- 2>/dev/null; then
		dirty=-dirty
	fi
	[[ -n $commit ]] || commit=$(git rev-parse --short=12 HEAD)$dirty
	[[ -n $version ]] || version=$(git describe --tags --dirty 2>/dev/null || true)
fi
out=
[[ -z $version ]] || out+="-X $pkg.version=$version "
[[ -z $commit ]] || out+="-X $pkg.commit=$commit"
printf '%s\n' "${out% }"
