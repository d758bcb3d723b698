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
read -r -a PORTS <<<"$(free_ports 21)"
P_FLAKY=${PORTS[0]} P_SPARE=${PORTS[1]}
start mock-flaky "${MOCK[@]}" --listen "127.0.0.1:$P_FLAKY" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" \
  --error-event-rate "$STREAMS_INBAND_RATE" --fail-status 529
MOCK_PID=$PID
wait_port mock-flaky "$PID" "$P_FLAKY" || die "the mock provider did not start (${MOCK[*]})"
start mock-spare "${MOCK[@]}" --listen "127.0.0.1:$P_SPARE" --workers "$MOCK_WORKERS" --chunks "$CHUNKS"
EXTRA_MOCK_PIDS=$PID
wait_port mock-spare "$PID" "$P_SPARE" || die "the spare mock did not start"
P_FAST=${PORTS[5]} P_SLOW=${PORTS[6]}
if [[ $STREAMS_BALANCE == 1 ]]; then
  start mock-fast "${MOCK[@]}" --listen "127.0.0.1:$P_FAST" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms "$STREAMS_FAST_MS"
  EXTRA_MOCK_PIDS+=" $PID"
  wait_port mock-fast "$PID" "$P_FAST" || die "the fast mock did not start"
  start mock-slow "${MOCK[@]}" --listen "127.0.0.1:$P_SLOW" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms "$STREAMS_SLOW_MS"
  EXTRA_MOCK_PIDS+=" $PID"
  wait_port mock-slow "$PID" "$P_SLOW" || die "the slow mock did not start"
fi
URL=([direct]="http://127.0.0.1:$P_FLAKY" [direct_spare]="http://127.0.0.1:$P_SPARE")
if wants nginx; then
  mkdir -p "$WORK/nginx"
  # bench/nginx_tls.conf.template without ssl; the spare is nginx's `backup` server.
  sed -e "s#@PREFIX@#$WORK/nginx#g" -e "s#@WORKERS@#$NGINX_WORKERS#g" -e "s#@LISTEN@#127.0.0.1:${PORTS[2]}#g" \
      -e "s#@SSL@##g" -e "/ssl_certificate/d" \
      -e "s#server @UPSTREAM@;#server 127.0.0.1:$P_FLAKY; server 127.0.0.1:$P_SPARE backup;#g" \
      -e "s#@KEEPALIVE@#$STREAMS_CONCURRENCY#g" -e "s#@CONNECTIONS@#$CONNECTIONS#g" -e "s#@NOFILE@#$((CONNECTIONS + 64))#g" \
      -e "s#@HEADER_TIMEOUT@#60s#g" "$ROOT/bench/nginx_tls.conf.template" >"$WORK/nginx/nginx.conf"
  start nginx "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log"
  wait_port nginx "$PID" "${PORTS[2]}" || die "nginx did not start (see $WORK/nginx/error.log)"
  PROXY_ROOT[nginx]=$PID URL[nginx]="http://127.0.0.1:${PORTS[2]}"
fi
if wants haproxy; then
  sed -e "s#@THREADS@#$HAPROXY_THREADS#g" -e "s#@MAXCONN@#$((STREAMS_CONCURRENCY + 256))#g" \
      -e "s#@LISTEN@#127.0.0.1:${PORTS[3]}#g" \
      -e "s#server mock @UPSTREAM@ maxconn \\(.*\\)#server flaky 127.0.0.1:$P_FLAKY maxconn \\1\\n    server spare 127.0.0.1:$P_SPARE maxconn \\1 backup#" \
      "$ROOT/bench/haproxy.cfg.template" >"$WORK/haproxy.cfg"
  start haproxy "$HAPROXY" -db -f "$WORK/haproxy.cfg"
  wait_port haproxy "$PID" "${PORTS[3]}" || die "haproxy did not start (see $WORK/haproxy.log)"
  PROXY_ROOT[haproxy]=$PID URL[haproxy]="http://127.0.0.1:${PORTS[3]}"
fi
if wants sluice; then
  sluice_config "$WORK/sluice.yaml" "${PORTS[4]}" "$P_FLAKY $P_SPARE" ""
  # the spare after the flaky one, as nginx's and haproxy's backup
  "$PYTHON" - "$WORK/sluice.yaml" <<'PY'
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
  start sluice "$SLUICE" serve -c "$WORK/sluice.yaml"
  wait_port sluice "$PID" "${PORTS[4]}" 30 || die "sluice did not start"
  PROXY_ROOT[sluice]=$PID URL[sluice]="http://127.0.0.1:${PORTS[4]}"
fi
TARGETS=()
for t in direct direct_spare nginx haproxy sluice; do wants "$t" && TARGETS+=("$t"); done

