#!/usr/bin/env bash
# Runs every suite against the binaries in BUILD (default: build):
#   unit (GoogleTest via ctest), integration (real processes on loopback, node:test),
#   e2e (the official npm SDKs as clients). Fails if any suite fails; skips none.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
export SLUICE_BIN="$PWD/$BUILD/sluice"
status=0
summary=()

run() {
  local name=$1; shift
  echo "=== $name: $*"
  if "$@"; then summary+=("$name: ok"); else summary+=("$name: FAILED"); status=1; fi
}

run unit tests/scripts/with-postgres.sh tests/scripts/with-redis.sh ctest --test-dir "$BUILD" --output-on-failure -j2
run integration tests/scripts/with-postgres.sh node --test --test-reporter=spec tests/integration/
# The SDKs (tests/e2e) and the coding agents (tests/e2e/agents) are separate npm packages:
# each is installed from its lockfile when missing or stale.
npm_ready() {
  local dir=$1
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || { summary+=("$dir: npm ci FAILED"); status=1; return 1; }
  fi
}
npm_ready tests/e2e
npm_ready tests/e2e/agents
npm_ready tests/e2e/console
run e2e node --test --test-reporter=spec tests/e2e/*.test.mjs tests/e2e/agents/
# The web console in headless Chromium (screenshots in tests/e2e/console/artifacts/).
run console node --test --test-reporter=spec tests/e2e/console/
if [ "${SLUICE_SANITIZED:-0}" = 1 ]; then
  # The fuzz harnesses are ASan+UBSan builds already; the plain pass runs them.
  echo "=== fuzz: run by the plain pass (its harnesses are sanitized builds); not repeated here"
  summary+=("fuzz: run in the plain pass")
else
  run fuzz bash tests/fuzz/run.sh 10
fi

echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $status
