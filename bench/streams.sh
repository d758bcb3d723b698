#!/usr/bin/env bash
# bench/streams.sh — streams after the provider's 200 (`BENCH_ONLY=streams bash bench/run.sh`):
# what a client gets when the provider fails inside the stream, Sluice against nginx and haproxy
# configured with the same spare upstream, and the mock reached directly.
#   1. in-band errors: mock `flaky` answers every stream with a 200, and STREAMS_INBAND_RATE (0.3)
#      of them with an overloaded error event before any content (x-mock-error-event-rate,
#      --fail-status 529), then ends; mock `spare` is healthy. Targets: direct (flaky alone),
#      direct_spare (spare alone: the latency floor), nginx and haproxy (flaky, spare as `backup`),
#      sluice (flaky priority 1, spare priority 2). STREAMS_CONCURRENCY streams for
#      STREAMS_SECONDS per target in STREAMS_SEGMENTS interleaved segments. Reported: the share of
#      requests that succeeded (a 200 ending with data: [DONE]), TTFB and close p50 / p99, the
#      upstream requests per client request (both mocks' request counts), the proxy's CPU per 10k.
#   2. latency-aware balancing: mock `fast` answers after STREAMS_FAST_MS (10), mock `slow` after
#      STREAMS_SLOW_MS (150), both otherwise alike. Targets: nginx and haproxy (round robin over
#      both), sluice_weighted (both at priority 1, weight 1: the default balance) and
#      sluice_latency (the same with routing.balance: latency). Reported: the share of requests
#      the fast mock served, TTFB and close p50 / p99, the proxy's CPU per 10k.
#   3. hedging: two mocks alike, each holding STREAMS_SLOW_RATE (0.2) of its first bytes for
#      STREAMS_SLOW_FIRST_MS (3000). Targets: nginx_h (round robin over both), sluice_nohedge (one
#      at priority 1, the other at 2) and sluice_hedge (the same with routing.hedge_after:
#      STREAMS_HEDGE_AFTER, 300ms). Reported: TTFB and close p50 / p99, upstream calls per request.
#   4. stalls: mock `stally` stalls STREAMS_STALL_RATE (0.2) of its streams after
#      STREAMS_STALL_AFTER (5) of their chunks (the connection held open); mock `spare` is healthy.
#      Targets: nginx_s and haproxy_s (stally, spare as backup; proxy_read_timeout / timeout server
#      STREAMS_STALL_TIMEOUT, 1s), sluice_stall_error (stally priority 1, spare 2, routing.stall_timeout
#      STREAMS_STALL_TIMEOUT, on_stall: error) and sluice_stall_continue (the same with on_stall:
#      continue). Reported: the share of requests that succeeded (a 200 ending with data: [DONE]
#      and no error chunk), close p50 / p99 (the time to the whole answer), upstream calls per request.
# Figures go into their own marked block of bench/BENCHMARKS.md. Everything it starts listens on
# 127.0.0.1 and is stopped on exit. About 5.5 minutes by default.
# Knobs (environment): BUILD_DIR, SLUICE, LOADGEN, NGINX, HAPROXY, BENCH_OUT, BENCH_NO_BUILD=1,
# BENCH_STRICT=1 (exit 1 when a target is missed), BENCH_KEEP_WORK=1, MOCK_CMD, SLUICE_WORKERS,
# MOCK_WORKERS, NGINX_WORKERS, HAPROXY_THREADS, CHUNKS (20), STREAMS_CONCURRENCY (50),
# STREAMS_SECONDS (12: per target), STREAMS_SEGMENTS (3), STREAMS_INBAND_RATE (0.3),
# STREAMS_CHUNK_MS (5: between chunks), STREAMS_TARGETS ("direct direct_spare nginx haproxy sluice":
# the in-band scenario's), STREAMS_FAST_MS (10), STREAMS_SLOW_MS (150), STREAMS_BALANCE (1: run the
# balancing scenario; 0: not), STREAMS_SLOW_RATE (0.2), STREAMS_SLOW_FIRST_MS (3000),
# STREAMS_HEDGE_AFTER (300ms), STREAMS_HEDGE (1: run the hedging scenario; 0: not), STREAMS_STALL_RATE
# (0.2), STREAMS_STALL_AFTER (5), STREAMS_STALL_TIMEOUT (1s), STREAMS_STALL (1: run the stall
# scenario; 0: not).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
HAPROXY_THREADS=${HAPROXY_THREADS:-$(nproc)}
STREAMS_CONCURRENCY=${STREAMS_CONCURRENCY:-50}
STREAMS_SECONDS=${STREAMS_SECONDS:-12}
STREAMS_SEGMENTS=${STREAMS_SEGMENTS:-3}
STREAMS_INBAND_RATE=${STREAMS_INBAND_RATE:-0.3}
STREAMS_CHUNK_MS=${STREAMS_CHUNK_MS:-5}
STREAMS_TARGETS=${STREAMS_TARGETS:-direct direct_spare nginx haproxy sluice}
STREAMS_FAST_MS=${STREAMS_FAST_MS:-10}
STREAMS_SLOW_MS=${STREAMS_SLOW_MS:-150}
STREAMS_BALANCE=${STREAMS_BALANCE:-1}
STREAMS_SLOW_RATE=${STREAMS_SLOW_RATE:-0.2}
STREAMS_SLOW_FIRST_MS=${STREAMS_SLOW_FIRST_MS:-3000}
STREAMS_HEDGE_AFTER=${STREAMS_HEDGE_AFTER:-300ms}
STREAMS_HEDGE=${STREAMS_HEDGE:-1}
STREAMS_STALL_RATE=${STREAMS_STALL_RATE:-0.2}
STREAMS_STALL_AFTER=${STREAMS_STALL_AFTER:-5}
STREAMS_STALL_TIMEOUT=${STREAMS_STALL_TIMEOUT:-1s}
STREAMS_STALL=${STREAMS_STALL:-1}
MODEL=gpt-4o-mini
MASTER_KEY=sk-bench-master

