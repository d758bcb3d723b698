#!/usr/bin/env bash
# bench/run.sh — the Sluice benchmark harness (`make bench`).
#
# In one run on this machine it starts the mock provider, nginx in front of it
# (the floor for a proxy hop) and Sluice in front of it, then measures, against
# direct / nginx / sluice:
#   1. ping:       3 warm-up + 30 sequential streaming requests, repeated in rounds
#   2. throughput: 50 concurrent streams, 20 chunks each, no upstream delay, 15 s
#   3. resources:  peak RSS (VmHWM) and CPU seconds per 10k requests of each proxy
#   4. failover:   two mocks, one at --fail-rate 0.3, 2000 requests at concurrency 20
#   5. translation: one Sluice with an OpenAI channel (gpt-4o-mini) and an Anthropic channel
#                  (claude-sonnet-4-5) on the mock; OpenAI chat streams (50 concurrent, 20 chunks)
#                  to both models in interleaved segments: passthrough vs OpenAI client ->
#                  Anthropic upstream; then the translation micro benchmarks
#                  (build/sluice_translate_bench, bench/translate_bench.cpp)
#   6. request logs: two Sluices with the same config but store.request_logs false / true
#                  (SQLite, a fresh database file), the throughput load (50 streams) on each in
#                  interleaved segments: throughput ratio on / off and CPU per 10k requests; then
#                  the log writer alone (build/sluice_store_bench, bench/store_bench.cpp): rows/s
#                  on SQLite and on a throwaway PostgreSQL (tests/scripts/with-postgres.sh)
# and writes the figures to bench/BENCHMARKS.md (via bench/report.py; sections 5 and 6 each in
# their own marked block, so that BENCH_ONLY=translation or BENCH_ONLY=logs updates only that
# block). A full run ends with bench/screen.sh (the prompt-injection detector: held-out precision /
# recall / F1 and time per prompt, its own block; BENCH_ONLY=screen runs only that), then
# bench/protect.sh (redaction + screening throughput on vs off, and a cache hit's latency against
# nginx serving the same bytes: its own block; BENCH_ONLY=protect runs only that), then
# bench/tls.sh (BENCH_ONLY=tls runs only that, ~4 min): Sluice terminating TLS against nginx
# terminating TLS (the same throwaway certificate, both on the same mock), with plain nginx and
# plain Sluice in the same run, at 50 and at 2000 kept-alive concurrent streams (req/s, TTFB /
# close p50 / p99, proxy CPU s per 10k requests, RSS), and with a new connection (TLS handshake)
# per request; its own block, its knobs (TLS_*) in its header.
# Not in the default run: BENCH_ONLY=store_scale runs bench/store_scale.sh (~5 min): the
# request log at 5 million rows (usage and log search through the admin API, before and after
# the rollups, and the gateway's RSS); its own block, its knobs (STORE_SCALE_*, BEFORE) in its
# header. Nor BENCH_ONLY=scale, bench/scale.sh (~9 min): 50 and 1000 concurrent realistic streams
# and 5000 slow ones through Sluice, nginx and haproxy (req/s, CPU per request, RSS, memory per
# stream, upstream connections opened); its own block, its knobs (SCALE_*, SLOW_*) in its header.
# Nor BENCH_ONLY=streams, bench/streams.sh (~2 min): streams that fail after the provider's 200
# (in-band error events) through Sluice, nginx and haproxy with the same spare upstream (success
# rate, TTFB / close, upstream calls per request); its own block, its knobs (STREAMS_*) in its header.
# Nor BENCH_ONLY=mcp, bench/mcp.sh (~2 min): MCP tool calls through /mcp against the MCP server
# itself (server-everything over HTTP, and as a stdio child), the added latency at p50 and p99.
# Nor BENCH_ONLY=bedrock, bench/bedrock.sh (~1.5 min): streams through a Bedrock channel (SigV4,
# the AWS event stream decoded) and a Vertex channel (a service account's token, Gemini) against
# an OpenAI channel on the same mock, its own block.
# Nor BENCH_ONLY=ws, bench/ws.sh (~2 min): an agent loop's turns over the Responses WebSocket mode
# against POSTs, native and translated, with the mock itself as the floor; its own block, its knobs
# (WS_*) in its header.
# Nor BENCH_ONLY=syscalls, bench/syscalls.sh (~1 min): system calls per request of Sluice, nginx and
# haproxy relaying the same streams (perf's syscall tracepoints), printed as a table.
# Nor BENCH_ONLY=teams, bench/teams.sh (~2 min): a virtual key in a team (checked and counted
# against the key and the team) against a key alone and the master key, limits in the gateway
# and through Redis, printed as a table.
#
# Everything it starts listens on 127.0.0.1 and is killed on exit.
# Knobs (environment): BUILD_DIR, SLUICE, LOADGEN, NGINX, NGINX_WORKERS (auto),
# SLUICE_WORKERS (0 = one per core), MOCK_WORKERS (1), PING_ROUNDS (3), PING_WARMUP (3),
# PING_COUNT (30), CONCURRENCY (50), CHUNKS (20), THROUGHPUT_SECONDS (15),
# THROUGHPUT_SEGMENTS (3: the 15 s per target are split into interleaved
# segments), FAILOVER_COUNT (2000), FAILOVER_CONCURRENCY (20), FAIL_RATE (0.3),
# FAIL_STATUS (500), BENCH_OUT (bench/BENCHMARKS.md), BENCH_NO_BUILD=1 (skip
# building), BENCH_STRICT=1 (exit 1 when a target is missed), MOCK_CMD (the
# mock provider command; default "$SLUICE mock"; only for testing the harness),
# BENCH_ONLY=translation (run only scenario 5 and the micro benchmarks), BENCH_ONLY=logs (run
# only scenario 6), LOGS_SECONDS (THROUGHPUT_SECONDS: per configuration), LOGS_SEGMENTS (10:
# short and many, as the ratio sought is within what other load on the machine moves),
# STORE_BENCH (build/sluice_store_bench), STORE_BENCH_ROWS (200000), STORE_BENCH_RUNS (3: the
# median run is reported), STORE_BENCH_POSTGRES (1; 0 skips PostgreSQL),
# TRANSLATION_SECONDS (THROUGHPUT_SECONDS: per path), TRANSLATION_SEGMENTS (6: interleaved
# segments per path; short and many, so that other load on the machine hits both paths alike),
# TRANSLATE_MODEL (claude-sonnet-4-5), TRANSLATE_BENCH (build/sluice_translate_bench),
# TRANSLATE_BENCH_MIN_TIME (0.3: --benchmark_min_time per micro benchmark).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"  # the shared settings, log, die, bench_build, bench_work, start, measure...
PING_ROUNDS=${PING_ROUNDS:-3}
PING_WARMUP=${PING_WARMUP:-3}
PING_COUNT=${PING_COUNT:-30}
CONCURRENCY=${CONCURRENCY:-50}
THROUGHPUT_SECONDS=${THROUGHPUT_SECONDS:-15}
THROUGHPUT_SEGMENTS=${THROUGHPUT_SEGMENTS:-3}
FAILOVER_COUNT=${FAILOVER_COUNT:-2000}
FAILOVER_CONCURRENCY=${FAILOVER_CONCURRENCY:-20}
FAIL_RATE=${FAIL_RATE:-0.3}
FAIL_STATUS=${FAIL_STATUS:-500}
MODEL=${MODEL:-gpt-4o-mini}
BENCH_ONLY=${BENCH_ONLY:-}
TRANSLATION_SECONDS=${TRANSLATION_SECONDS:-$THROUGHPUT_SECONDS}
TRANSLATION_SEGMENTS=${TRANSLATION_SEGMENTS:-6}
TRANSLATE_MODEL=${TRANSLATE_MODEL:-claude-sonnet-4-5}
TRANSLATE_BENCH=${TRANSLATE_BENCH:-$BUILD_DIR/sluice_translate_bench}
TRANSLATE_BENCH_MIN_TIME=${TRANSLATE_BENCH_MIN_TIME:-0.3}
LOGS_SECONDS=${LOGS_SECONDS:-$THROUGHPUT_SECONDS}
LOGS_SEGMENTS=${LOGS_SEGMENTS:-10}
STORE_BENCH=${STORE_BENCH:-$BUILD_DIR/sluice_store_bench}
STORE_BENCH_ROWS=${STORE_BENCH_ROWS:-200000}
STORE_BENCH_RUNS=${STORE_BENCH_RUNS:-3}
STORE_BENCH_POSTGRES=${STORE_BENCH_POSTGRES:-1}
MASTER_KEY=sk-bench-master
REQ_TIMEOUT=10   # seconds per request in the load generator


