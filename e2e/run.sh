#!/usr/bin/env bash
# run.sh — browser end-to-end tests of the admin console (`npm test` in e2e/, `make test`).
#
# Builds the SPA and a baton binary that embeds it, makes a fresh database baton_e2e_<random>
# on the PostgreSQL server of DATABASE_URL (dropped at exit), starts `baton serve --demo` on a
# free port with a unique BATON_ENV on REDIS_URL, mints one token per role, and runs the specs
# in browser/ with node's test runner: Playwright (playwright-core) driving Debian's chromium.
# Screenshots and the server log land in e2e/test-results/.
#
# Environment:
#   DATABASE_URL     PostgreSQL server to create the test database on
#                    (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
#   REDIS_URL        Redis (default redis://127.0.0.1:6379/0)
#   E2E_BATON_BIN    a baton binary that already embeds the SPA: skip both builds (scripts/test.sh
#                    passes the bin/baton that `make build` just made)
#   CHROMIUM         the browser (default /usr/bin/chromium; installed with apt-get when missing)
#   E2E_KEEP=1       keep the database and the server's log for a look afterwards
#   E2E_SPECS        the spec files to run, relative to e2e/ (default: every browser/*.test.mjs)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
E2E=$ROOT/e2e
WORK=$ROOT/.data/e2e
ARTIFACTS=$E2E/test-results
DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export CHROMIUM

log() { printf 'e2e: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

command -v node >/dev/null || die "node is not installed (Node 20.19+ needed)"
command -v psql >/dev/null || die "psql is not installed (Debian: postgresql-client)"
mkdir -p "$WORK" "$ARTIFACTS"
rm -f "$ARTIFACTS"/*.png "$ARTIFACTS"/*.log

# --- browser and test dependencies -----------------------------------------------------------
if [[ ! -x $CHROMIUM ]]; then
	log "installing chromium (apt-get)"
	sudo_=()
	[[ $(id -u) -eq 0 ]] || sudo_=(sudo)
	"${sudo_[@]}" apt-get update -qq && "${sudo_[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	[[ -x $CHROMIUM ]] || die "no browser at $CHROMIUM"
fi
"$ROOT/scripts/npm-deps.sh" "$E2E"

# --- the binary, with the SPA embedded ---------------------------------------------------------
if [[ -n ${E2E_BATON_BIN:-} ]]; then
	[[ -x $E2E_BATON_BIN ]] || die "E2E_BATON_BIN=$E2E_BATON_BIN is not an executable"
	BIN=$E2E_BATON_BIN
	log "using $BIN"
else
	log "building the SPA"
	"$ROOT/scripts/npm-deps.sh" "$ROOT/frontend"
	npm --prefix "$ROOT/frontend" run build >"$WORK/spa-build.log" 2>&1 || {
		tail -n 40 "$WORK/spa-build.log" >&2
		die "SPA build failed (log: $WORK/spa-build.log)"
	}
	log "building baton"
	BIN=$WORK/baton
	(cd "$ROOT" && go build -o "$BIN" ./cmd/baton)
fi

# --- a fresh database and Redis namespace -------------------------------------------------------
suffix=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
DB=baton_e2e_$suffix
# with_db URL NAME: URL with its database replaced by NAME.
with_db() { node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString())' "$1" "$2"; }
ADMIN_URL=$(with_db "$DATABASE_URL" postgres)
TEST_DB_URL=$(with_db "$DATABASE_URL" "$DB")
export BATON_ENV=e2e_$suffix

SERVER_PID=
cleanup() {
	local rc=$?
	if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	[[ -f $WORK/server.log ]] && cp "$WORK/server.log" "$ARTIFACTS/server.log"
	if [[ ${E2E_KEEP:-} == 1 ]]; then
		log "kept database $DB (E2E_KEEP=1)"
	else
		psql "$ADMIN_URL" -qXc "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1 || log "could not drop database $DB"
		if command -v redis-cli >/dev/null; then
			redis-cli -u "$REDIS_URL" --scan --pattern "baton:$BATON_ENV:*" 2>/dev/null | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null 2>&1 || true
		fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "creating database $DB"
psql "$ADMIN_URL" -qXv ON_ERROR_STOP=1 -c "CREATE DATABASE \"$DB\"" >/dev/null

# --- the server ---------------------------------------------------------------------------------
PORT=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
BASE=http://127.0.0.1:$PORT
# Demo sizes: demo-collect runs long enough to watch, cancel and resume (300 pages at 150ms);
# demo-settlement finishes in a couple of seconds so its run can be replayed.
log "starting baton serve --demo on $BASE (env $BATON_ENV)"
DATABASE_URL=$TEST_DB_URL REDIS_URL=$REDIS_URL \
	BATON_DEMO_PAGES=${BATON_DEMO_PAGES:-300} BATON_DEMO_PAGE_LATENCY=${BATON_DEMO_PAGE_LATENCY:-150ms} \
	BATON_DEMO_ACCOUNTS=${BATON_DEMO_ACCOUNTS:-40} BATON_DEMO_PROVIDER_LATENCY=${BATON_DEMO_PROVIDER_LATENCY:-30ms} \
	BATON_DEMO_FLAKY_ITEMS=${BATON_DEMO_FLAKY_ITEMS:-20} BATON_DEMO_ITEM_LATENCY=${BATON_DEMO_ITEM_LATENCY:-20ms} \
	BATON_SECRET_KEY=$(head -c 32 /dev/urandom | base64) BATON_NOTIFY_ALLOW_PRIVATE_NETWORKS=true \
	"$BIN" serve --demo --addr "127.0.0.1:$PORT" --instance e2e-1 --log-format text --shutdown-timeout 5s \
	>"$WORK/server.log" 2>&1 &
SERVER_PID=$!

ready=
for _ in $(seq 1 300); do
	kill -0 "$SERVER_PID" 2>/dev/null || {
		tail -n 40 "$WORK/server.log" >&2
		die "baton serve exited early"
	}
	if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$BASE/readyz"; then
		ready=1
		break
	fi
	sleep 0.2
done
[[ -n $ready ]] || {
	tail -n 40 "$WORK/server.log" >&2
	die "baton serve not ready after 60s"
}
node -e 'fetch(process.argv[1]).then((r) => r.text()).then((t) => process.exit(t.includes("id=\"root\"") ? 0 : 1), () => process.exit(1))' "$BASE/admin/" ||
	die "$BIN serves no console at /admin/: it must embed the SPA (cmd/baton's consoleHandler returning frontend.Handler())"

# --- tokens ---------------------------------------------------------------------------------------
token() { DATABASE_URL=$TEST_DB_URL "$BIN" token create --name "e2e-$1" --role "$1" | tail -n 1; }
E2E_TOKEN_VIEWER=$(token viewer)
E2E_TOKEN_OPERATOR=$(token operator)
E2E_TOKEN_APPROVER=$(token approver)
E2E_TOKEN_ADMIN=$(token admin)
export E2E_TOKEN_VIEWER E2E_TOKEN_OPERATOR E2E_TOKEN_APPROVER E2E_TOKEN_ADMIN
export BATON_URL=$BASE E2E_ARTIFACTS=$ARTIFACTS E2E_DATABASE_URL=$TEST_DB_URL

# --- the specs --------------------------------------------------------------------------------------
log "running the browser specs"
cd "$E2E"
# shellcheck disable=SC2086 # E2E_SPECS is a list of paths
node --test --test-reporter=spec --test-concurrency=1 ${E2E_SPECS:-browser/*.test.mjs}
