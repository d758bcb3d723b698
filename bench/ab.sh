#!/usr/bin/env bash
# bench/ab.sh — two Sluice binaries side by side, for a change that must cost nothing:
#   BEFORE=/path/to/old/sluice AFTER=build/sluice bash bench/ab.sh
# Both run the same config on the same mock (bench/run.sh's: one openai channel, workers one per
# core, request logs off), loaded in turn with CONCURRENCY streams of CHUNKS chunks in SEGMENTS
# interleaved segments of AB_SECONDS each (the order alternating), in two configurations:
# passthrough (everything off) and protect-on (redaction with the built-in rules and screening at
# block, every request bench/data/protect_chat.json with x-mock-echo so two values are sealed and
# restored). Prints, per configuration, req/s and the proxy's CPU per request of each binary and
# the after / before ratios. The CPU is read by the load generator over its measured requests.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BEFORE=${BEFORE:?set BEFORE to the sluice binary to compare against}
AFTER=${AFTER:-$SLUICE}
CONCURRENCY=${CONCURRENCY:-50}
SECONDS_PER=${AB_SECONDS:-3}
SEGMENTS=${SEGMENTS:-10}
MASTER_KEY=sk-bench-master
BENCH_NO_BUILD=${BENCH_NO_BUILD:-0} bench_build sluice_loadgen
bench_work sluice-ab

read -r P_MOCK P_B P_A P_BP P_AP <<<"$(free_ports 5)"
start mock "$SLUICE" mock --listen "127.0.0.1:$P_MOCK" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms 0 --chunk-interval-ms 0
MOCK_PID=$PID
wait_port mock "$MOCK_PID" "$P_MOCK"
declare -A PIDS_OF
for spec in "before $BEFORE $P_B plain" "after $AFTER $P_A plain" "before_p $BEFORE $P_BP protect" "after_p $AFTER $P_AP protect"; do
  read -r name bin port kind <<<"$spec"
  if [[ $kind == protect ]]; then
    sluice_config "$WORK/$name.yaml" "$port" "$P_MOCK" "" "${PROTECT_ON_LINES[@]}"
  else
    sluice_config "$WORK/$name.yaml" "$port" "$P_MOCK" ""
  fi
  start "$name" "$bin" serve -c "$WORK/$name.yaml"
  PIDS_OF[$name]=$PID
  wait_port "$name" "$PID" "$port"
done

declare -A OK CPU WALL FAILED
ab_reset before after before_p after_p
for ((seg = 0; seg < SEGMENTS; seg++)); do
  if ((seg % 2 == 0)); then order=(before after before_p after_p); else order=(after before after_p before_p); fi
  for name in "${order[@]}"; do
    case $name in
      before) port=$P_B args=() ;;
      after) port=$P_A args=() ;;
      before_p) port=$P_BP args=(--body-file "$ROOT/bench/data/protect_chat.json" -H "x-mock-echo: 1") ;;
      after_p) port=$P_AP args=(--body-file "$ROOT/bench/data/protect_chat.json" -H "x-mock-echo: 1") ;;
    esac
    ab_load "$name" "$port" "${args[@]}"
  done
  log "segment $((seg + 1))/$SEGMENTS done"
done

echo "| configuration | binary | requests | req/s | proxy CPU us / request | after / before req/s | after / before CPU / request |"
echo "|---|---|---|---|---|---|---|"
for pair in "passthrough before after" "protect-on before_p after_p"; do
  read -r label b a <<<"$pair"
  awk -v label="$label" -v okb="${OK[$b]}" -v oka="${OK[$a]}" -v wb="${WALL[$b]}" -v wa="${WALL[$a]}" \
      -v cb="${CPU[$b]}" -v ca="${CPU[$a]}" 'BEGIN {
    rb = okb / wb; ra = oka / wa; ub = cb / okb * 1e6; ua = ca / oka * 1e6
    printf "| %s | before | %d | %.0f | %.1f | | |\n", label, okb, rb, ub
    printf "| %s | after | %d | %.0f | %.1f | %.3fx | %.3fx |\n", label, oka, ra, ua, ra / rb, ua / ub
  }'
done