case $BENCH_ONLY in
  "") FULL=1 RUN_TR=1 RUN_LOGS=1 ;;
  translation) FULL=0 RUN_TR=1 RUN_LOGS=0 ;;
  logs) FULL=0 RUN_TR=0 RUN_LOGS=1 ;;
  screen) exec bash "$ROOT/bench/screen.sh" ;;  # the prompt-injection detector only (bench/screen.sh)
  protect) exec bash "$ROOT/bench/protect.sh" ;;  # redaction / screening / cache only (bench/protect.sh)
  tls) exec bash "$ROOT/bench/tls.sh" ;;  # Sluice vs nginx terminating TLS only (bench/tls.sh)
  # The request log at 5 million rows (bench/store_scale.sh); not in the default run (minutes).
  store_scale) exec bash "$ROOT/bench/store_scale.sh" ;;
  # Thousands of concurrent streams against nginx and haproxy (bench/scale.sh); ~9 minutes.
  scale) exec bash "$ROOT/bench/scale.sh" ;;
  # Streams that fail after the provider's 200 (bench/streams.sh); ~2 minutes.
  streams) exec bash "$ROOT/bench/streams.sh" ;;
  # The Responses WebSocket mode's turns against POSTs (bench/ws.sh); ~2 minutes.
  ws) exec bash "$ROOT/bench/ws.sh" ;;
  # MCP tool calls through /mcp against the MCP server itself (bench/mcp.sh); ~2 minutes.
  mcp) exec bash "$ROOT/bench/mcp.sh" ;;
  # Bedrock (signing, event-stream decoding) and Vertex channels against an OpenAI one (bench/bedrock.sh); ~1.5 minutes.
  bedrock) exec bash "$ROOT/bench/bedrock.sh" ;;
  # System calls per request of Sluice, nginx and haproxy on the same streams (bench/syscalls.sh); ~1 minute.
  syscalls) exec bash "$ROOT/bench/syscalls.sh" ;;
  # A key in a team against a key alone, in the gateway and through Redis (bench/teams.sh); ~2 minutes.
  teams) exec bash "$ROOT/bench/teams.sh" ;;
  *) die "BENCH_ONLY=$BENCH_ONLY: expected empty (everything), translation, logs, screen, protect, tls, store_scale, scale, streams, ws, mcp, bedrock, syscalls or teams" ;;
