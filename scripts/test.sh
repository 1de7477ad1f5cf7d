#!/usr/bin/env bash
# test.sh — everything CI checks (`make test`, `.ci/run`). Installs what is missing (or, with
# --check-only, only says what is: one message naming each tool and its package), makes
# PostgreSQL and Redis reachable (scripts/dev-services.sh), then runs, in order:
#   generated-code drift check (only when CI=true), go vet + gofmt, the build, the Prometheus
#   rules (promtool), the Go tests with the race detector, the SPA's tests (once
#   frontend/package.json exists) and the browser end-to-end tests (once e2e/package.json
#   exists).
# Every check runs even when an earlier one failed; the exit status is non-zero if any failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
GO_TEST_TIMEOUT=${GO_TEST_TIMEOUT:-15m}

log() { printf '\n==> %s\n' "$*"; }
die() {
	printf 'test.sh: error: %s\n' "$*" >&2
	exit 1
}

failed=()
# step NAME CMD...: run CMD in a subshell with set -e in force, record a failure, go on.
step() {
	local name=$1 rc start=$SECONDS
	shift
	log "$name"
	set +e
	(
		set -e
		"$@"
	)
	rc=$?
	set -e
	if ((rc == 0)); then
		printf '<== %s: ok (%ds)\n' "$name" $((SECONDS - start))
	else
		printf '<== %s: FAILED (exit %d, %ds)\n' "$name" "$rc" $((SECONDS - start))
		failed+=("$name")
	fi
}

as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "need root to run: $*"
	fi
}

# --- what the tests need ------------------------------------------------------------------
# The tests start private PostgreSQL servers (postgres, initdb, pg_ctl, pg_basebackup for the
# standbys) and Redis servers (redis-server, redis-cli for Cluster), PgBouncer in front of
# PostgreSQL, promtool for the rules, and, once there are browser tests, Chromium and node/npm.
# Where they are looked for: PostgreSQL's server binaries in /usr/lib/postgresql/*/bin (else on
# PATH), pgbouncer in /usr/sbin (else on PATH), chromium at /usr/bin/chromium, the rest on PATH.
# BATON_PG_BIN_GLOB, BATON_SBIN and BATON_CHROMIUM move those places (the script's own test).
PG_BIN_GLOB=${BATON_PG_BIN_GLOB:-/usr/lib/postgresql/*/bin}
SBIN=${BATON_SBIN:-/usr/sbin}
CHROMIUM=${BATON_CHROMIUM:-/usr/bin/chromium}

have() { command -v "$1" >/dev/null 2>&1; }

# pg_bin_dir prints the directory of PostgreSQL's server binaries, the newest version's.
pg_bin_dir() {
	local d p found=
	# shellcheck disable=SC2086 # the glob is to expand
	for d in $PG_BIN_GLOB; do # in order: the last is the newest major version
		if [[ -x $d/postgres && -x $d/initdb ]]; then
			found=$d
		fi
	done
	if [[ -z $found ]] && p=$(command -v postgres 2>/dev/null) && [[ -x ${p%/*}/initdb ]]; then
		found=${p%/*}
	fi
	[[ -n $found ]] && echo "$found"
}

# missing_prereqs prints one line per missing tool: the tool and the Debian package it is in.
missing_prereqs() {
	local pgdir t
	pgdir=$(pg_bin_dir) || pgdir=
	for t in postgres initdb pg_ctl; do
		[[ -n $pgdir && -x $pgdir/$t ]] || echo "$t postgresql"
	done
	[[ -n $pgdir && -x $pgdir/pg_basebackup ]] || have pg_basebackup || echo "pg_basebackup postgresql-client"
	have redis-server || echo "redis-server redis-server"
	have redis-cli || echo "redis-cli redis-tools"
	[[ -x $SBIN/pgbouncer ]] || have pgbouncer || echo "pgbouncer pgbouncer"
	have promtool || echo "promtool prometheus"
	if [[ -f frontend/package.json || -f e2e/package.json ]]; then
		[[ -x $CHROMIUM ]] || echo "chromium chromium"
		have node || echo "node nodejs"
		have npm || echo "npm npm"
	fi
}

# missing_message is the one message naming what is missing and how to get it.
missing_message() {
	local tools=() pkgs=() tool pkg
	while read -r tool pkg; do
		tools+=("$tool")
		[[ " ${pkgs[*]} " == *" $pkg "* ]] || pkgs+=("$pkg")
	done <<<"$1"
	local list=${tools[0]} verb=is i
	for ((i = 1; i < ${#tools[@]}; i++)); do
		list+=", ${tools[i]}"
	done
	((${#tools[@]} == 1)) || verb=are
	printf 'test.sh: the tests need %s, which %s not installed. On Debian or Ubuntu: apt-get install --no-install-recommends %s (prometheus gives promtool); elsewhere install them so that they are on PATH (PostgreSQL'"'"'s server binaries may be in /usr/lib/postgresql/*/bin).\n' \
		"$list" "$verb" "${pkgs[*]}"
}