# The hedging scenario's: two mocks that are sometimes slow to start, round robin over them
# (nginx), and Sluice without and with hedge_after.
P_H1=${PORTS[11]} P_H2=${PORTS[12]}
if [[ $STREAMS_HEDGE == 1 ]]; then
  for h in 1 2; do
    port=$P_H1; [[ $h == 2 ]] && port=$P_H2
    start "mock-h$h" "${MOCK[@]}" --listen "127.0.0.1:$port" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" \
      --slow-rate "$STREAMS_SLOW_RATE" --slow-ms "$STREAMS_SLOW_FIRST_MS"
    EXTRA_MOCK_PIDS+=" $PID"
    wait_port "mock-h$h" "$PID" "$port" || die "mock h$h did not start"
  done
  mkdir -p "$WORK/nginx_h"
  sed -e "s#@PREFIX@#$WORK/nginx_h#g" -e "s#@WORKERS@#$NGINX_WORKERS#g" -e "s#@LISTEN@#127.0.0.1:${PORTS[13]}#g" \
      -e "s#@SSL@##g" -e "/ssl_certificate/d" \
      -e "s#server @UPSTREAM@;#server 127.0.0.1:$P_H1; server 127.0.0.1:$P_H2;#g" \
      -e "s#@KEEPALIVE@#$STREAMS_CONCURRENCY#g" -e "s#@CONNECTIONS@#$CONNECTIONS#g" -e "s#@NOFILE@#$((CONNECTIONS + 64))#g" \
      -e "s#@HEADER_TIMEOUT@#60s#g" "$ROOT/bench/nginx_tls.conf.template" >"$WORK/nginx_h/nginx.conf"
  start nginx_h "$NGINX" -p "$WORK/nginx_h" -c "$WORK/nginx_h/nginx.conf" -e "$WORK/nginx_h/error.log"
  wait_port nginx_h "$PID" "${PORTS[13]}" || die "nginx did not start (see $WORK/nginx_h/error.log)"
  PROXY_ROOT[nginx_h]=$PID URL[nginx_h]="http://127.0.0.1:${PORTS[13]}"
  for v in nohedge hedge; do
    port=${PORTS[14]}; [[ $v == hedge ]] && port=${PORTS[15]}
    sluice_config "$WORK/sluice_$v.yaml" "$port" "$P_H1 $P_H2" ""
    "$PYTHON" - "$WORK/sluice_$v.yaml" <<'PY'
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
    [[ $v == hedge ]] && sed -i "s#^  max_retries: 2#  max_retries: 2\n  hedge_after: $STREAMS_HEDGE_AFTER#" "$WORK/sluice_$v.yaml"
    start "sluice_$v" "$SLUICE" serve -c "$WORK/sluice_$v.yaml"
    wait_port "sluice_$v" "$PID" "$port" 30 || die "sluice ($v) did not start"
    PROXY_ROOT[sluice_$v]=$PID URL[sluice_$v]="http://127.0.0.1:$port"
  done
fi