esac

# ---------------------------------------------------------------- build
if [[ ${BENCH_NO_BUILD:-0} != 1 ]]; then
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$ROOT" -B "$BUILD_DIR" "${gen[@]}" >&2 || die "cmake configure failed"
  fi
  log "building sluice_loadgen and sluice"
  cmake --build "$BUILD_DIR" --target sluice_loadgen -j"$(nproc)" >&2 || die "building sluice_loadgen failed"
  cmake --build "$BUILD_DIR" --target sluice -j"$(nproc)" >&2 ||
    log "warning: building sluice failed; using the existing binary if there is one"
  if [[ $RUN_TR == 1 ]]; then
    cmake --build "$BUILD_DIR" --target sluice_translate_bench -j"$(nproc)" >&2 ||
      log "warning: building sluice_translate_bench failed; the translation micro benchmarks are left out"
  fi
  if [[ $RUN_LOGS == 1 ]]; then
    cmake --build "$BUILD_DIR" --target sluice_store_bench -j"$(nproc)" >&2 ||
      log "warning: building sluice_store_bench failed; the log writer figures are left out"
  fi
fi
[[ -x $LOADGEN ]] || die "load generator not found at $LOADGEN"
[[ $FULL == 0 || -x $NGINX ]] || die "nginx not found at $NGINX (Debian: apt-get install nginx-light)"
if [[ -z ${MOCK_CMD:-} ]]; then
  [[ -x $SLUICE ]] || die "sluice binary not found at $SLUICE"
  MOCK_CMD="$SLUICE mock"
fi
read -r -a MOCK <<<"$MOCK_CMD"

# ---------------------------------------------------------------- processes
bench_work sluice-bench

# free loopback ports, all distinct
read -r -a PORTS <<<"$(free_ports 8)"
P_MOCK=${PORTS[0]} P_NGINX=${PORTS[1]} P_SLUICE=${PORTS[2]}
P_MOCK_FAIL=${PORTS[3]} P_SLUICE_FO=${PORTS[4]} P_SLUICE_TR=${PORTS[5]}
P_SLUICE_LOGS_OFF=${PORTS[6]} P_SLUICE_LOGS_ON=${PORTS[7]}

# ---------------------------------------------------------------- start the peers
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
MOCK_ARGS=(--workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms 0 --chunk-interval-ms 0)
log "work dir $WORK"
log "starting mock on 127.0.0.1:$P_MOCK"
start mock "${MOCK[@]}" --listen "127.0.0.1:$P_MOCK" "${MOCK_ARGS[@]}"
MOCK_PID=$PID
wait_port mock "$MOCK_PID" "$P_MOCK" || die "the mock provider did not start (${MOCK[*]})"

