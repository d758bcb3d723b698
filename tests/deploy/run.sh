#!/usr/bin/env bash
# `make test-deploy`: the release artifacts of BUILD (made by `make dist`, which makes the .deb
# too) checked: tests/deploy/release/. Slower than `make test` needs; CI runs it after the rest.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
export SLUICE_BIN="$PWD/$BUILD/sluice" SLUICE_BUILD="$PWD/$BUILD"
if [ ! -d tests/deploy/node_modules ] || [ tests/deploy/package-lock.json -nt tests/deploy/node_modules ]; then
  (cd tests/deploy && npm ci --no-audit --no-fund --loglevel=error) || exit 1
fi
node --test --test-reporter=spec tests/deploy/release/