read -r -a WANT <<<"$STREAMS_TARGETS"
for t in "${WANT[@]}"; do
  [[ $t =~ ^(direct|direct_spare|nginx|haproxy|sluice)$ ]] ||
    die "STREAMS_TARGETS: unknown target $t (direct, direct_spare, nginx, haproxy, sluice)"
done
wants() { [[ " ${WANT[*]} " == *" $1 "* ]]; }

bench_build sluice sluice_loadgen
[[ -x $SLUICE ]] || die "sluice binary not found at $SLUICE"
[[ -x $LOADGEN ]] || die "load generator not found at $LOADGEN"
wants nginx && { [[ -x $NGINX ]] || die "nginx not found at $NGINX (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"; }
wants haproxy && { [[ -x $HAPROXY ]] || die "haproxy not found at $HAPROXY (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"; }
MOCK_CMD=${MOCK_CMD:-"$SLUICE mock"}
read -r -a MOCK <<<"$MOCK_CMD"
raise_nofile "$STREAMS_CONCURRENCY"

bench_work sluice-bench-streams
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A PROXY_ROOT=() URL=()
: >"$WORK/upstream.jsonl"

# ---------------------------------------------------------------- processes
# start_mock NAME PORT ARGS...: a mock provider, stopped on exit.
start_mock() {
  local name=$1 port=$2
  shift 2
  start "$name" "${MOCK[@]}" --listen "127.0.0.1:$port" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" "$@"
  EXTRA_MOCK_PIDS+=" $PID"
  wait_port "$name" "$PID" "$port" || die "mock $name did not start (${MOCK[*]})"
}
# start_nginx NAME PORT "SERVERS" [READ_TIMEOUT]: bench/nginx_tls.conf.template without ssl,
# SERVERS its upstream block's server lines ("server 127.0.0.1:1; server 127.0.0.1:2 backup;").
start_nginx() {
  local name=$1 port=$2 servers=$3 read_timeout=${4:-600s}
  mkdir -p "$WORK/$name"
  sed -e "s#@PREFIX@#$WORK/$name#g" -e "s#@WORKERS@#$NGINX_WORKERS#g" -e "s#@LISTEN@#127.0.0.1:$port#g" \
      -e "s#@SSL@##g" -e "/ssl_certificate/d" -e "s#server @UPSTREAM@;#$servers#g" \
      -e "s#proxy_read_timeout 600s#proxy_read_timeout $read_timeout#" \
      -e "s#@KEEPALIVE@#$STREAMS_CONCURRENCY#g" -e "s#@CONNECTIONS@#$CONNECTIONS#g" -e "s#@NOFILE@#$((CONNECTIONS + 64))#g" \
      -e "s#@HEADER_TIMEOUT@#60s#g" "$ROOT/bench/nginx_tls.conf.template" >"$WORK/$name/nginx.conf"
  start "$name" "$NGINX" -p "$WORK/$name" -c "$WORK/$name/nginx.conf" -e "$WORK/$name/error.log"
  wait_port "$name" "$PID" "$port" || die "nginx did not start (see $WORK/$name/error.log)"
  PROXY_ROOT[$name]=$PID URL[$name]="http://127.0.0.1:$port"
}
# start_haproxy NAME PORT A PORT_A B PORT_B [backup] [SERVER_TIMEOUT]: bench/haproxy.cfg.template
# over two servers, B as A's backup when asked.
start_haproxy() {
  local name=$1 port=$2 a=$3 pa=$4 b=$5 pb=$6 backup=${7:-} timeout=${8:-600s}
  sed -e "s#@THREADS@#$HAPROXY_THREADS#g" -e "s#@MAXCONN@#$((STREAMS_CONCURRENCY + 256))#g" \
      -e "s#@LISTEN@#127.0.0.1:$port#g" -e "s#timeout server 600s#timeout server $timeout#" \
      -e "s#server mock @UPSTREAM@ maxconn \\(.*\\)#server $a 127.0.0.1:$pa maxconn \\1\\n    server $b 127.0.0.1:$pb maxconn \\1${backup:+ backup}#" \
      "$ROOT/bench/haproxy.cfg.template" >"$WORK/$name.cfg"
  start "$name" "$HAPROXY" -db -f "$WORK/$name.cfg"
  wait_port "$name" "$PID" "$port" || die "haproxy did not start (see $WORK/$name.cfg)"
  PROXY_ROOT[$name]=$PID URL[$name]="http://127.0.0.1:$port"
}
# start_sluice NAME PORT "PORT_A PORT_B" SECOND_PRIORITY [ROUTING_LINES]: Sluice over two mocks,
# the second at priority SECOND_PRIORITY (2: after the first, as a backup; 1: alongside it),
# ROUTING_LINES added to its routing section ("  key: value", lines joined with \n).
start_sluice() {
  local name=$1 port=$2 ups=$3 second=$4 routing=${5:-}
  local file="$WORK/$name.yaml"
  sluice_config "$file" "$port" "$ups" ""
  if [[ $second == 2 ]]; then
    "$PYTHON" - "$file" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
seen = 0
for i, l in enumerate(lines):
    if l.strip() == "priority: 1":
        seen += 1
        if seen == 2:
            lines[i] = l.replace("priority: 1", "priority: 2")
open(p, "w").write("\n".join(lines))
PY
  fi
  [[ -n $routing ]] && sed -i "s#^  max_retries: 2#  max_retries: 2\n$routing#" "$file"
  start "$name" "$SLUICE" serve -c "$file"
  wait_port "$name" "$PID" "$port" 30 || die "sluice ($name) did not start"
  PROXY_ROOT[$name]=$PID URL[$name]="http://127.0.0.1:$port"
}

