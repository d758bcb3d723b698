#!/usr/bin/env bash
# bench/instructions.sh — instructions per request of two Sluice binaries, for a change that must
# cost nothing, measured so that the machine's noise does not enter it:
#   BEFORE=/path/to/old/sluice AFTER=build/sluice bash bench/instructions.sh
# Each binary runs under valgrind's callgrind on bench/ab.sh's two configurations (passthrough:
# everything off; protect-on: redaction with the built-in rules and screening at block, every
# request bench/data/protect_chat.json with x-mock-echo so two values are sealed and restored),
# against the same mock. After WARMUP requests the counters are zeroed; after COUNT more they are
# dumped: the instructions executed in user space by all of the gateway's threads, divided by
# COUNT. The figure repeats to within a few instructions from run to run, where bench/ab.sh's
# CPU-time ratios move by +-10 % on a shared 2-core VM; it leaves out the kernel's share (the
# system calls per request are the same unless the I/O changed: check with strace -c) and cache
# misses. Prints a Markdown table with after / before. CHUNK_MS (default 0) spaces the mock's chunks:
# with CHUNK_MS=5, as in bench/scale.sh, each chunk is a read and a write of its own, which is what a
# gateway does in production (back-to-back chunks are often read two or more at once).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BEFORE=${BEFORE:?set BEFORE to the sluice binary to compare against}
AFTER=${AFTER:-$SLUICE}
COUNT=${COUNT:-2000}
WARMUP=${WARMUP:-300}
CONCURRENCY=${CONCURRENCY:-8}
MASTER_KEY=sk-bench-master
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
  die "valgrind is not installed (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"
BENCH_NO_BUILD=${BENCH_NO_BUILD:-0} bench_build sluice_loadgen
bench_work sluice-instructions

read -r P_MOCK P_GW <<<"$(free_ports 2)"
start mock "$SLUICE" mock --listen "127.0.0.1:$P_MOCK" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms 0 --chunk-interval-ms "${CHUNK_MS:-0}"
MOCK_PID=$PID
wait_port mock "$MOCK_PID" "$P_MOCK"

load() {  # PORT KIND COUNT
  local body=()
  [[ $2 == protect ]] && body=(--body-file "$ROOT/bench/data/protect_chat.json" -H "x-mock-echo: 1")
  "$LOADGEN" --url "http://127.0.0.1:$1/v1/chat/completions" -H "Authorization: Bearer $MASTER_KEY" \
    -H "x-mock-chunks: $CHUNKS" --concurrency "$CONCURRENCY" --count "$3" "${body[@]}" |
    "$PYTHON" -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r["ok"] == r["requests"] else 1)' ||
    die "$2: some requests failed"
}

declare -A IR
for kind in passthrough protect; do
  for name in before after; do
    bin=$BEFORE
    [[ $name == after ]] && bin=$AFTER
    if [[ $kind == protect ]]; then
      sluice_config "$WORK/$name-$kind.yaml" "$P_GW" "$P_MOCK" "" "${PROTECT_ON_LINES[@]}"
    else
      sluice_config "$WORK/$name-$kind.yaml" "$P_GW" "$P_MOCK" ""
    fi
    out=$WORK/callgrind.$name.$kind
    start "$name-$kind" valgrind --tool=callgrind --callgrind-out-file="$out.%p" "$bin" serve -c "$WORK/$name-$kind.yaml"
    VG=$PID
    wait_port "$name-$kind" "$VG" "$P_GW" 60
    load "$P_GW" "$kind" "$WARMUP"
    callgrind_control -z "$VG" >/dev/null 2>&1
    load "$P_GW" "$kind" "$COUNT"
    callgrind_control -d "$VG" >/dev/null 2>&1
    kill -TERM "$VG"
    wait "$VG" 2>/dev/null || true
    # The dump right after the zeroing is the second part file: the measured requests only.
    dump=$(find "$WORK" -name "callgrind.$name.$kind.*.1" | head -n1)
    [[ -n $dump ]] || die "$name $kind: no callgrind dump"
    total=$(awk '/^totals:/ {print $2; exit}' "$dump")
    IR[$name-$kind]=$((total / COUNT))
    log "$kind $name: ${IR[$name-$kind]} instructions per request"
  done
done

echo "| configuration | before: instructions / request | after: instructions / request | after / before |"
echo "|---|---|---|---|"
for kind in passthrough protect; do
  b=${IR[before-$kind]} a=${IR[after-$kind]}
  label=$kind
  [[ $kind == protect ]] && label=protect-on
  echo "| $label | $b | $a | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3fx", a / b }') |"
done
