#!/usr/bin/env bash
# bench/screen.sh — the prompt-injection detector's figures (`BENCH_ONLY=screen bash bench/run.sh`,
# and the last step of a full `make bench`):
#   1. quality: precision / recall / F1 of the committed model (models/injection.model) on the
#      held-out 20% of models/prompt-injection/train.jsonl that it was not trained on, at its tuned
#      threshold, per source too (build/sluice_train_screen --eval); and the same texts through the
#      real CLI (`sluice screen`), scored from its output, which must agree
#      and 30 hand-written everyday requests (bench/data/screen_everyday.jsonl, not in the training
#      data, all benign): how many the CLI flags
#   2. speed: build/sluice_screen_bench (Google Benchmark): p50 / p99 per call on 200 B, 2 KB,
#      16 KB and 1 MB prompts, and the model load time
# and writes them into their own marked block of bench/BENCHMARKS.md (via bench/report.py).
# Knobs (environment): BUILD_DIR, SLUICE, BENCH_OUT, BENCH_NO_BUILD=1, BENCH_STRICT=1 (exit 1 when
# the p99 target is missed), SCREEN_BENCH_MIN_TIME (1: --benchmark_min_time per benchmark).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
TRAINER=$BUILD_DIR/sluice_train_screen
SCREEN_BENCH=$BUILD_DIR/sluice_screen_bench
BENCH_OUT=${BENCH_OUT:-$ROOT/bench/BENCHMARKS.md}
MIN_TIME_GIVEN=${SCREEN_BENCH_MIN_TIME:+1}
SCREEN_BENCH_MIN_TIME=${SCREEN_BENCH_MIN_TIME:-1}
if [[ -z ${PYTHON:-} ]]; then
  if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"  # log, die, bench_work, start, wait_port, free_ports, cpu_s, measure...

if [[ ${BENCH_NO_BUILD:-0} != 1 ]]; then
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$ROOT" -B "$BUILD_DIR" "${gen[@]}" >&2 || die "cmake configure failed"
  fi
  log "building sluice, sluice_train_screen and sluice_screen_bench"
  cmake --build "$BUILD_DIR" --target sluice sluice_train_screen sluice_screen_bench -j"$(nproc)" >&2 ||
    die "building the screen benchmark targets failed"
fi
for b in "$SLUICE" "$TRAINER" "$SCREEN_BENCH"; do [[ -x $b ]] || die "$b not found (build it first)"; done

WORK=$(mktemp -d /tmp/sluice-bench-screen.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)

log "screen 1/2 quality: $TRAINER --eval models/injection.model (held-out split)"
"$TRAINER" --eval "$ROOT/models/injection.model" --data "$ROOT/models/prompt-injection/train.jsonl" \
  --json "$WORK/screen_eval.json" --write-held-out "$WORK/held_out.jsonl" >/dev/null 2>"$WORK/eval.log" ||
  { cat "$WORK/eval.log" >&2; die "evaluation failed"; }
log "  the same texts through \`sluice screen\`"
# exit 1 would mean a bad line; every held-out line is well-formed
(cd /tmp && "$SLUICE" screen <"$WORK/held_out.jsonl" >"$WORK/held_out.scored.jsonl") ||
  die "sluice screen failed on the held-out texts"
"$PYTHON" - "$WORK/held_out.jsonl" "$WORK/held_out.scored.jsonl" >"$WORK/screen_cli_eval.json" <<'PY'
import json, sys
gold = [json.loads(l)["label"] for l in open(sys.argv[1])]
out = [json.loads(l) for l in open(sys.argv[2])]
assert len(gold) == len(out), (len(gold), len(out))
tp = sum(1 for g, o in zip(gold, out) if g == 1 and o["verdict"] == "injection")
fp = sum(1 for g, o in zip(gold, out) if g == 0 and o["verdict"] == "injection")
fn = sum(1 for g, o in zip(gold, out) if g == 1 and o["verdict"] != "injection")
p = tp / (tp + fp) if tp + fp else 0.0
r = tp / (tp + fn) if tp + fn else 0.0
print(json.dumps({"n": len(gold), "tp": tp, "fp": fp, "fn": fn, "precision": p, "recall": r,
                  "f1": 2 * p * r / (p + r) if p + r else 0.0}))
PY

log "  hand-written everyday requests (bench/data/screen_everyday.jsonl, all benign) through \`sluice screen\`"
(cd /tmp && "$SLUICE" screen <"$ROOT/bench/data/screen_everyday.jsonl" >"$WORK/everyday.scored.jsonl") ||
  die "sluice screen failed on bench/data/screen_everyday.jsonl"
"$PYTHON" - "$ROOT/bench/data/screen_everyday.jsonl" "$WORK/everyday.scored.jsonl" >"$WORK/screen_everyday.json" <<'PY'
import json, sys
texts = [json.loads(l)["text"] for l in open(sys.argv[1])]
out = [json.loads(l) for l in open(sys.argv[2])]
flagged = [t for t, o in zip(texts, out) if o["verdict"] == "injection"]
print(json.dumps({"n": len(texts), "flagged": len(flagged), "examples": flagged[:4]}))
PY

log "screen 2/2 speed: $SCREEN_BENCH (--benchmark_min_time=$SCREEN_BENCH_MIN_TIME)"
SLUICE_SOURCE_DIR=$ROOT "$SCREEN_BENCH" --benchmark_min_time="$SCREEN_BENCH_MIN_TIME" \
  --benchmark_out="$WORK/screen_bench.json" --benchmark_out_format=json >"$WORK/screen_bench.txt" 2>&1 ||
  { tail -n 20 "$WORK/screen_bench.txt" >&2; die "$SCREEN_BENCH failed"; }

CMD="BENCH_ONLY=screen bash bench/run.sh"
[[ -n $MIN_TIME_GIVEN ]] && CMD="SCREEN_BENCH_MIN_TIME=$SCREEN_BENCH_MIN_TIME $CMD"
report_args=(--work "$WORK" --out "$BENCH_OUT" --set "command=${SCREEN_COMMAND:-$CMD}"
  --set "screen_bench_min_time=$SCREEN_BENCH_MIN_TIME"
  --set "loadavg_screen_start=$LOADAVG_START" --set "loadavg_screen_end=$(cut -d' ' -f1-3 /proc/loadavg)")
[[ ${BENCH_STRICT:-0} == 1 ]] && report_args+=(--strict)
"$PYTHON" "$ROOT/bench/report.py" "${report_args[@]}"
