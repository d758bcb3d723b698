#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL cluster:
#   tests/scripts/with-postgres.sh ctest --test-dir build
# The cluster lives in a temp dir, listens on 127.0.0.1 on a free port (its unix socket stays
# in the temp dir), has a database `sluice_test`, and is stopped and removed when the command
# ends. The command sees SLUICE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:PORT/sluice_test
# and exits with the command's status. As root, the server runs as the `postgres` user.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }

pgbin=${SLUICE_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$pgbin" ] || [ ! -x "$pgbin/initdb" ]; then
  echo "with-postgres: no PostgreSQL server found (looked in /usr/lib/postgresql/*/bin);" \
       "run scripts/install-deps.sh or set SLUICE_PG_BIN" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-pg.XXXXXX")
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres:postgres "$tmp"
  as_pg=(runuser -u postgres --)
fi
data="$tmp/data"; sock="$tmp/sock"; log="$tmp/server.log"
"${as_pg[@]}" mkdir -p "$sock"

started=0
cleanup() {
  if [ "$started" = 1 ]; then
    "${as_pg[@]}" "$pgbin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${as_pg[@]}" "$pgbin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$tmp/initdb.log" 2>&1 \
  || { cat "$tmp/initdb.log" >&2; exit 1; }

# A free port: ask the kernel for one, then let the server confirm it; retry on a race.
for attempt in 1 2 3 4 5; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
         || echo $((20000 + RANDOM % 40000)))
  if "${as_pg[@]}" "$pgbin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
       -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$sock -c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=200" \
       start >/dev/null; then
    started=1
    break
  fi
done
if [ "$started" != 1 ]; then
  echo "with-postgres: the server did not start; its log:" >&2
  cat "$log" >&2 || true
  exit 1
fi

"${as_pg[@]}" "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U postgres sluice_test
export SLUICE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/sluice_test"
echo "with-postgres: PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') at $SLUICE_TEST_POSTGRES_URL" >&2

set +e
"$@"
status=$?
set -e
exit $status
