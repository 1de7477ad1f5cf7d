#!/usr/bin/env bash
# test.sh — everything CI checks (`make test`, `.ci/run`). Installs what is missing, makes
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

# ensure_chromium installs Chromium for the browser tests, only when there are browser tests
# (frontend/ or e2e/) and /usr/bin/chromium is missing.
ensure_chromium() {
	[[ -x /usr/bin/chromium ]] && return 0
	[[ -f frontend/package.json || -f e2e/package.json ]] || return 0
	log "installing chromium (apt-get)"
	as_root apt-get update && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
}

# ensure_pgbouncer installs Debian's PgBouncer, which the tests start in front of a private
# PostgreSQL (internal/testenv.PrivatePgBouncer), when it is missing.
ensure_pgbouncer() {
	if [[ -x /usr/sbin/pgbouncer ]] || command -v pgbouncer >/dev/null; then
		return 0
	fi
	if ! command -v apt-get >/dev/null; then
		echo "pgbouncer is not installed and there is no apt-get to install it" >&2
		return 1
	fi
	log "installing pgbouncer (apt-get)"
	as_root apt-get update && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer
}

# ensure_promtool installs Debian's prometheus package, for its promtool, when promtool is
# missing: prometheus_rules and the Go tests of deploy/ run it. Without recommends: the node
# exporter is of no use here.
ensure_promtool() {
	if command -v promtool >/dev/null; then
		return 0
	fi
	if ! command -v apt-get >/dev/null; then
		echo "promtool is not installed and there is no apt-get to install it (Debian's prometheus package)" >&2
		return 1
	fi
	log "installing prometheus for promtool (apt-get)"
	as_root apt-get update && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
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
ensure_go_modules
# A failed install fails the run, but the Go tests still run first.
ensure_chromium || failed+=("install chromium")
ensure_pgbouncer || failed+=("install pgbouncer")
ensure_promtool || failed+=("install promtool")
if [[ -x /usr/bin/chromium ]]; then
	# The names the common browser drivers look for.
	export CHROME_BIN=/usr/bin/chromium CHROME_PATH=/usr/bin/chromium
	export PUPPETEER_EXECUTABLE_PATH=/usr/bin/chromium PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH=/usr/bin/chromium
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
