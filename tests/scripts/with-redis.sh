#!/usr/bin/env bash
# Runs a command beside a throwaway Redis server:
#   tests/scripts/with-redis.sh ctest --test-dir build
# The server lives in a temp dir, listens on 127.0.0.1 on a free port, keeps nothing on disk,
# and is stopped and removed when the command ends. The command sees
# SLUICE_TEST_REDIS_URL=redis://127.0.0.1:PORT and exits with the command's status.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }

server=${SLUICE_REDIS_SERVER:-$(command -v redis-server || true)}
if [ -z "$server" ] || [ ! -x "$server" ]; then
  echo "with-redis: no redis-server found; run scripts/install-deps.sh or set SLUICE_REDIS_SERVER" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-redis.XXXXXX")
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A free port: ask the kernel for one, then let the server confirm it; retry on a race.
for attempt in 1 2 3 4 5; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
         || echo $((20000 + RANDOM % 40000)))
  "$server" --bind 127.0.0.1 --port "$port" --dir "$tmp" --save "" --appendonly no \
    --logfile "$tmp/server.log" --daemonize no &
  pid=$!
  for _ in $(seq 1 100); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if grep -q "Ready to accept connections" "$tmp/server.log" 2>/dev/null; then break 2; fi
    sleep 0.05
  done
  kill "$pid" 2>/dev/null || true  # exited (port taken) or not ready in 5 s
  wait "$pid" 2>/dev/null || true
  pid=""
done
if [ -z "$pid" ]; then
  echo "with-redis: the server did not start; its log:" >&2
  cat "$tmp/server.log" >&2 || true
  exit 1
fi

export SLUICE_TEST_REDIS_URL="redis://127.0.0.1:$port"
echo "with-redis: Redis $("$server" --version | awk '{print $3}' | cut -d= -f2) at $SLUICE_TEST_REDIS_URL" >&2

set +e
"$@"
status=$?
set -e
exit $status
