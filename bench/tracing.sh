#!/usr/bin/env bash
# bench/tracing.sh — what OpenTelemetry tracing costs: the same Sluice binary, the same mock,
# loaded in turn with tracing off and on (telemetry.sample_ratio 1.0: every request's spans
# exported over OTLP/HTTP to nginx on loopback answering 200), CONCURRENCY streams of CHUNKS
# chunks in SEGMENTS interleaved segments of AB_SECONDS each (the order alternating):
#   bash bench/tracing.sh          (BENCH_NO_BUILD=1 to use build/ as it is)
# Prints req/s and the proxy's CPU per request with tracing off and on, the on / off ratios, and
# the spans the traced gateway exported and dropped (its /metrics). The proxy's CPU includes the
# exporter's thread (encoding and sending); the sink's own CPU is not counted.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
CONCURRENCY=${CONCURRENCY:-50}
SECONDS_PER=${AB_SECONDS:-3}
SEGMENTS=${SEGMENTS:-10}
MASTER_KEY=sk-bench-master
BENCH_NO_BUILD=${BENCH_NO_BUILD:-0} bench_build sluice sluice_loadgen
bench_work sluice-tracing

read -r P_MOCK P_OFF P_ON P_SINK <<<"$(free_ports 4)"
start mock "$SLUICE" mock --listen "127.0.0.1:$P_MOCK" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms 0 --chunk-interval-ms 0
MOCK_PID=$PID
wait_port mock "$MOCK_PID" "$P_MOCK"
# The collector: nginx, one worker, reading each export whole and answering 200 {} on a kept
# connection (a sink that keeps up, so spans are dropped only if Sluice's exporter falls behind).
mkdir -p "$WORK/sink"
cat >"$WORK/sink/nginx.conf" <<NGX
daemon off;
master_process off;
worker_processes 1;
pid $WORK/sink/nginx.pid;
error_log $WORK/sink/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $WORK/sink/body;
    client_max_body_size 64m;
    client_body_buffer_size 8m;
    keepalive_requests 10000000;
    server {
        listen 127.0.0.1:$P_SINK;
        location / { return 200 '{}'; }
    }
}
NGX
start sink "$NGINX" -p "$WORK/sink" -c "$WORK/sink/nginx.conf" -e "$WORK/sink/error.log"
SINK_PID=$PID
wait_port sink "$SINK_PID" "$P_SINK"
declare -A PIDS_OF
sluice_config "$WORK/off.yaml" "$P_OFF" "$P_MOCK" ""
sluice_config "$WORK/on.yaml" "$P_ON" "$P_MOCK" "" "telemetry:" "  otlp_endpoint: \"http://127.0.0.1:$P_SINK\"" \
  "  sample_ratio: 1.0"
for name in off on; do
  port=$P_OFF
  [[ $name == on ]] && port=$P_ON
  start "$name" "$SLUICE" serve -c "$WORK/$name.yaml"
  PIDS_OF[$name]=$PID
  wait_port "$name" "$PID" "$port"
done

declare -A OK CPU WALL FAILED
ab_reset off on
for ((seg = 0; seg < SEGMENTS; seg++)); do
  if ((seg % 2 == 0)); then order=(off on); else order=(on off); fi
  for name in "${order[@]}"; do
    port=$P_OFF
    [[ $name == on ]] && port=$P_ON
    ab_load "$name" "$port"
  done
  log "segment $((seg + 1))/$SEGMENTS done"
done
sleep 2  # the last batch leaves within a second
spans=$(curl -s "http://127.0.0.1:$P_ON/metrics" | grep '^sluice_trace_spans_total' || true)

echo "| tracing | requests | failed | req/s | proxy CPU us / request | on / off req/s | on / off CPU / request |"
echo "|---|---|---|---|---|---|---|"
awk -v okb="${OK[off]}" -v oka="${OK[on]}" -v wb="${WALL[off]}" -v wa="${WALL[on]}" -v cb="${CPU[off]}" \
    -v ca="${CPU[on]}" -v fb="${FAILED[off]}" -v fa="${FAILED[on]}" 'BEGIN {
  rb = okb / wb; ra = oka / wa; ub = cb / okb * 1e6; ua = ca / oka * 1e6
  printf "| off | %d | %d | %.0f | %.1f | | |\n", okb, fb, rb, ub
  printf "| on (sample 1.0) | %d | %d | %.0f | %.1f | %.3fx | %.3fx |\n", oka, fa, ra, ua, ra / rb, ua / ub
}'
echo
echo "Spans of the traced gateway (its /metrics):"
echo '```'
echo "$spans"
echo '```'
