#!/usr/bin/env bash
# `make test-deploy`: the release artifacts of BUILD (made by `make dist`, which makes the .deb
# too) checked: tests/deploy/release/, the .deb installed with apt-get in a debootstrap-made
# bookworm root and the Dockerfile built with podman on that root (from the same .deb). Slower
# than `make test` (about 8 minutes, 4 of them debootstrap); CI runs it after the rest.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
export SLUICE_BIN="$PWD/$BUILD/sluice" SLUICE_BUILD="$PWD/$BUILD"
if [ ! -d tests/deploy/node_modules ] || [ tests/deploy/package-lock.json -nt tests/deploy/node_modules ]; then
  (cd tests/deploy && npm ci --no-audit --no-fund --loglevel=error) || exit 1
fi
# A clean Debian 12 root for the package install and the image base, made once per build directory.
base="$PWD/$BUILD/deploy/bookworm-minbase.tar"
if [ ! -f "$base" ]; then
  mkdir -p "$(dirname "$base")"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-debootstrap.XXXXXX")
  echo "test-deploy: debootstrap --variant=minbase bookworm (once per build dir)"
  debootstrap --variant=minbase bookworm "$tmp/root" ${SLUICE_DEBIAN_MIRROR:-} >"$tmp/log" 2>&1 ||
    { tail -20 "$tmp/log"; rm -rf "$tmp"; exit 1; }
  tar -C "$tmp/root" -cf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf "$tmp"
fi
export SLUICE_DEBIAN_BASE="$base"
node --test --test-reporter=spec tests/deploy/release/