# ensure_prereqs installs what is missing with apt-get when it can (as root, or with sudo),
# then fails with one message naming what is still missing and how to get it.
ensure_prereqs() {
	local missing pkgs
	missing=$(missing_prereqs)
	[[ -z $missing ]] && return 0
	if [[ $CHECK_ONLY != true ]] && have apt-get && { [[ $(id -u) -eq 0 ]] || have sudo; }; then
		pkgs=$(awk '{print $2}' <<<"$missing" | sort -u | tr '\n' ' ')
		log "installing $pkgs(apt-get)"
		# shellcheck disable=SC2086
		as_root apt-get update && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs || true
		missing=$(missing_prereqs)
		[[ -z $missing ]] && return 0
	fi
	missing_message "$missing" >&2
	return 1
}

ensure_go_modules() {
	command -v "$GO" >/dev/null || die "go is not installed (Go $(sed -n 's/^go //p' go.mod) needed)"
	log "go mod download"
	"$GO" mod download
}

go_tests() {
	mkdir -p .data
	# The ok/FAIL lines go to the console; a copy stays in .data/go-test.log.
	"$GO" test -race -count=1 -timeout "$GO_TEST_TIMEOUT" ./... 2>&1 | tee .data/go-test.log
}

# prometheus_rules checks deploy/prometheus with promtool: the example configuration with the
# rule files it loads, the rule files themselves, then the rules' unit tests (deploy/README.md).
prometheus_rules() {
	promtool check config deploy/prometheus/prometheus.yml
	promtool check rules deploy/prometheus/*.rules.yml
	promtool test rules deploy/prometheus/tests/*.test.yml
}

frontend_tests() {
	scripts/npm-deps.sh frontend
	(cd frontend && npm test)
}

browser_tests() {
	scripts/npm-deps.sh e2e
	# e2e/run.sh builds the SPA and baton itself, unless given a binary that embeds the SPA:
	# `make build` above just made one.
	(cd e2e && E2E_BATON_BIN=${BATON_BIN:-} npm test)
}

# --- install what is missing ------------------------------------------------------------------
CHECK_ONLY=false
case ${1:-} in
--check-only)
	# Only say whether everything the tests need is there, and what is not; install nothing.
	CHECK_ONLY=true
	ensure_prereqs || exit 1
	echo "test.sh: everything the tests need is installed"
	exit 0
	;;
"") ;;
*) die "unknown argument $1 (the only one is --check-only)" ;;
esac
ensure_go_modules
# A failed install fails the run, but the Go tests still run first.
ensure_prereqs || failed+=("install what the tests need")
if [[ -x $CHROMIUM ]]; then
	# The names the common browser drivers look for.
	export CHROME_BIN=$CHROMIUM CHROME_PATH=$CHROMIUM
	export PUPPETEER_EXECUTABLE_PATH=$CHROMIUM PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH=$CHROMIUM
fi

# --- services ---------------------------------------------------------------------------------
log "PostgreSQL and Redis"
scripts/dev-services.sh up >/dev/null || die "PostgreSQL/Redis not available (see above)"
# shellcheck source=/dev/null
. .data/env
echo "DATABASE_URL=$DATABASE_URL"
echo "REDIS_URL=$REDIS_URL"

# --- checks -----------------------------------------------------------------------------------
if [[ ${CI:-} == true ]]; then
	step "generated code is up to date (make check-generate)" make --no-print-directory check-generate
fi
step "lint (go vet, gofmt)" make --no-print-directory lint
if [[ -d cmd/baton ]]; then
	step "build bin/baton" make --no-print-directory build
	export BATON_BIN=$ROOT/bin/baton
fi
step "Prometheus rules (promtool)" prometheus_rules
step "go test -race" go_tests
if [[ -f frontend/package.json ]]; then
	step "frontend tests" frontend_tests
fi
if [[ -f e2e/package.json ]]; then
	step "browser end-to-end tests" browser_tests
fi

echo
if ((${#failed[@]})); then
	echo "FAILED: ${failed[*]}"
	exit 1
fi
echo "all checks passed"