read -r -a PORTS <<<"$(free_ports 21)"
P_FLAKY=${PORTS[0]} P_SPARE=${PORTS[1]}
EXTRA_MOCK_PIDS=""
start_mock mock-flaky "$P_FLAKY" --error-event-rate "$STREAMS_INBAND_RATE" --fail-status 529
MOCK_PID=$PID EXTRA_MOCK_PIDS=""  # measure() watches MOCK_PID and EXTRA_MOCK_PIDS: each mock once
start_mock mock-spare "$P_SPARE"
P_FAST=${PORTS[5]} P_SLOW=${PORTS[6]}
if [[ $STREAMS_BALANCE == 1 ]]; then
  start_mock mock-fast "$P_FAST" --ttfb-ms "$STREAMS_FAST_MS"
  start_mock mock-slow "$P_SLOW" --ttfb-ms "$STREAMS_SLOW_MS"
fi
URL=([direct]="http://127.0.0.1:$P_FLAKY" [direct_spare]="http://127.0.0.1:$P_SPARE")
# The in-band scenario's: the spare is nginx's and haproxy's `backup` and Sluice's priority 2.
wants nginx && start_nginx nginx "${PORTS[2]}" "server 127.0.0.1:$P_FLAKY; server 127.0.0.1:$P_SPARE backup;"
wants haproxy && start_haproxy haproxy "${PORTS[3]}" flaky "$P_FLAKY" spare "$P_SPARE" backup
wants sluice && start_sluice sluice "${PORTS[4]}" "$P_FLAKY $P_SPARE" 2

