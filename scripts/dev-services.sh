#!/usr/bin/env bash
# dev-services.sh — make PostgreSQL and Redis reachable for Baton development and tests.
#
#   scripts/dev-services.sh up [--db NAME]   find or start the services, write .data/env
#   scripts/dev-services.sh env              print .data/env (export lines; eval-able)
#   scripts/dev-services.sh down             stop what `up` started under .data/ (or via compose)
#
# `up` picks, for each service separately, the first that works:
#   (a) DATABASE_URL / REDIS_URL from the environment, if reachable (used as given);
#   (b) the shared servers on 127.0.0.1:5432 and 127.0.0.1:6379 (database NAME, created if missing);
#   (c) private servers under .data/pg (port 55432) and .data/redis (port 56379), started if not
#       already running — needs the PostgreSQL server binaries / redis-server;
#   (d) `docker compose up -d --wait postgres redis` with docker-compose.yml.
# NAME defaults to $BATON_DEV_DB or "test" (`make run` uses "baton", so the demo stays out of the
# test database). `up` prints the export lines on stdout and its progress on stderr, so
# `eval "$(scripts/dev-services.sh up)"` works too.
#
# Knobs: BATON_DEV_FORCE_PRIVATE=1 skips (a) and (b); BATON_DEV_PG_PORT / BATON_DEV_REDIS_PORT
# move the private servers; BATON_DEV_NO_DOCKER=1 skips (d).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA=$ROOT/.data
ENV_FILE=$DATA/env
COMPOSE_MARK=$DATA/compose-services
PRIVATE_PG_PORT=${BATON_DEV_PG_PORT:-55432}
PRIVATE_REDIS_PORT=${BATON_DEV_REDIS_PORT:-56379}
DB_NAME=${BATON_DEV_DB:-test}

log() { printf 'dev-services: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# shq quotes a value for a POSIX shell: 'it'\''s'.
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# tcp_open HOST PORT: is something listening? ($0 and $1 expand in the inner bash.)
# shellcheck disable=SC2016
tcp_open() { timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; }

# url_host_port URL: prints "HOST PORT" of a postgres:// or redis:// URL.
url_host_port() {
	local re='^[a-z0-9+]+://([^@/]*@)?([^:/?]+)(:([0-9]+))?'
	[[ $1 =~ $re ]] || return 1
	local port=${BASH_REMATCH[4]}
	if [[ -z $port ]]; then
		case $1 in redis*) port=6379 ;; *) port=5432 ;; esac
	fi
	printf '%s %s\n' "${BASH_REMATCH[2]}" "$port"
}

is_root() { [[ $(id -u) -eq 0 ]]; }

# ---------------------------------------------------------------------------------------------
# PostgreSQL

# pg_bin prints the directory of the newest PostgreSQL server binaries.
pg_bin() {
	local best='' bestv=-1 d v
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x $d/postgres && -x $d/initdb && -x $d/pg_ctl ]] || continue
		v=$(basename "$(dirname "$d")")
		v=${v%%.*}
		[[ $v =~ ^[0-9]+$ ]] || continue
		if ((v > bestv)); then best=$d bestv=$v; fi
	done
	if [[ -z $best ]] && command -v postgres >/dev/null && command -v initdb >/dev/null; then
		best=$(dirname "$(command -v postgres)")
	fi
	[[ -n $best ]] && printf '%s\n' "$best"
}

psql_cmd() {
	if command -v psql >/dev/null; then
		echo psql
	elif [[ -n ${PG_BIN:-} && -x $PG_BIN/psql ]]; then
		echo "$PG_BIN/psql"
	else
		return 1
	fi
}

PG_BIN=$(pg_bin || true)

# pg_works URL: can we log in and run a query?
pg_works() {
	local psql
	if psql=$(psql_cmd); then
		PGCONNECT_TIMEOUT=3 "$psql" "$1" -XAtqc 'SELECT 1' >/dev/null 2>&1
	else
		local hp
		hp=$(url_host_port "$1") || return 1
		# shellcheck disable=SC2086
		tcp_open $hp
	fi
}

# pg_url HOST PORT DB
pg_url() { printf 'postgres://postgres@%s:%s/%s?sslmode=disable' "$1" "$2" "$3"; }