# The stall scenario's: a mock that stalls some streams mid-answer, the spare as the backup of
# nginx and haproxy (each cutting a silent upstream after the same STREAMS_STALL_TIMEOUT), and
# Sluice with on_stall: error and continue.
P_STALLY=${PORTS[16]}
if [[ $STREAMS_STALL == 1 ]]; then
  start mock-stally "${MOCK[@]}" --listen "127.0.0.1:$P_STALLY" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" \
    --stall-after "$STREAMS_STALL_AFTER" --stall-rate "$STREAMS_STALL_RATE"
  EXTRA_MOCK_PIDS+=" $PID"
  wait_port mock-stally "$PID" "$P_STALLY" || die "the stalling mock did not start"
  mkdir -p "$WORK/nginx_s"
  sed -e "s#@PREFIX@#$WORK/nginx_s#g" -e "s#@WORKERS@#$NGINX_WORKERS#g" -e "s#@LISTEN@#127.0.0.1:${PORTS[17]}#g" \
      -e "s#@SSL@##g" -e "/ssl_certificate/d" \
      -e "s#server @UPSTREAM@;#server 127.0.0.1:$P_STALLY; server 127.0.0.1:$P_SPARE backup;#g" \
      -e "s#proxy_read_timeout 600s#proxy_read_timeout $STREAMS_STALL_TIMEOUT#" \
      -e "s#@KEEPALIVE@#$STREAMS_CONCURRENCY#g" -e "s#@CONNECTIONS@#$CONNECTIONS#g" -e "s#@NOFILE@#$((CONNECTIONS + 64))#g" \
      -e "s#@HEADER_TIMEOUT@#60s#g" "$ROOT/bench/nginx_tls.conf.template" >"$WORK/nginx_s/nginx.conf"
  start nginx_s "$NGINX" -p "$WORK/nginx_s" -c "$WORK/nginx_s/nginx.conf" -e "$WORK/nginx_s/error.log"
  wait_port nginx_s "$PID" "${PORTS[17]}" || die "nginx did not start (see $WORK/nginx_s/error.log)"
  PROXY_ROOT[nginx_s]=$PID URL[nginx_s]="http://127.0.0.1:${PORTS[17]}"
  sed -e "s#@THREADS@#$HAPROXY_THREADS#g" -e "s#@MAXCONN@#$((STREAMS_CONCURRENCY + 256))#g" \
      -e "s#@LISTEN@#127.0.0.1:${PORTS[18]}#g" -e "s#timeout server 600s#timeout server $STREAMS_STALL_TIMEOUT#" \
      -e "s#server mock @UPSTREAM@ maxconn \\(.*\\)#server stally 127.0.0.1:$P_STALLY maxconn \\1\\n    server spare 127.0.0.1:$P_SPARE maxconn \\1 backup#" \
      "$ROOT/bench/haproxy.cfg.template" >"$WORK/haproxy_s.cfg"
  start haproxy_s "$HAPROXY" -db -f "$WORK/haproxy_s.cfg"
  wait_port haproxy_s "$PID" "${PORTS[18]}" || die "haproxy did not start"
  PROXY_ROOT[haproxy_s]=$PID URL[haproxy_s]="http://127.0.0.1:${PORTS[18]}"
  for v in error continue; do
    port=${PORTS[19]}; [[ $v == continue ]] && port=${PORTS[20]}
    sluice_config "$WORK/sluice_stall_$v.yaml" "$port" "$P_STALLY $P_SPARE" ""
    "$PYTHON" - "$WORK/sluice_stall_$v.yaml" <<'PY'
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
    sed -i "s#^  max_retries: 2#  max_retries: 2\n  stall_timeout: $STREAMS_STALL_TIMEOUT\n  on_stall: $v#" "$WORK/sluice_stall_$v.yaml"
    start "sluice_stall_$v" "$SLUICE" serve -c "$WORK/sluice_stall_$v.yaml"
    wait_port "sluice_stall_$v" "$PID" "$port" 30 || die "sluice (stall, $v) did not start"
    PROXY_ROOT[sluice_stall_$v]=$PID URL[sluice_stall_$v]="http://127.0.0.1:$port"
  done
fi

# The balancing scenario's proxies: round robin over fast and slow (nginx, haproxy), and Sluice
# with each balance.
if [[ $STREAMS_BALANCE == 1 ]]; then
  mkdir -p "$WORK/nginx_rr"
  sed -e "s#@PREFIX@#$WORK/nginx_rr#g" -e "s#@WORKERS@#$NGINX_WORKERS#g" -e "s#@LISTEN@#127.0.0.1:${PORTS[7]}#g" \
      -e "s#@SSL@##g" -e "/ssl_certificate/d" \
      -e "s#server @UPSTREAM@;#server 127.0.0.1:$P_FAST; server 127.0.0.1:$P_SLOW;#g" \
      -e "s#@KEEPALIVE@#$STREAMS_CONCURRENCY#g" -e "s#@CONNECTIONS@#$CONNECTIONS#g" -e "s#@NOFILE@#$((CONNECTIONS + 64))#g" \
      -e "s#@HEADER_TIMEOUT@#60s#g" "$ROOT/bench/nginx_tls.conf.template" >"$WORK/nginx_rr/nginx.conf"
  start nginx_rr "$NGINX" -p "$WORK/nginx_rr" -c "$WORK/nginx_rr/nginx.conf" -e "$WORK/nginx_rr/error.log"
  wait_port nginx_rr "$PID" "${PORTS[7]}" || die "nginx did not start (see $WORK/nginx_rr/error.log)"
  PROXY_ROOT[nginx_rr]=$PID URL[nginx_rr]="http://127.0.0.1:${PORTS[7]}"
  sed -e "s#@THREADS@#$HAPROXY_THREADS#g" -e "s#@MAXCONN@#$((STREAMS_CONCURRENCY + 256))#g" \
      -e "s#@LISTEN@#127.0.0.1:${PORTS[8]}#g" \
      -e "s#server mock @UPSTREAM@ maxconn \\(.*\\)#server fast 127.0.0.1:$P_FAST maxconn \\1\\n    server slow 127.0.0.1:$P_SLOW maxconn \\1#" \
      "$ROOT/bench/haproxy.cfg.template" >"$WORK/haproxy_rr.cfg"
  start haproxy_rr "$HAPROXY" -db -f "$WORK/haproxy_rr.cfg"
  wait_port haproxy_rr "$PID" "${PORTS[8]}" || die "haproxy did not start"
  PROXY_ROOT[haproxy_rr]=$PID URL[haproxy_rr]="http://127.0.0.1:${PORTS[8]}"
  for b in weighted latency; do
    port=${PORTS[9]}; [[ $b == latency ]] && port=${PORTS[10]}
    sluice_config "$WORK/sluice_$b.yaml" "$port" "$P_FAST $P_SLOW" ""
    sed -i "s#^  max_retries: 2#  max_retries: 2\n  balance: $b#" "$WORK/sluice_$b.yaml"
    start "sluice_$b" "$SLUICE" serve -c "$WORK/sluice_$b.yaml"
    wait_port "sluice_$b" "$PID" "$port" 30 || die "sluice ($b) did not start"
    PROXY_ROOT[sluice_$b]=$PID URL[sluice_$b]="http://127.0.0.1:$port"
  done
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

