#!/usr/bin/env bash
# Installs the Debian packages Sluice needs to build, test and benchmark.
# Idempotent: asks apt only for what is missing. Used by `make run`, `make test` and .ci/run.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build ccache pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libboost-system1.81-dev
  libssl-dev zlib1g-dev ca-certificates libyaml-cpp-dev libsqlite3-dev libpq-dev postgresql libhiredis-dev redis-server
  libre2-dev libspdlog-dev libfmt-dev libcli11-dev sqlite3
  libgtest-dev libgmock-dev libbenchmark-dev
  clang clang-tidy libclang-rt-14-dev
  nodejs npm
  chromium fonts-liberation
  systemd debootstrap podman
)
# Only what the benchmark harness needs on top (nginx and haproxy as the proxy floors; valgrind
# for bench/instructions.sh and callgrind profiles; perf and heaptrack for where CPU and memory
# go; jemalloc and mimalloc to compare allocators with LD_PRELOAD, SCALE_SLUICE_ENV in
# bench/scale.sh).
if [ "${SLUICE_BENCH_DEPS:-0}" = 1 ]; then
  pkgs+=(nginx-light haproxy valgrind linux-perf heaptrack libjemalloc2 libmimalloc2.0)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# nodejs may come from elsewhere on a developer machine; a working `node` is what counts.
if command -v node >/dev/null 2>&1; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