NGINX_PID=""
if [[ $FULL == 1 ]]; then
  log "starting nginx on 127.0.0.1:$P_NGINX (worker_processes $NGINX_WORKERS)"
  mkdir -p "$WORK/nginx"
  sed -e "s#@PREFIX@#$WORK/nginx#g" -e "s#@WORKERS@#$NGINX_WORKERS#g" \
      -e "s#@LISTEN@#127.0.0.1:$P_NGINX#g" -e "s#@UPSTREAM@#127.0.0.1:$P_MOCK#g" \
      "$ROOT/bench/nginx.conf.template" >"$WORK/nginx/nginx.conf"
  start nginx "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log"
  NGINX_PID=$PID
  wait_port nginx "$NGINX_PID" "$P_NGINX" || die "nginx did not start (see $WORK/nginx/error.log)"
fi

SLUICE_PID=""
if [[ $FULL == 0 ]]; then
  :  # BENCH_ONLY=translation: scenario 5 starts its own Sluice
elif [[ -x $SLUICE ]]; then
  sluice_config "$WORK/sluice.yaml" "$P_SLUICE" "$P_MOCK" ""
  log "starting sluice on 127.0.0.1:$P_SLUICE (workers $SLUICE_WORKERS)"
  start sluice "$SLUICE" serve -c "$WORK/sluice.yaml"
  if wait_port sluice "$PID" "$P_SLUICE" 30; then
    SLUICE_PID=$PID
  else
    log "warning: sluice did not start; its figures are left out"
  fi
else
  log "warning: no sluice binary at $SLUICE; its figures are left out"
fi

declare -A URL=([direct]="http://127.0.0.1:$P_MOCK" [nginx]="http://127.0.0.1:$P_NGINX" [sluice]="http://127.0.0.1:$P_SLUICE")
# the root process of each proxy; measure() samples it and its children (nginx workers)
declare -A PROXY_ROOT=()
TARGETS=(direct)
if [[ -n $NGINX_PID ]]; then
  PROXY_ROOT[nginx]=$NGINX_PID
  TARGETS+=(nginx)
fi
if [[ -n $SLUICE_PID ]]; then
  PROXY_ROOT[sluice]=$SLUICE_PID
  TARGETS+=(sluice)
fi
HDRS=(-H "Authorization: Bearer $MASTER_KEY" -H "x-mock-chunks: $CHUNKS")

# Quick sanity request through every target, so a broken peer shows up early.
for t in "${TARGETS[@]}"; do
  out=$("$LOADGEN" --url "${URL[$t]}/v1/chat/completions" --model "$MODEL" "${HDRS[@]}" \
        --mode ping --count 1 --timeout "$REQ_TIMEOUT" || true)
  if ! grep -q '"ok":1' <<<"$out"; then
    log "warning: a request through $t failed: $out"
  fi
done