# ---------------------------------------------------------------- 1. in-band errors
log "work dir $WORK; targets: ${TARGETS[*]}"
HDRS=(-H "Authorization: Bearer $MASTER_KEY" -H "x-mock-chunks: $CHUNKS" -H "x-mock-chunk-interval-ms: $STREAMS_CHUNK_MS")
seg=$(awk -v a="$STREAMS_SECONDS" -v b="$STREAMS_SEGMENTS" 'BEGIN { printf "%g", a / b }')
log "streams 1: ${STREAMS_INBAND_RATE} of flaky's streams fail in-band before any content; $STREAMS_CONCURRENCY streams, ${STREAMS_SECONDS}s per target in $STREAMS_SEGMENTS segments"
UP_A=$P_FLAKY UP_B=$P_SPARE NAME_A=flaky NAME_B=spare
for ((r = 0; r < STREAMS_SEGMENTS; r++)); do
  for t in $(rotate "$r"); do
    streams_measure inband "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 60 }')" \
      --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" --mode load --prime --concurrency "$STREAMS_CONCURRENCY" \
      --duration "$seg" --timeout 30 --samples
  done
done

# ---------------------------------------------------------------- 2. latency-aware balancing
if [[ $STREAMS_BALANCE == 1 ]]; then
  TARGETS=(nginx_rr haproxy_rr sluice_weighted sluice_latency)
  UP_A=$P_FAST UP_B=$P_SLOW NAME_A=fast NAME_B=slow
  log "streams 2: two channels ${STREAMS_FAST_MS} ms and ${STREAMS_SLOW_MS} ms to the first byte; $STREAMS_CONCURRENCY streams, ${STREAMS_SECONDS}s per target in $STREAMS_SEGMENTS segments"
  for ((r = 0; r < STREAMS_SEGMENTS; r++)); do
    for t in $(rotate "$r"); do
      streams_measure balance "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 60 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" --mode load --prime --concurrency "$STREAMS_CONCURRENCY" \
        --duration "$seg" --timeout 30 --samples
    done
  done
fi

# ---------------------------------------------------------------- 3. hedging
if [[ $STREAMS_HEDGE == 1 ]]; then
  TARGETS=(nginx_h sluice_nohedge sluice_hedge)
  UP_A=$P_H1 UP_B=$P_H2 NAME_A=h1 NAME_B=h2
  log "streams 3: ${STREAMS_SLOW_RATE} of first bytes held ${STREAMS_SLOW_FIRST_MS} ms on both mocks; hedge_after $STREAMS_HEDGE_AFTER; $STREAMS_CONCURRENCY streams, ${STREAMS_SECONDS}s per target in $STREAMS_SEGMENTS segments"
  for ((r = 0; r < STREAMS_SEGMENTS; r++)); do
    for t in $(rotate "$r"); do
      streams_measure hedge "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 60 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" --mode load --prime --concurrency "$STREAMS_CONCURRENCY" \
        --duration "$seg" --timeout 30 --samples
    done
  done
fi

# ---------------------------------------------------------------- 4. stalls
if [[ $STREAMS_STALL == 1 ]]; then
  TARGETS=(nginx_s haproxy_s sluice_stall_error sluice_stall_continue)
  UP_A=$P_STALLY UP_B=$P_SPARE NAME_A=stally NAME_B=spare
  log "streams 4: ${STREAMS_STALL_RATE} of stally's streams stall after $STREAMS_STALL_AFTER chunks; cut after $STREAMS_STALL_TIMEOUT of silence; $STREAMS_CONCURRENCY streams, ${STREAMS_SECONDS}s per target in $STREAMS_SEGMENTS segments"
  for ((r = 0; r < STREAMS_SEGMENTS; r++)); do
    for t in $(rotate "$r"); do
      streams_measure stall "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 60 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" --mode load --prime --concurrency "$STREAMS_CONCURRENCY" \
        --duration "$seg" --timeout 30 --samples
    done
  done
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
