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

run unit tests/scripts/with-postgres.sh ctest --test-dir "$BUILD" --output-on-failure -j2
run integration node --test --test-reporter=spec tests/integration/
if [ -f tests/e2e/package.json ]; then
  if [ ! -d tests/e2e/node_modules ] || [ tests/e2e/package-lock.json -nt tests/e2e/node_modules ]; then
    (cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error) || { summary+=("e2e: npm ci FAILED"); status=1; }
  fi
  run e2e node --test --test-reporter=spec tests/e2e/
fi

echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $status