# ensure_db HOST PORT DB [compose]: create database DB if it does not exist yet.
ensure_db() {
	local host=$1 port=$2 db=$3 via=${4:-} psql
	[[ $db =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "bad database name '$db'"
	local q_exists="SELECT 1 FROM pg_database WHERE datname = '$db'"
	local run
	if [[ $via == compose ]] && ! psql_cmd >/dev/null; then
		run=(docker compose -f "$ROOT/docker-compose.yml" exec -T postgres psql -U postgres -d postgres -XAtq)
	elif psql=$(psql_cmd); then
		run=("$psql" "$(pg_url "$host" "$port" postgres)" -XAtq)
	else
		log "no psql: cannot check that database $db exists"
		return 0
	fi
	if [[ $("${run[@]}" -c "$q_exists") != 1 ]]; then
		log "creating database $db on $host:$port"
		# A concurrent `up` may create it first; only a database still missing is an error.
		"${run[@]}" -c "CREATE DATABASE \"$db\"" >/dev/null 2>&1 ||
			[[ $("${run[@]}" -c "$q_exists") == 1 ]] || die "could not create database $db on $host:$port"
	fi
}

# as_pg CMD...: run CMD as the postgres user when we are root (PostgreSQL refuses root).
as_pg() {
	if ! is_root; then
		"$@"
	elif command -v runuser >/dev/null && runuser -u postgres -- true 2>/dev/null; then
		(cd / && runuser -u postgres -- "$@") # from /: the postgres user may not reach $PWD
	else
		(cd / && su postgres -s /bin/sh -c "$(printf '%q ' "$@")")
	fi
}

# pg_base prints the directory holding the private cluster: .data/pg, or — when we are root and
# the postgres user cannot reach the repository (a clone under /root, say) — a directory under
# $TMPDIR that .data/pg links to.
pg_base() {
	local base=$DATA/pg
	if [[ -L $base ]]; then
		readlink -f "$base"
		return
	fi
	mkdir -p "$base"
	if is_root; then
		chown postgres: "$base"
		if ! as_pg test -w "$base"; then
			local alt
			alt=${TMPDIR:-/tmp}/baton-dev-pg-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
			log "the postgres user cannot reach $base; keeping the cluster in $alt"
			mkdir -p "$alt"
			chown postgres: "$alt"
			chmod 700 "$alt"
			rmdir "$base"
			ln -s "$alt" "$base"
			base=$alt
		fi
	fi
	printf '%s\n' "$base"
}

pg_ctl_() { as_pg "$PG_BIN/pg_ctl" "$@"; }

private_pg_running() {
	[[ -n $PG_BIN && -f $DATA/pg/data/PG_VERSION ]] && pg_ctl_ status -D "$(readlink -f "$DATA/pg")/data" >/dev/null 2>&1
}

start_private_pg() {
	local base data
	base=$(pg_base)
	data=$base/data
	if private_pg_running; then
		log "postgres: reusing private server in $base (port $PRIVATE_PG_PORT)"
	else
		if [[ ! -f $data/PG_VERSION ]]; then
			log "postgres: initdb in $data ($PG_BIN)"
			as_pg "$PG_BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
				>"$base/initdb.log" 2>&1 || {
				tail -n 20 "$base/initdb.log" >&2
				die "initdb failed (log: $base/initdb.log)"
			}
		fi
		if tcp_open 127.0.0.1 "$PRIVATE_PG_PORT"; then
			die "port $PRIVATE_PG_PORT is taken by another process; set BATON_DEV_PG_PORT"
		fi
		log "postgres: starting private server on 127.0.0.1:$PRIVATE_PG_PORT"
		# No unix socket: everything connects over TCP, and socket paths have a length limit.
		pg_ctl_ start -D "$data" -l "$base/postgres.log" -w -t 120 -o "-p $PRIVATE_PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off" >/dev/null || {
			tail -n 30 "$base/postgres.log" >&2
			die "private postgres did not start (log: $base/postgres.log)"
		}
	fi
	ensure_db 127.0.0.1 "$PRIVATE_PG_PORT" "$DB_NAME"
	DATABASE_URL=$(pg_url 127.0.0.1 "$PRIVATE_PG_PORT" "$DB_NAME")
}

stop_private_pg() {
	if private_pg_running; then
		log "postgres: stopping private server in $DATA/pg"
		pg_ctl_ stop -D "$(readlink -f "$DATA/pg")/data" -m fast -w >/dev/null
	fi
}

# ---------------------------------------------------------------------------------------------
# Redis

# redis_works URL: does it answer PING?
redis_works() {
	if command -v redis-cli >/dev/null; then
		[[ $(timeout 5 redis-cli -u "$1" ping 2>/dev/null) == PONG ]]
	else
		local hp host port reply
		hp=$(url_host_port "$1") || return 1
		read -r host port <<<"$hp"
		# shellcheck disable=SC2016
		reply=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf "PING\r\n" >&3 && head -c 5 <&3' "$host" "$port" 2>/dev/null) || return 1
		[[ $reply == +PONG ]]
	fi
}

private_redis_running() {
	local pid
	[[ -f $DATA/redis/redis.pid ]] || return 1
	pid=$(<"$DATA/redis/redis.pid")
	kill -0 "$pid" 2>/dev/null && redis_works "redis://127.0.0.1:$PRIVATE_REDIS_PORT/0"
}

start_private_redis() {
	local base=$DATA/redis
	mkdir -p "$base"
	if private_redis_running; then
		log "redis: reusing private server in $base (port $PRIVATE_REDIS_PORT)"
	else
		if tcp_open 127.0.0.1 "$PRIVATE_REDIS_PORT"; then
			die "port $PRIVATE_REDIS_PORT is taken by another process; set BATON_DEV_REDIS_PORT"
		fi
		log "redis: starting private server on 127.0.0.1:$PRIVATE_REDIS_PORT"
		redis-server --port "$PRIVATE_REDIS_PORT" --bind 127.0.0.1 --daemonize yes \
			--pidfile "$base/redis.pid" --logfile "$base/redis.log" --dir "$base" \
			--save '' --appendonly no
		local i
		for ((i = 0; i < 100; i++)); do
			redis_works "redis://127.0.0.1:$PRIVATE_REDIS_PORT/0" && break
			sleep 0.1
		done
		redis_works "redis://127.0.0.1:$PRIVATE_REDIS_PORT/0" || {
			tail -n 20 "$base/redis.log" >&2
			die "private redis did not start (log: $base/redis.log)"
		}
	fi
	REDIS_URL=redis://127.0.0.1:$PRIVATE_REDIS_PORT/0
}

stop_private_redis() {
	[[ -f $DATA/redis/redis.pid ]] || return 0
	local pid i
	pid=$(<"$DATA/redis/redis.pid")
	if kill -0 "$pid" 2>/dev/null; then
		log "redis: stopping private server in $DATA/redis"
		kill -TERM "$pid"
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		! kill -0 "$pid" 2>/dev/null || die "redis (pid $pid) did not stop"
	fi
	rm -f "$DATA/redis/redis.pid"
}

# ---------------------------------------------------------------------------------------------
# Docker compose

compose_works() {
	[[ -z ${BATON_DEV_NO_DOCKER:-} ]] && command -v docker >/dev/null &&
		docker compose version >/dev/null 2>&1 && docker info >/dev/null 2>&1
}

# start_compose SERVICE: start one compose service and wait until its healthcheck passes.
start_compose() {
	log "$1: docker compose up -d --wait $1"
	docker compose -f "$ROOT/docker-compose.yml" up -d --wait "$1" >&2 ||
		die "docker compose could not start $1"
	mkdir -p "$DATA"
	grep -qx "$1" "$COMPOSE_MARK" 2>/dev/null || echo "$1" >>"$COMPOSE_MARK"
}

# ---------------------------------------------------------------------------------------------

resolve_pg() {
	if [[ -z ${BATON_DEV_FORCE_PRIVATE:-} ]]; then
		if [[ -n ${DATABASE_URL:-} ]]; then
			if pg_works "$DATABASE_URL"; then
				log "postgres: using DATABASE_URL from the environment"
				PG_SOURCE="env"
				return
			fi
			log "postgres: DATABASE_URL is set but not reachable; looking further"
		fi
		if tcp_open 127.0.0.1 5432; then
			if pg_works "$(pg_url 127.0.0.1 5432 postgres)"; then
				ensure_db 127.0.0.1 5432 "$DB_NAME"
				DATABASE_URL=$(pg_url 127.0.0.1 5432 "$DB_NAME")
				log "postgres: using the server on 127.0.0.1:5432, database $DB_NAME"
				PG_SOURCE=shared
				return
			fi
			log "postgres: 127.0.0.1:5432 answers, but user postgres cannot log in without a password; set DATABASE_URL to use it"
		fi
	fi
	# Checked here, not inside: `if f; then` would switch off set -e within f.
	if [[ -n $PG_BIN ]]; then
		start_private_pg
		PG_SOURCE=private
		return
	fi
	if compose_works; then
		start_compose postgres
		ensure_db 127.0.0.1 "${BATON_COMPOSE_PG_PORT:-5432}" "$DB_NAME" compose
		DATABASE_URL=$(pg_url 127.0.0.1 "${BATON_COMPOSE_PG_PORT:-5432}" "$DB_NAME")
		PG_SOURCE=compose
		return
	fi
	die "no PostgreSQL: none on 127.0.0.1:5432, no server binaries to start one (looked in /usr/lib/postgresql/*/bin and PATH), no working 'docker compose'.
  Install one of: PostgreSQL 15+ (Debian/Ubuntu: apt-get install postgresql), Docker with the compose plugin,
  or point DATABASE_URL at a server you can reach (postgres://user@host:port/db?sslmode=disable)."
}

resolve_redis() {
	if [[ -z ${BATON_DEV_FORCE_PRIVATE:-} ]]; then
		if [[ -n ${REDIS_URL:-} ]]; then
			if redis_works "$REDIS_URL"; then
				log "redis: using REDIS_URL from the environment"
				REDIS_SOURCE="env"
				return
			fi
			log "redis: REDIS_URL is set but not reachable; looking further"
		fi
		if redis_works redis://127.0.0.1:6379/0; then
			REDIS_URL=redis://127.0.0.1:6379/0
			log "redis: using the server on 127.0.0.1:6379"
			REDIS_SOURCE=shared
			return
		fi
	fi
	if command -v redis-server >/dev/null; then
		start_private_redis
		REDIS_SOURCE=private
		return
	fi
	if compose_works; then
		start_compose redis
		REDIS_URL=redis://127.0.0.1:${BATON_COMPOSE_REDIS_PORT:-6379}/0
		REDIS_SOURCE=compose
		return
	fi
	die "no Redis: none on 127.0.0.1:6379, no redis-server to start one, no working 'docker compose'.
  Install one of: Redis 7 (Debian/Ubuntu: apt-get install redis-server), Docker with the compose plugin,
  or point REDIS_URL at a server you can reach (redis://host:port/0)."
}

write_env() {
	mkdir -p "$DATA"
	local tmp
	tmp=$(mktemp "$DATA/env.XXXXXX")
	{
		echo "# Written by scripts/dev-services.sh up. Load it with: . .data/env"
		echo "export DATABASE_URL=$(shq "$DATABASE_URL")"
		echo "export REDIS_URL=$(shq "$REDIS_URL")"
		echo "export BATON_DEV_PG_SOURCE=$PG_SOURCE"
		echo "export BATON_DEV_REDIS_SOURCE=$REDIS_SOURCE"
	} >"$tmp"
	mv "$tmp" "$ENV_FILE"
}

cmd_up() {
	while (($#)); do
		case $1 in
		--db)
			[[ $# -ge 2 ]] || die "--db needs a name"
			DB_NAME=$2
			shift 2
			;;
		--db=*)
			DB_NAME=${1#--db=}
			shift
			;;
		*) die "unknown argument to up: $1" ;;
		esac
	done
	PG_SOURCE='' REDIS_SOURCE=''
	resolve_pg
	resolve_redis
	write_env
	log "wrote $ENV_FILE (postgres: $PG_SOURCE, redis: $REDIS_SOURCE)"
	cat "$ENV_FILE"
}

cmd_env() {
	[[ -f $ENV_FILE ]] || die "$ENV_FILE does not exist; run: scripts/dev-services.sh up"
	cat "$ENV_FILE"
}

cmd_down() {
	stop_private_pg
	stop_private_redis
	if [[ -s $COMPOSE_MARK ]] && compose_works; then
		local services
		mapfile -t services <"$COMPOSE_MARK"
		log "docker compose stop ${services[*]}"
		docker compose -f "$ROOT/docker-compose.yml" stop "${services[@]}" >&2
	fi
	rm -f "$COMPOSE_MARK"
	# The env file may name servers that are now gone; a shared-only one stays valid.
	if [[ -f $ENV_FILE ]] && grep -Eq '^export BATON_DEV_(PG|REDIS)_SOURCE=(private|compose)$' "$ENV_FILE"; then
		rm -f "$ENV_FILE"
	fi
}

case ${1:-} in
up)
	shift
	cmd_up "$@"
	;;
down) cmd_down ;;
env) cmd_env ;;
*)
	echo "usage: $0 up [--db NAME] | down | env" >&2
	exit 2
	;;
esac