# The hedging scenario's: two mocks that are sometimes slow to start, round robin over them
# (nginx), and Sluice without and with hedge_after.
P_H1=${PORTS[11]} P_H2=${PORTS[12]}
if [[ $STREAMS_HEDGE == 1 ]]; then
  start_mock mock-h1 "$P_H1" --slow-rate "$STREAMS_SLOW_RATE" --slow-ms "$STREAMS_SLOW_FIRST_MS"
  start_mock mock-h2 "$P_H2" --slow-rate "$STREAMS_SLOW_RATE" --slow-ms "$STREAMS_SLOW_FIRST_MS"
  start_nginx nginx_h "${PORTS[13]}" "server 127.0.0.1:$P_H1; server 127.0.0.1:$P_H2;"
  start_sluice sluice_nohedge "${PORTS[14]}" "$P_H1 $P_H2" 2
  start_sluice sluice_hedge "${PORTS[15]}" "$P_H1 $P_H2" 2 "  hedge_after: $STREAMS_HEDGE_AFTER"
fi

# The stall scenario's: a mock that stalls some streams mid-answer, the spare as the backup of
# nginx and haproxy (each cutting a silent upstream after the same STREAMS_STALL_TIMEOUT), and
# Sluice with on_stall: error and continue.
P_STALLY=${PORTS[16]}
if [[ $STREAMS_STALL == 1 ]]; then
  start_mock mock-stally "$P_STALLY" --stall-after "$STREAMS_STALL_AFTER" --stall-rate "$STREAMS_STALL_RATE"
  start_nginx nginx_s "${PORTS[17]}" "server 127.0.0.1:$P_STALLY; server 127.0.0.1:$P_SPARE backup;" "$STREAMS_STALL_TIMEOUT"
  start_haproxy haproxy_s "${PORTS[18]}" stally "$P_STALLY" spare "$P_SPARE" backup "$STREAMS_STALL_TIMEOUT"
  for v in error continue; do
    port=${PORTS[19]}; [[ $v == continue ]] && port=${PORTS[20]}
    start_sluice "sluice_stall_$v" "$port" "$P_STALLY $P_SPARE" 2 "  stall_timeout: $STREAMS_STALL_TIMEOUT\n  on_stall: $v"
  done
