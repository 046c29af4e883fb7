#!/usr/bin/env bash
# PostgreSQL and Redis for development, project-local: data, sockets, pid files and logs in .dev/
# (ignored by git). Needs initdb, pg_ctl, redis-server and redis-cli on PATH (the flake's dev shell
# has them; on Debian, PostgreSQL's binaries are in /usr/lib/postgresql/<version>/bin). PostgreSQL
# refuses to run as root. Ports: DEV_PG_PORT (5432) and DEV_REDIS_PORT (6379).
set -euo pipefail
cd "$(dirname "$0")/.."
dev="$PWD/.dev"
pg_port="${DEV_PG_PORT:-5432}"
redis_port="${DEV_REDIS_PORT:-6379}"

urls() {
  echo "DATABASE_URL=postgres://postgres@127.0.0.1:${pg_port}/postgres   (createdb -h 127.0.0.1 -p ${pg_port} -U postgres svc, for a database of its own)"
  echo "REDIS_URL=redis://127.0.0.1:${redis_port}"
}

case "${1:-}" in
  start)
    mkdir -p "$dev"
    if [ ! -f "$dev/pg/PG_VERSION" ]; then
      initdb -D "$dev/pg" -U postgres --auth=trust --encoding=UTF8 >"$dev/initdb.log"
    fi
    if ! pg_ctl -D "$dev/pg" status >/dev/null 2>&1; then
      pg_ctl -D "$dev/pg" -l "$dev/postgres.log" -w \
        -o "-p ${pg_port} -k ${dev} -c listen_addresses=127.0.0.1" start >/dev/null
    fi
    if ! redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1; then
      redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --dir "$dev" \
        --pidfile "$dev/redis.pid" --logfile "$dev/redis.log" --save "" --appendonly no
    fi
    urls
    ;;
  stop)
    if [ -f "$dev/pg/PG_VERSION" ] && pg_ctl -D "$dev/pg" status >/dev/null 2>&1; then
      pg_ctl -D "$dev/pg" -m fast -w stop >/dev/null
    fi
    if [ -f "$dev/redis.pid" ]; then
      redis-cli -h 127.0.0.1 -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
    fi
    ;;
  status)
    pg_ctl -D "$dev/pg" status 2>/dev/null | head -n 1 || echo "PostgreSQL: not started here"
    redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null || echo "Redis: not running on ${redis_port}"
    urls
    ;;
  *)
    echo "usage: bash scripts/dev-services.sh start|stop|status   (PostgreSQL and Redis in .dev/)" >&2
    exit 2
    ;;
esac
