#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback for the tests (Debian's packages).
#   .ci/postgres.sh start [PORT]   initdb into a temp folder, start it, create a database,
#                                  and print the variables to export (eval "$(... start)")
#   .ci/postgres.sh stop           stop the cluster started last and remove its folder
# As root the cluster runs as the `postgres` user (initdb refuses root).
set -euo pipefail
state=/tmp/judge-ci-postgres.state
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "no PostgreSQL under /usr/lib/postgresql (apt-get install postgresql)" >&2; exit 1; }

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
  start)
    # A free loopback port unless one is given (a cluster left by another run keeps its own).
    port=${2:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    data=$(mktemp -d /tmp/judge-ci-pg.XXXXXX)
    [ "$(id -u)" = 0 ] && chown postgres: "$data"
    as_pg "$bin/initdb" -D "$data/db" -U judge --auth=trust -E UTF8 >"$data/initdb.log" 2>&1
    as_pg "$bin/pg_ctl" -D "$data/db" -l "$data/server.log" -w -t 30 \
      -o "-k /tmp -c listen_addresses=127.0.0.1 -p $port -c fsync=off" start >/dev/null
    as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U judge judge_test
    echo "$data $port" >"$state"
    echo "export JUDGE_TEST_POSTGRES_URL=postgresql+psycopg://judge@127.0.0.1:$port/judge_test"
    echo "export JUDGE_TEST_POSTGRES_DATA=$data/db"
    ;;
  stop)
    [ -f "$state" ] || exit 0
    read -r data _port <"$state"
    as_pg "$bin/pg_ctl" -D "$data/db" -m fast -w stop >/dev/null || true
    rm -rf "$data" "$state"
    ;;
  *)
    echo "usage: $0 start [PORT] | stop" >&2; exit 2 ;;
esac
