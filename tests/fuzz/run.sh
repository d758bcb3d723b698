#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan) and runs each for SECONDS on a
# throw-away copy of its seed corpus, after replaying any committed reproducers in
# crashes/<name>/. Fails if any harness reports a crash, leak, timeout or OOM.
#   bash tests/fuzz/run.sh [SECONDS=10]        (env: FUZZ_BUILD=build-fuzz, FUZZ_ONLY="a b")
# Findings (libFuzzer artifacts) are kept in $FUZZ_BUILD/findings/<name>/; a reproducer worth
# keeping goes to tests/fuzz/crashes/<name>/.
set -uo pipefail
SECONDS_EACH=${1:-10}
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${FUZZ_BUILD:-build-fuzz}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac

command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (apt-get install clang libclang-rt-dev)"; echo "0 passed, 1 failed"; exit 1; }
if [ ! -f "$BUILD/build.ninja" ] && [ ! -f "$BUILD/Makefile" ]; then
  GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
  cmake -S "$HERE" -B "$BUILD" "${GEN[@]}" -DCMAKE_CXX_COMPILER=clang++ >"$BUILD.configure.log" 2>&1 ||
    { cat "$BUILD.configure.log"; echo "0 passed, 1 failed"; exit 1; }
  rm -f "$BUILD.configure.log"
fi
if ! cmake --build "$BUILD" -j 2 >"$BUILD/build.log" 2>&1; then
  grep -E 'error|Error' "$BUILD/build.log" | head -30
  echo "fuzz: build failed (log: $BUILD/build.log)"
  echo "0 passed, 1 failed"
  exit 1
fi

names=()
if [ -n "${FUZZ_ONLY:-}" ]; then
  read -r -a names <<<"$FUZZ_ONLY"
else
  for src in "$HERE"/fuzz_*.cpp; do n=$(basename "$src" .cpp); names+=("${n#fuzz_}"); done
fi

TMP=$(mktemp -d /tmp/sluice-fuzz.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0
for name in "${names[@]}"; do
  bin="$BUILD/fuzz_$name"
  log="$TMP/$name.log"
  if [ ! -x "$bin" ]; then
    printf '%-20s FAILED  (no binary %s)\n' "$name" "$bin"; failed=$((failed + 1)); continue
  fi
  # Committed reproducers first: a fixed bug must stay fixed.
  if [ -d "$HERE/crashes/$name" ] && [ -n "$(ls -A "$HERE/crashes/$name")" ]; then
    if ! timeout -k 10 120 "$bin" -timeout=5 -rss_limit_mb=2048 "$HERE/crashes/$name"/* >"$log" 2>&1; then
      printf '%-20s FAILED  (a reproducer in tests/fuzz/crashes/%s still fails)\n' "$name" "$name"
      grep -E 'ERROR|INVARIANT|SUMMARY|Running:' "$log" | head -8 | sed 's/^/    /'
      failed=$((failed + 1)); continue
    fi
  fi
  mkdir -p "$TMP/corpus/$name" "$TMP/artifacts/$name"
  [ -d "$HERE/corpus/$name" ] && cp -r "$HERE/corpus/$name/." "$TMP/corpus/$name/"
  # timeout(1) is a safety net: libFuzzer's own OOM report can take minutes on a huge heap.
  timeout -k 10 $((SECONDS_EACH + 120)) "$bin" -max_total_time="$SECONDS_EACH" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$TMP/artifacts/$name/" "$TMP/corpus/$name" >"$log" 2>&1
  rc=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  execs=$(stat number_of_executed_units); eps=$(stat average_exec_per_sec); added=$(stat new_units_added)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  if [ $rc -eq 0 ] && [ -z "$(ls -A "$TMP/artifacts/$name")" ]; then
    printf '%-20s ok      %8s execs/s  %9s execs  cov %-5s new units %s\n' "$name" "${eps:-?}" "${execs:-?}" "${cov:-?}" "${added:-?}"
    passed=$((passed + 1))
  else
    printf '%-20s FAILED  %8s execs/s  (exit %s)\n' "$name" "${eps:-?}" "$rc"
    grep -E 'ERROR|INVARIANT|SUMMARY|Test unit written|^    #[0-9] ' "$log" | head -20 | sed 's/^/    /'
    mkdir -p "$BUILD/findings/$name"
    cp "$log" "$BUILD/findings/$name/"
    cp "$TMP/artifacts/$name/"* "$BUILD/findings/$name/" 2>/dev/null
    echo "    artifacts and log: $BUILD/findings/$name/"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