fi

# The balancing scenario's proxies: round robin over fast and slow (nginx, haproxy), and Sluice
# with each balance.
if [[ $STREAMS_BALANCE == 1 ]]; then
  start_nginx nginx_rr "${PORTS[7]}" "server 127.0.0.1:$P_FAST; server 127.0.0.1:$P_SLOW;"
  start_haproxy haproxy_rr "${PORTS[8]}" fast "$P_FAST" slow "$P_SLOW"
  start_sluice sluice_weighted "${PORTS[9]}" "$P_FAST $P_SLOW" 1 "  balance: weighted"
  start_sluice sluice_latency "${PORTS[10]}" "$P_FAST $P_SLOW" 1 "  balance: latency"
fi

mock_requests() {
  curl -fsS "http://127.0.0.1:$1/mock/stats" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["requests"])'
}
rotate() {
  local n=$1 k=${#TARGETS[@]} i
  for ((i = 0; i < k; i++)); do echo "${TARGETS[$(((i + n) % k))]}"; done
}
# streams_measure SCENARIO TARGET ROUND LIMIT LOADGEN_ARGS...: measure(), with the requests the
# scenario's two mocks (UP_A, UP_B; named NAME_A, NAME_B) received meanwhile in upstream.jsonl.
streams_measure() {
  local scenario=$1 target=$2 round=$3 a0 b0 a1 b1
  a0=$(mock_requests "$UP_A"); b0=$(mock_requests "$UP_B")
  measure "$@"
  a1=$(mock_requests "$UP_A"); b1=$(mock_requests "$UP_B")
  printf '{"scenario":"%s","target":"%s","round":%s,"%s":%s,"%s":%s}\n' \
    "$scenario" "$target" "$round" "$NAME_A" "$((a1 - a0))" "$NAME_B" "$((b1 - b0))" >>"$WORK/upstream.jsonl"
}
HDRS=(-H "Authorization: Bearer $MASTER_KEY" -H "x-mock-chunks: $CHUNKS" -H "x-mock-chunk-interval-ms: $STREAMS_CHUNK_MS")
seg=$(awk -v a="$STREAMS_SECONDS" -v b="$STREAMS_SEGMENTS" 'BEGIN { printf "%g", a / b }')
# run_scenario SCENARIO: every target of TARGETS for STREAMS_SECONDS in STREAMS_SEGMENTS
# interleaved segments, the order rotated each segment.
run_scenario() {
  local r t
  for ((r = 0; r < STREAMS_SEGMENTS; r++)); do
    for t in $(rotate "$r"); do
      streams_measure "$1" "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 60 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" --mode load --prime --concurrency "$STREAMS_CONCURRENCY" \
        --duration "$seg" --timeout 30 --samples
    done
  done
}
per="$STREAMS_CONCURRENCY streams, ${STREAMS_SECONDS}s per target in $STREAMS_SEGMENTS segments"

# ---------------------------------------------------------------- 1. in-band errors
TARGETS=()
for t in direct direct_spare nginx haproxy sluice; do wants "$t" && TARGETS+=("$t"); done
log "work dir $WORK; targets: ${TARGETS[*]}"
log "streams 1: ${STREAMS_INBAND_RATE} of flaky's streams fail in-band before any content; $per"
UP_A=$P_FLAKY UP_B=$P_SPARE NAME_A=flaky NAME_B=spare
run_scenario inband

# ---------------------------------------------------------------- 2. latency-aware balancing
if [[ $STREAMS_BALANCE == 1 ]]; then
  TARGETS=(nginx_rr haproxy_rr sluice_weighted sluice_latency)
  UP_A=$P_FAST UP_B=$P_SLOW NAME_A=fast NAME_B=slow
  log "streams 2: two channels ${STREAMS_FAST_MS} ms and ${STREAMS_SLOW_MS} ms to the first byte; $per"
  run_scenario balance
fi

# ---------------------------------------------------------------- 3. hedging
if [[ $STREAMS_HEDGE == 1 ]]; then
  TARGETS=(nginx_h sluice_nohedge sluice_hedge)
  UP_A=$P_H1 UP_B=$P_H2 NAME_A=h1 NAME_B=h2
  log "streams 3: ${STREAMS_SLOW_RATE} of first bytes held ${STREAMS_SLOW_FIRST_MS} ms on both mocks; hedge_after $STREAMS_HEDGE_AFTER; $per"
  run_scenario hedge
fi

# ---------------------------------------------------------------- 4. stalls
if [[ $STREAMS_STALL == 1 ]]; then
  TARGETS=(nginx_s haproxy_s sluice_stall_error sluice_stall_continue)
  UP_A=$P_STALLY UP_B=$P_SPARE NAME_A=stally NAME_B=spare
  log "streams 4: ${STREAMS_STALL_RATE} of stally's streams stall after $STREAMS_STALL_AFTER chunks; cut after $STREAMS_STALL_TIMEOUT of silence; $per"
  run_scenario stall
fi

# ---------------------------------------------------------------- report
LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg)
ours=$(env | cut -d= -f1 | grep -E '^(STREAMS_CONCURRENCY|STREAMS_SECONDS|STREAMS_SEGMENTS|STREAMS_INBAND_RATE|STREAMS_CHUNK_MS|STREAMS_TARGETS|STREAMS_FAST_MS|STREAMS_SLOW_MS|STREAMS_BALANCE|STREAMS_SLOW_RATE|STREAMS_SLOW_FIRST_MS|STREAMS_HEDGE_AFTER|STREAMS_HEDGE|STREAMS_STALL_RATE|STREAMS_STALL_AFTER|STREAMS_STALL_TIMEOUT|STREAMS_STALL|SLUICE_WORKERS|MOCK_WORKERS|NGINX_WORKERS|HAPROXY_THREADS|CHUNKS|SLUICE)$' || true)
cmd=""
for n in $ours; do
  if [[ ${!n} == *" "* ]]; then cmd+="$n=\"${!n}\" "; else cmd+="$n=${!n} "; fi