# rotate N: the targets rotated by N (fair interleaving across rounds)
rotate() {
  local n=$1 k=${#TARGETS[@]} i
  for ((i = 0; i < k; i++)); do echo "${TARGETS[$(((i + n) % k))]}"; done
}

if [[ $FULL == 1 ]]; then
  # ---------------------------------------------------------------- 1. ping
  log "1/5 ping: $PING_ROUNDS rounds of $PING_WARMUP warm-up + $PING_COUNT sequential streams"
  for ((r = 0; r < PING_ROUNDS; r++)); do
    for t in $(rotate "$r"); do
      measure ping "$t" "$((r + 1))" 60 --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" \
        --mode ping --warmup "$PING_WARMUP" --count "$PING_COUNT" --timeout "$REQ_TIMEOUT" --samples
    done
  done

  # ---------------------------------------------------------------- 2. throughput
  seg=$(awk -v a="$THROUGHPUT_SECONDS" -v b="$THROUGHPUT_SEGMENTS" 'BEGIN { printf "%g", a / b }')
  log "2/5 throughput: $CONCURRENCY streams x $CHUNKS chunks, ${THROUGHPUT_SECONDS}s per target ($THROUGHPUT_SEGMENTS interleaved segments of ${seg}s)"
  for ((r = 0; r < THROUGHPUT_SEGMENTS; r++)); do
    for t in $(rotate "$r"); do
      measure throughput "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 60 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" --mode load --warmup 10 \
        --concurrency "$CONCURRENCY" --duration "$seg" --timeout "$REQ_TIMEOUT" --samples
    done
  done

  # ---------------------------------------------------------------- 4. failover
  # (3. resources come out of the throughput records: VmHWM and CPU deltas.)
  log "4/5 failover: $FAILOVER_COUNT requests at concurrency $FAILOVER_CONCURRENCY, one mock at --fail-rate $FAIL_RATE"
  start mock_fail "${MOCK[@]}" --listen "127.0.0.1:$P_MOCK_FAIL" "${MOCK_ARGS[@]}" \
    --fail-rate "$FAIL_RATE" --fail-status "$FAIL_STATUS"
  MOCK_FAIL_PID=$PID
  wait_port mock_fail "$MOCK_FAIL_PID" "$P_MOCK_FAIL" || die "the failing mock did not start"
  FO_ARGS=("${HDRS[@]}" --mode load --concurrency "$FAILOVER_CONCURRENCY" --count "$FAILOVER_COUNT"
           --timeout "$REQ_TIMEOUT" --samples)
  measure failover direct_healthy 1 180 --url "${URL[direct]}/v1/chat/completions" "${FO_ARGS[@]}"
  EXTRA_MOCK_PIDS=$MOCK_FAIL_PID
  measure failover direct_failing 1 180 --url "http://127.0.0.1:$P_MOCK_FAIL/v1/chat/completions" "${FO_ARGS[@]}"
  if [[ -x $SLUICE && -n $SLUICE_PID ]]; then
    sluice_config "$WORK/sluice-failover.yaml" "$P_SLUICE_FO" "$P_MOCK $P_MOCK_FAIL" ""
    start sluice_failover "$SLUICE" serve -c "$WORK/sluice-failover.yaml"
    if wait_port sluice_failover "$PID" "$P_SLUICE_FO" 30; then
      PROXY_ROOT[sluice_failover]=$PID
      "$LOADGEN" --url "http://127.0.0.1:$P_SLUICE_FO/v1/chat/completions" --model "$MODEL" "${HDRS[@]}" \
        --mode ping --count 5 --timeout "$REQ_TIMEOUT" >/dev/null || true   # warm-up
      measure failover sluice_failover 1 180 --url "http://127.0.0.1:$P_SLUICE_FO/v1/chat/completions" "${FO_ARGS[@]}"
    else
      log "warning: the failover sluice did not start"
    fi
  fi
  EXTRA_MOCK_PIDS=""
fi  # FULL

# ---------------------------------------------------------------- 5. translation
# One Sluice, two channels on the same mock: `oa` (OpenAI wire, gpt-4o-mini: passthrough) and `an`
# (Anthropic wire, claude-sonnet-4-5: OpenAI client -> Anthropic upstream, translated both ways).
# The load generator sends the same OpenAI chat streams to both models in interleaved segments.
LOADAVG_TR_START=$(cut -d' ' -f1-3 /proc/loadavg)
if [[ $RUN_TR == 0 ]]; then
  :  # BENCH_ONLY=logs
elif [[ -x $SLUICE ]]; then
  {
    echo "server:"
    echo "  listen: \"127.0.0.1:$P_SLUICE_TR\""
    echo "  workers: $SLUICE_WORKERS"
    echo "auth:"
    echo "  master_key: \"$MASTER_KEY\""
    echo "store:"
    echo "  url: \"sqlite://$WORK/sluice-$P_SLUICE_TR.db\""
    echo "  request_logs: $SLUICE_REQUEST_LOGS"
    echo "routing:"
    echo "  max_retries: 2"
    echo "channels:"
    echo "  - {name: oa, type: openai, base_url: \"http://127.0.0.1:$P_MOCK/v1\", keys: [\"k\"], models: [\"$MODEL\"]}"
    echo "  - {name: an, type: anthropic, base_url: \"http://127.0.0.1:$P_MOCK\", keys: [\"k\"], models: [\"$TRANSLATE_MODEL\"]}"
  } >"$WORK/sluice-translation.yaml"
  log "5/5 translation: sluice on 127.0.0.1:$P_SLUICE_TR, $MODEL (openai channel) vs $TRANSLATE_MODEL (anthropic channel)"
  start sluice_translation "$SLUICE" serve -c "$WORK/sluice-translation.yaml"
  if wait_port sluice_translation "$PID" "$P_SLUICE_TR" 30; then
    SLUICE_TR_PID=$PID
    PROXY_ROOT[passthrough]=$SLUICE_TR_PID
    PROXY_ROOT[translated]=$SLUICE_TR_PID
    declare -A TR_MODEL=([passthrough]="$MODEL" [translated]="$TRANSLATE_MODEL")
    TR_URL="http://127.0.0.1:$P_SLUICE_TR/v1/chat/completions"
    # warm-up and sanity: both paths answer 200 with a stream that ends in data: [DONE]
    for t in passthrough translated; do
      out=$("$LOADGEN" --url "$TR_URL" --model "${TR_MODEL[$t]}" "${HDRS[@]}" \
            --mode ping --count 5 --timeout "$REQ_TIMEOUT" || true)
      grep -q '"ok":5' <<<"$out" || log "warning: a $t request (model ${TR_MODEL[$t]}) failed: $out"
    done
    tr_seg=$(awk -v a="$TRANSLATION_SECONDS" -v b="$TRANSLATION_SEGMENTS" 'BEGIN { printf "%g", a / b }')
    log "  $CONCURRENCY streams x $CHUNKS chunks, ${TRANSLATION_SECONDS}s per path ($TRANSLATION_SEGMENTS interleaved segments of ${tr_seg}s)"
    for ((r = 0; r < TRANSLATION_SEGMENTS; r++)); do
      if ((r % 2 == 0)); then order=(passthrough translated); else order=(translated passthrough); fi
      for t in "${order[@]}"; do
        MEASURE_MODEL=${TR_MODEL[$t]}
        measure translation "$t" "$((r + 1))" "$(awk -v s="$tr_seg" 'BEGIN { printf "%d", s + 60 }')" \
          --url "$TR_URL" "${HDRS[@]}" --mode load --warmup 10 \
          --concurrency "$CONCURRENCY" --duration "$tr_seg" --timeout "$REQ_TIMEOUT" --samples
      done
    done
    MEASURE_MODEL=""
  else
    log "warning: the translation sluice did not start; scenario 5 is left out"
  fi
else
  log "warning: no sluice binary at $SLUICE; scenario 5 is left out"
fi

# the translation micro benchmarks (Google Benchmark), while the servers above sit idle
if [[ $RUN_TR == 0 ]]; then
  :
elif [[ -x $TRANSLATE_BENCH ]]; then
  log "  micro benchmarks: $TRANSLATE_BENCH (--benchmark_min_time=$TRANSLATE_BENCH_MIN_TIME)"
  if ! SLUICE_SOURCE_DIR=$ROOT "$TRANSLATE_BENCH" --benchmark_min_time="$TRANSLATE_BENCH_MIN_TIME" \
       --benchmark_out="$WORK/translate_bench.json" --benchmark_out_format=json \
       >"$WORK/translate_bench.txt" 2>&1; then
    log "warning: $TRANSLATE_BENCH failed:"
    tail -n 20 "$WORK/translate_bench.txt" >&2 || true
  fi
else
  log "warning: no micro benchmark binary at $TRANSLATE_BENCH; its table is left out"
fi
LOADAVG_TR_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- 6. request logs
# Two Sluices from the same config but for store.request_logs, both started now, loaded in
# turn (never at once) with the throughput scenario's streams.
LOADAVG_LOGS_START=$(cut -d' ' -f1-3 /proc/loadavg)
if [[ $RUN_LOGS == 0 ]]; then
  :
elif [[ -x $SLUICE ]]; then
  SLUICE_REQUEST_LOGS=false sluice_config "$WORK/sluice-logs-off.yaml" "$P_SLUICE_LOGS_OFF" "$P_MOCK" ""
  SLUICE_REQUEST_LOGS=true sluice_config "$WORK/sluice-logs-on.yaml" "$P_SLUICE_LOGS_ON" "$P_MOCK" ""
  LOGS_DB="$WORK/sluice-$P_SLUICE_LOGS_ON.db"
  log "6/6 request logs: sluice with store.request_logs false on 127.0.0.1:$P_SLUICE_LOGS_OFF, true on 127.0.0.1:$P_SLUICE_LOGS_ON ($LOGS_DB)"
  start sluice_logs_off "$SLUICE" serve -c "$WORK/sluice-logs-off.yaml"
  LOGS_OFF_PID=$PID
  start sluice_logs_on "$SLUICE" serve -c "$WORK/sluice-logs-on.yaml"
  LOGS_ON_PID=$PID
  if wait_port sluice_logs_off "$LOGS_OFF_PID" "$P_SLUICE_LOGS_OFF" 30 &&
     wait_port sluice_logs_on "$LOGS_ON_PID" "$P_SLUICE_LOGS_ON" 30; then
    PROXY_ROOT[logs_off]=$LOGS_OFF_PID
    PROXY_ROOT[logs_on]=$LOGS_ON_PID
    declare -A LOGS_URL=([logs_off]="http://127.0.0.1:$P_SLUICE_LOGS_OFF" [logs_on]="http://127.0.0.1:$P_SLUICE_LOGS_ON")
    for t in logs_off logs_on; do
      out=$("$LOADGEN" --url "${LOGS_URL[$t]}/v1/chat/completions" --model "$MODEL" "${HDRS[@]}" \
            --mode ping --count 5 --timeout "$REQ_TIMEOUT" || true)
      grep -q '"ok":5' <<<"$out" || log "warning: a request through $t failed: $out"
    done
    logs_seg=$(awk -v a="$LOGS_SECONDS" -v b="$LOGS_SEGMENTS" 'BEGIN { printf "%g", a / b }')
    log "  $CONCURRENCY streams x $CHUNKS chunks, ${LOGS_SECONDS}s per configuration ($LOGS_SEGMENTS interleaved segments of ${logs_seg}s)"
    MEASURE_SETTLE=0.5  # > the log writer's flush interval (200 ms)
    for ((r = 0; r < LOGS_SEGMENTS; r++)); do
      if ((r % 2 == 0)); then order=(logs_off logs_on); else order=(logs_on logs_off); fi
      for t in "${order[@]}"; do
        measure logs "$t" "$((r + 1))" "$(awk -v s="$logs_seg" 'BEGIN { printf "%d", s + 60 }')" \
          --url "${LOGS_URL[$t]}/v1/chat/completions" "${HDRS[@]}" --mode load --warmup 10 \
          --concurrency "$CONCURRENCY" --duration "$logs_seg" --timeout "$REQ_TIMEOUT" --samples
      done
    done
    MEASURE_SETTLE=""
    # The writer's own account (written / dropped / rejected) and the rows in the file.
    "$PYTHON" - "http://127.0.0.1:$P_SLUICE_LOGS_ON/metrics" "$MASTER_KEY" "$LOGS_DB" >"$WORK/logs_rows.json" <<'PY' ||
import json, sqlite3, sys, urllib.request
url, key, db = sys.argv[1:4]
out = {}
req = urllib.request.Request(url, headers={"Authorization": "Bearer " + key})
for line in urllib.request.urlopen(req, timeout=10).read().decode().splitlines():
    if line.startswith("sluice_request_log_records_total{"):
        out[line.split('"')[1]] = int(float(line.split()[-1]))
out["rows_in_db"] = sqlite3.connect(db).execute("SELECT COUNT(*) FROM request_logs").fetchone()[0]
print(json.dumps(out))
PY
      log "warning: could not read the request-log counters"
  else
    log "warning: a scenario 6 sluice did not start; its end-to-end figures are left out"
  fi
else
  log "warning: no sluice binary at $SLUICE; scenario 6 is left out"
fi

# the log writer alone: sustained rows/s into SQLite and PostgreSQL (median of STORE_BENCH_RUNS)
if [[ $RUN_LOGS == 1 && -x $STORE_BENCH ]]; then
  : >"$WORK/store_bench.jsonl"
  log "  log writer: $STORE_BENCH --rows $STORE_BENCH_ROWS, $STORE_BENCH_RUNS runs each (SQLite$([[ $STORE_BENCH_POSTGRES == 1 ]] && echo ", PostgreSQL"))"
  for ((i = 0; i < STORE_BENCH_RUNS; i++)); do
    TMPDIR=$WORK "$STORE_BENCH" --rows "$STORE_BENCH_ROWS" >>"$WORK/store_bench.jsonl" 2>"$WORK/store_bench.err" ||
      { log "warning: $STORE_BENCH (sqlite) failed:"; tail -n 5 "$WORK/store_bench.err" >&2; }
  done
  if [[ $STORE_BENCH_POSTGRES == 1 ]]; then
    # One throwaway cluster for all runs (each run makes its own schema in it).
    if ! STORE_BENCH=$STORE_BENCH STORE_BENCH_ROWS=$STORE_BENCH_ROWS STORE_BENCH_RUNS=$STORE_BENCH_RUNS \
        "$ROOT/tests/scripts/with-postgres.sh" bash -c '
          for ((i = 0; i < STORE_BENCH_RUNS; i++)); do
            "$STORE_BENCH" --rows "$STORE_BENCH_ROWS" --url "$SLUICE_TEST_POSTGRES_URL" || exit 1
          done' >>"$WORK/store_bench.jsonl" 2>"$WORK/store_bench_pg.err"; then
      log "warning: the PostgreSQL log writer benchmark failed:"
      tail -n 5 "$WORK/store_bench_pg.err" >&2 || true
    fi
  fi
elif [[ $RUN_LOGS == 1 ]]; then
  log "warning: no store benchmark binary at $STORE_BENCH; the log writer figures are left out"
fi
LOADAVG_LOGS_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report
log "writing $BENCH_OUT"
CMD="make bench"
overrides=$(env | grep -E '^(NGINX_WORKERS|SLUICE_WORKERS|MOCK_WORKERS|PING_ROUNDS|PING_WARMUP|PING_COUNT|CONCURRENCY|CHUNKS|THROUGHPUT_SECONDS|THROUGHPUT_SEGMENTS|FAILOVER_COUNT|FAILOVER_CONCURRENCY|FAIL_RATE|FAIL_STATUS|MOCK_CMD|SLUICE|BENCH_ONLY|TRANSLATION_SECONDS|TRANSLATION_SEGMENTS|TRANSLATE_MODEL|TRANSLATE_BENCH_MIN_TIME|LOGS_SECONDS|LOGS_SEGMENTS|STORE_BENCH_ROWS|STORE_BENCH_RUNS|STORE_BENCH_POSTGRES)=' | tr '\n' ' ' || true)
[[ -n $overrides ]] && CMD="$overrides$CMD"
if [[ -z $BENCH_ONLY ]]; then
  BUILD_DIR=$BUILD_DIR SLUICE=$SLUICE BENCH_OUT=$BENCH_OUT SCREEN_COMMAND="$CMD" bash "$ROOT/bench/screen.sh" ||
    log "warning: bench/screen.sh failed; the prompt-injection detector's block is left as it was"
  BUILD_DIR=$BUILD_DIR SLUICE=$SLUICE LOADGEN=$LOADGEN NGINX=$NGINX BENCH_OUT=$BENCH_OUT PROTECT_COMMAND="$CMD" \
    NGINX_WORKERS=$NGINX_WORKERS SLUICE_WORKERS=$SLUICE_WORKERS MOCK_WORKERS=$MOCK_WORKERS MOCK_CMD="$MOCK_CMD" \
    SLUICE_REQUEST_LOGS=$SLUICE_REQUEST_LOGS CONCURRENCY=$CONCURRENCY CHUNKS=$CHUNKS \
    THROUGHPUT_SECONDS=$THROUGHPUT_SECONDS BENCH_NO_BUILD=1 bash "$ROOT/bench/protect.sh" ||
    log "warning: bench/protect.sh failed; the protect-and-save block is left as it was"
  BUILD_DIR=$BUILD_DIR SLUICE=$SLUICE LOADGEN=$LOADGEN NGINX=$NGINX BENCH_OUT=$BENCH_OUT TLS_COMMAND="$CMD" \
    NGINX_WORKERS=$NGINX_WORKERS SLUICE_WORKERS=$SLUICE_WORKERS MOCK_WORKERS=$MOCK_WORKERS MOCK_CMD="$MOCK_CMD" \
    SLUICE_REQUEST_LOGS=$SLUICE_REQUEST_LOGS CHUNKS=$CHUNKS BENCH_NO_BUILD=1 bash "$ROOT/bench/tls.sh" ||
    log "warning: bench/tls.sh failed; the TLS block is left as it was"
fi
nginx_version=n/a nginx_workers_n=0
if [[ -n $NGINX_PID ]]; then
  nginx_version=$("$NGINX" -v 2>&1 | sed 's/^nginx version: nginx\///')
  nginx_workers_n=$(($(proc_tree "$NGINX_PID" | wc -l) - 1))
fi
sluice_version=$([[ -x $SLUICE ]] && "$SLUICE" version 2>/dev/null | head -n 1 || echo "n/a")
report_args=(--work "$WORK" --out "$BENCH_OUT"
  --set "command=$CMD" --set "nginx_version=$nginx_version" --set "sluice_version=$sluice_version"
  --set "nginx_workers=$NGINX_WORKERS" --set "nginx_workers_n=$nginx_workers_n"
  --set "sluice_workers=$SLUICE_WORKERS" --set "sluice_request_logs=$SLUICE_REQUEST_LOGS" --set "ping_rounds=$PING_ROUNDS"
  --set "ping_warmup=$PING_WARMUP" --set "ping_count=$PING_COUNT" --set "concurrency=$CONCURRENCY"
  --set "chunks=$CHUNKS" --set "throughput_seconds=$THROUGHPUT_SECONDS"
  --set "throughput_segments=$THROUGHPUT_SEGMENTS" --set "failover_count=$FAILOVER_COUNT"
  --set "failover_concurrency=$FAILOVER_CONCURRENCY" --set "fail_rate=$FAIL_RATE"
  --set "fail_status=$FAIL_STATUS" --set "mock_cmd=${MOCK[*]##*/} ${MOCK_ARGS[*]}"
  --set "model=$MODEL" --set "loadavg_start=$LOADAVG_START"
  --set "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)"
  --set "bench_only=$BENCH_ONLY" --set "translate_model=$TRANSLATE_MODEL"
  --set "translation_seconds=$TRANSLATION_SECONDS" --set "translation_segments=$TRANSLATION_SEGMENTS"
  --set "translate_bench_min_time=$TRANSLATE_BENCH_MIN_TIME"
  --set "loadavg_tr_start=$LOADAVG_TR_START" --set "loadavg_tr_end=$LOADAVG_TR_END"
  --set "logs_seconds=$LOGS_SECONDS" --set "logs_segments=$LOGS_SEGMENTS"
  --set "store_bench_rows=$STORE_BENCH_ROWS" --set "store_bench_runs=$STORE_BENCH_RUNS"
  --set "loadavg_logs_start=$LOADAVG_LOGS_START" --set "loadavg_logs_end=$LOADAVG_LOGS_END")
[[ ${BENCH_STRICT:-0} == 1 ]] && report_args+=(--strict)
"$PYTHON" "$ROOT/bench/report.py" "${report_args[@]}"
