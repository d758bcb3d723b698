#!/usr/bin/env bash
# `make test-deploy`: the release artifacts of BUILD (made by `make dist`, which makes the .deb
# too) checked: tests/deploy/release/, the .deb installed with apt-get in a debootstrap-made
# bookworm root and the Dockerfile built with podman on that root (from the same .deb). Slower
# than `make test` (about 4 minutes, and 4 more for debootstrap once a month); CI runs it after
# the rest.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
export SLUICE_BIN="$PWD/$BUILD/sluice" SLUICE_BUILD="$PWD/$BUILD"
if [ ! -d tests/deploy/node_modules ] || [ tests/deploy/package-lock.json -nt tests/deploy/node_modules ]; then
  (cd tests/deploy && npm ci --no-audit --no-fund --loglevel=error) || exit 1
fi
# A clean Debian 12 root for the package install and the image base. debootstrap takes about 4
# minutes, so the tar is kept in the user's cache and made again each month; the tests only ever
# extract or import copies of it, so it stays clean.
cache=${SLUICE_DEBIAN_BASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice}
base="$cache/bookworm-minbase-$(date -u +%Y%m).tar"
if [ ! -f "$base" ]; then
  mkdir -p "$(dirname "$base")"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-debootstrap.XXXXXX")
  echo "test-deploy: debootstrap --variant=minbase bookworm into $base"
  rm -f "$cache"/bookworm-minbase-*.tar
  debootstrap --variant=minbase bookworm "$tmp/root" ${SLUICE_DEBIAN_MIRROR:-} >"$tmp/log" 2>&1 ||
    { tail -20 "$tmp/log"; rm -rf "$tmp"; exit 1; }
  tar -C "$tmp/root" -cf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf "$tmp"
fi
export SLUICE_DEBIAN_BASE="$base"
# SLUICE_DEPLOY_ONLY: some of the files (make test-image-source runs image.test.mjs alone).
# shellcheck disable=SC2086
node --test --test-reporter=spec ${SLUICE_DEPLOY_ONLY:-tests/deploy/release/}