done
cmd+="BENCH_ONLY=streams bash bench/run.sh"
"$PYTHON" "$ROOT/bench/streams_report.py" --work "$WORK" --out "$BENCH_OUT" --report "$ROOT/bench/report.py" \
  --set "command=$cmd" --set "concurrency=$STREAMS_CONCURRENCY" --set "seconds=$STREAMS_SECONDS" \
  --set "segments=$STREAMS_SEGMENTS" --set "inband_rate=$STREAMS_INBAND_RATE" --set "chunks=$CHUNKS" \
  --set "chunk_ms=$STREAMS_CHUNK_MS" --set "fast_ms=$STREAMS_FAST_MS" --set "slow_ms=$STREAMS_SLOW_MS" \
  --set "slow_rate=$STREAMS_SLOW_RATE" --set "slow_first_ms=$STREAMS_SLOW_FIRST_MS" --set "hedge_after=$STREAMS_HEDGE_AFTER" \
  --set "stall_rate=$STREAMS_STALL_RATE" --set "stall_after=$STREAMS_STALL_AFTER" --set "stall_timeout=$STREAMS_STALL_TIMEOUT" --set "loadavg_start=$LOADAVG_START" --set "loadavg_end=$LOADAVG_END" \
  --set "nginx_version=$("$NGINX" -v 2>&1 | sed 's/^nginx version: nginx\///')" \
  --set "haproxy_version=$("$HAPROXY" -v 2>/dev/null | head -n 1 | awk '{print $3}')" \
  --set "sluice_workers=$SLUICE_WORKERS" --set "mock_workers=$MOCK_WORKERS" \
  --set "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" \
  $([[ ${BENCH_STRICT:-0} == 1 ]] && echo --strict)
