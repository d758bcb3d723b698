#!/usr/bin/env bash
# Runs every suite against the binaries in BUILD (default: build):
#   unit (GoogleTest via ctest), integration (real processes on loopback, node:test),
#   e2e (the official npm SDKs as clients), the deployment files, the console in headless
#   Chromium, fuzz.
# Fails if any suite fails. No test skips itself: a missing prerequisite (PostgreSQL, Redis,
# the npm packages, an embedded console) is a failure, so everything a test needs is set up
# here first: the npm packages before any suite, the databases around the suites that use them.
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

# The SDKs (tests/e2e), the coding agents (tests/e2e/agents), the console driver
# (tests/e2e/console) and the published test vectors the unit tests replay (tests/vectors) are
# separate npm packages, each installed from its lockfile when missing or
# stale, before any suite: an integration test (cache.test.mjs) reads a stream through the
# openai SDK of tests/e2e.
npm_ready() {
  local dir=$1
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || { summary+=("$dir: npm ci FAILED"); status=1; return 1; }
  fi
}
npm_ready tests/e2e
npm_ready tests/e2e/agents
npm_ready tests/e2e/console
npm_ready tests/deploy
npm_ready tests/vectors

run unit tests/scripts/with-postgres.sh tests/scripts/with-redis.sh ctest --test-dir "$BUILD" --output-on-failure -j2
# Integration tests that need Redis (cluster, health) start and stop redis-servers of their own.
run integration tests/scripts/with-postgres.sh node --test --test-reporter=spec tests/integration/
run e2e node --test --test-reporter=spec tests/e2e/*.test.mjs tests/e2e/agents/
# The deployment files: compose.yaml run without containers (on this PostgreSQL), the Kubernetes
# kustomization rendered and checked, the systemd unit verified. The packages (make deb, make
# dist) and images are checked by the slower `make test-deploy`.
run deploy tests/scripts/with-postgres.sh node --test --test-reporter=spec tests/deploy/*.test.mjs
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
