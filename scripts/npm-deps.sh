#!/usr/bin/env bash
# npm-deps.sh DIR — install DIR's node modules with `npm ci`, unless node_modules is already up
# to date with package-lock.json (npm writes node_modules/.package-lock.json on every install).
# A fresh clone (CI) has no node_modules, so it always gets a clean `npm ci`.
set -euo pipefail

dir=${1:?usage: npm-deps.sh DIR}
[[ -f $dir/package.json ]] || exit 0
command -v npm >/dev/null || {
	echo "npm-deps: $dir/package.json exists but npm is not installed (Node 20+ needed)" >&2
	exit 1
}
if [[ ! -f $dir/package-lock.json ]]; then
	echo "npm-deps: $dir/package-lock.json is missing; commit one (npm install writes it)" >&2
	exit 1
fi
stamp=$dir/node_modules/.package-lock.json
if [[ ! -f $stamp || $dir/package-lock.json -nt $stamp || $dir/package.json -nt $stamp ]]; then
	echo "npm-deps: npm ci in $dir" >&2
	(cd "$dir" && npm ci --no-audit --no-fund)
fi
