#!/usr/bin/env bash
# bench/scale.sh — thousands of concurrent streams (`BENCH_ONLY=scale bash bench/run.sh`): Sluice
# against the two floors for a proxy hop, nginx and haproxy, and the mock reached directly, all on
# the same `sluice mock` in one run.
#   1. realistic streams: for each stream count in SCALE_LEVELS (50 and 1000), every request asks
#      the mock for SCALE_TTFB_MS to the first byte and CHUNKS chunks SCALE_CHUNK_MS apart (100 ms,
#      20 chunks 5 ms apart: a short answer of a real model); the targets in SCALE_SEGMENTS
#      interleaved segments (the order rotated per segment), every connection primed with one
#      unrecorded request. Reported: req/s, TTFB / close p50 and p99, the proxy's CPU seconds per
#      10k requests read by the load generator where the measured requests start and end, the
#      proxy's RSS (max of 200 ms samples), and the upstream connections the proxy opened in each
#      segment (the mock's count of accepted connections; a warm pool opens none).
#   2. slow streams: SLOW_STREAMS (5000) at once, each a chunk every SLOW_CHUNK_MS (1 s) for
#      SLOW_CHUNKS chunks, for SLOW_SECONDS per target, one target after another, on processes
#      started afresh for this part (so that memory the realistic part left behind is not counted
#      against it). Reported: streams served and failed, the proxy's RSS before and at most during
#      the streams, memory per stream ((max - before) / streams), CPU seconds and CPU % of a core.
# Figures go into their own marked block of bench/BENCHMARKS.md. The open-file limit is raised to
# the hard limit (each stream holds a client and an upstream socket in the proxy).
#
# Everything it starts listens on 127.0.0.1 and is stopped on exit. About 9 minutes by default.
# Knobs (environment): BUILD_DIR, SLUICE, LOADGEN, NGINX, HAPROXY, BENCH_OUT, BENCH_NO_BUILD=1,
# BENCH_STRICT=1 (exit 1 when a target is missed), BENCH_KEEP_WORK=1, MOCK_CMD, SLUICE_WORKERS
# (0 = one per core), MOCK_WORKERS (1), NGINX_WORKERS (auto), HAPROXY_THREADS (nproc),
# SLUICE_REQUEST_LOGS (false), CHUNKS (20), SCALE_LEVELS ("50 1000"), SCALE_SECONDS (15: per target
# and level), SCALE_SEGMENTS (3), SCALE_TTFB_MS (100), SCALE_CHUNK_MS (5), SLOW_STREAMS (5000, 0:
# skip), SLOW_CHUNKS (20), SLOW_CHUNK_MS (1000), SLOW_SECONDS (30), SCALE_TARGETS ("direct nginx
# haproxy sluice": a subset for a quick look), SCALE_SLUICE_ENV (environment for the Sluice process
# only, e.g. "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" to try an allocator),
# SCALE_BEFORE (another sluice binary, e.g. an earlier commit's: a fifth target "before", with the
# same config, so that one run shows what a change bought).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
HAPROXY_THREADS=${HAPROXY_THREADS:-$(nproc)}
SCALE_LEVELS=${SCALE_LEVELS:-50 1000}
SCALE_SECONDS=${SCALE_SECONDS:-15}
SCALE_SEGMENTS=${SCALE_SEGMENTS:-3}
SCALE_TTFB_MS=${SCALE_TTFB_MS:-100}
SCALE_CHUNK_MS=${SCALE_CHUNK_MS:-5}
SLOW_STREAMS=${SLOW_STREAMS:-5000}
SLOW_CHUNKS=${SLOW_CHUNKS:-20}
SLOW_CHUNK_MS=${SLOW_CHUNK_MS:-1000}
SLOW_SECONDS=${SLOW_SECONDS:-30}
SCALE_TARGETS=${SCALE_TARGETS:-direct nginx haproxy sluice}
SCALE_SLUICE_ENV=${SCALE_SLUICE_ENV:-}
SCALE_BEFORE=${SCALE_BEFORE:-}
if [[ -n $SCALE_BEFORE ]]; then
  [[ -x $SCALE_BEFORE ]] || die "SCALE_BEFORE=$SCALE_BEFORE is not an executable"
  SCALE_TARGETS+=" before"
fi
MODEL=gpt-4o-mini
MASTER_KEY=sk-bench-master

read -r -a LEVELS <<<"$SCALE_LEVELS"
read -r -a WANT <<<"$SCALE_TARGETS"
for t in "${WANT[@]}"; do
  [[ $t =~ ^(direct|nginx|haproxy|sluice|before)$ ]] || die "SCALE_TARGETS: unknown target $t (direct, nginx, haproxy, sluice)"
done
wants() { [[ " ${WANT[*]} " == *" $1 "* ]]; }

bench_build sluice sluice_loadgen
[[ -x $SLUICE ]] || die "sluice binary not found at $SLUICE"
[[ -x $LOADGEN ]] || die "load generator not found at $LOADGEN"
wants nginx && { [[ -x $NGINX ]] || die "nginx not found at $NGINX (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"; }
wants haproxy && { [[ -x $HAPROXY ]] || die "haproxy not found at $HAPROXY (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"; }
MOCK_CMD=${MOCK_CMD:-"$SLUICE mock"}
read -r -a MOCK <<<"$MOCK_CMD"

max_level=$SLOW_STREAMS
for c in "${LEVELS[@]}"; do ((c > max_level)) && max_level=$c; done
raise_nofile "$max_level"

bench_work sluice-bench-scale
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A PROXY_ROOT=() URL=()
: >"$WORK/conns.jsonl"

# ---------------------------------------------------------------- processes
# start_all PHASE: the mock and every wanted proxy, on fresh ports, their files under $WORK/PHASE.
start_all() {
  local phase=$1 dir
  read -r -a PORTS <<<"$(free_ports 5)"
  P_MOCK=${PORTS[0]}
  dir=$WORK/$phase
  mkdir -p "$dir"
  start "mock-$phase" "${MOCK[@]}" --listen "127.0.0.1:$P_MOCK" --workers "$MOCK_WORKERS" --chunks "$CHUNKS"
  MOCK_PID=$PID
  wait_port "mock-$phase" "$MOCK_PID" "$P_MOCK" || die "the mock provider did not start (${MOCK[*]})"
  PROXY_ROOT=() URL=([direct]="http://127.0.0.1:$P_MOCK")
  if wants nginx; then
    mkdir -p "$dir/nginx"
    # bench/nginx_tls.conf.template without ssl; nginx keeps as many idle upstream connections
    # per worker as the largest stream count (Sluice and haproxy keep what the load needs).
    sed -e "s#@PREFIX@#$dir/nginx#g" -e "s#@WORKERS@#$NGINX_WORKERS#g" -e "s#@LISTEN@#127.0.0.1:${PORTS[1]}#g" \
        -e "s#@SSL@##g" -e "/ssl_certificate/d" -e "s#@UPSTREAM@#127.0.0.1:$P_MOCK#g" \
        -e "s#@KEEPALIVE@#$max_level#g" -e "s#@CONNECTIONS@#$CONNECTIONS#g" -e "s#@NOFILE@#$((CONNECTIONS + 64))#g" \
        -e "s#@HEADER_TIMEOUT@#60s#g" "$ROOT/bench/nginx_tls.conf.template" >"$dir/nginx/nginx.conf"
    start "nginx-$phase" "$NGINX" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -e "$dir/nginx/error.log"
    wait_port "nginx-$phase" "$PID" "${PORTS[1]}" || die "nginx did not start (see $dir/nginx/error.log)"
    PROXY_ROOT[nginx]=$PID URL[nginx]="http://127.0.0.1:${PORTS[1]}"
  fi
  if wants haproxy; then
    # maxconn counts client connections (haproxy asks for two descriptors each, and more)
    sed -e "s#@THREADS@#$HAPROXY_THREADS#g" -e "s#@MAXCONN@#$((max_level + 256))#g" -e "s#@LISTEN@#127.0.0.1:${PORTS[2]}#g" \
        -e "s#@UPSTREAM@#127.0.0.1:$P_MOCK#g" "$ROOT/bench/haproxy.cfg.template" >"$dir/haproxy.cfg"
    start "haproxy-$phase" "$HAPROXY" -db -f "$dir/haproxy.cfg"
    wait_port "haproxy-$phase" "$PID" "${PORTS[2]}" || die "haproxy did not start (see $WORK/haproxy-$phase.log)"
    PROXY_ROOT[haproxy]=$PID URL[haproxy]="http://127.0.0.1:${PORTS[2]}"
  fi
  if wants sluice; then
    sluice_config "$dir/sluice.yaml" "${PORTS[3]}" "$P_MOCK" "  header_timeout: 60s"
    # shellcheck disable=SC2086  # SCALE_SLUICE_ENV is a list of NAME=value words
    start "sluice-$phase" env $SCALE_SLUICE_ENV "$SLUICE" serve -c "$dir/sluice.yaml"
    wait_port "sluice-$phase" "$PID" "${PORTS[3]}" 30 || die "sluice did not start"
    # env execs sluice: the pid is Sluice's own
    PROXY_ROOT[sluice]=$PID URL[sluice]="http://127.0.0.1:${PORTS[3]}"
  fi
  if wants before; then
    sluice_config "$dir/before.yaml" "${PORTS[4]}" "$P_MOCK" "  header_timeout: 60s"
    start "before-$phase" "$SCALE_BEFORE" serve -c "$dir/before.yaml"
    wait_port "before-$phase" "$PID" "${PORTS[4]}" 30 || die "the before sluice ($SCALE_BEFORE) did not start"
    PROXY_ROOT[before]=$PID URL[before]="http://127.0.0.1:${PORTS[4]}"
  fi
  TARGETS=()
  for t in direct nginx haproxy before sluice; do
    wants "$t" || continue
    out=$("$LOADGEN" --url "${URL[$t]}/v1/chat/completions" --model "$MODEL" -H "Authorization: Bearer $MASTER_KEY" \
          -H "x-mock-chunks: $CHUNKS" --label "$t" --mode ping --count 5 --timeout 10 || true)
    grep -q '"ok":5' <<<"$out" || die "requests through $t failed: $out"
    TARGETS+=("$t")
  done
}
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
mock_conns() {
  curl -fsS "http://127.0.0.1:$P_MOCK/mock/stats" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["connections_accepted"])'
}
rotate() {
  local n=$1 k=${#TARGETS[@]} i
  for ((i = 0; i < k; i++)); do echo "${TARGETS[$(((i + n) % k))]}"; done
}
# scale_measure SCENARIO TARGET ROUND LIMIT LOADGEN_ARGS...: measure(), with the upstream
# connections the mock accepted meanwhile and the proxy's RSS just before, in conns.jsonl.
scale_measure() {
  local scenario=$1 target=$2 round=$3 c0 c1 rss0=null ppids
  if [[ -n ${PROXY_ROOT[$target]:-} ]]; then
    ppids=$(proc_tree "${PROXY_ROOT[$target]}" | tr '\n' ' ')
    # shellcheck disable=SC2086
    rss0=$(rss_kb $ppids)
  fi
  c0=$(mock_conns)
  measure "$@"
  c1=$(mock_conns)
  # Each mock_conns is a connection of its own that the count it answers already includes: c1's
  # is not the proxy's.
  printf '{"scenario":"%s","target":"%s","round":%s,"upstream_connects":%s,"rss_before_kb":%s}\n' \
    "$scenario" "$target" "$round" "$((c1 - c0 - 1))" "$rss0" >>"$WORK/conns.jsonl"
}
# shellcheck disable=SC2034  # read by measure() in bench/lib.sh
MEASURE_WATCH=1

# ---------------------------------------------------------------- 1. realistic streams
start_all realistic
log "work dir $WORK (open-file limit $(ulimit -n)); targets: ${TARGETS[*]}"
HDRS=(-H "Authorization: Bearer $MASTER_KEY" -H "x-mock-chunks: $CHUNKS" -H "x-mock-ttfb-ms: $SCALE_TTFB_MS"
  -H "x-mock-chunk-interval-ms: $SCALE_CHUNK_MS")
seg=$(awk -v a="$SCALE_SECONDS" -v b="$SCALE_SEGMENTS" 'BEGIN { printf "%g", a / b }')
for c in "${LEVELS[@]}"; do
  log "scale 1: $c streams (${SCALE_TTFB_MS} ms to the first byte, $CHUNKS chunks ${SCALE_CHUNK_MS} ms apart), ${SCALE_SECONDS}s per target in $SCALE_SEGMENTS segments: ${TARGETS[*]}"
  for ((r = 0; r < SCALE_SEGMENTS; r++)); do
    for t in $(rotate "$r"); do
      scale_measure "realistic_$c" "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 120 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" --mode load --prime --concurrency "$c" \
        --duration "$seg" --timeout 30 --samples
    done
  done
done

# ---------------------------------------------------------------- 2. slow streams
if ((SLOW_STREAMS > 0)); then
  stop_all
  start_all slow
  SLOW_HDRS=(-H "Authorization: Bearer $MASTER_KEY" -H "x-mock-chunks: $SLOW_CHUNKS"
    -H "x-mock-chunk-interval-ms: $SLOW_CHUNK_MS")
  stream_s=$(((SLOW_CHUNKS * SLOW_CHUNK_MS + 999) / 1000))
  log "scale 2: $SLOW_STREAMS slow streams ($SLOW_CHUNKS chunks ${SLOW_CHUNK_MS} ms apart), ${SLOW_SECONDS}s per target: ${TARGETS[*]}"
  for t in "${TARGETS[@]}"; do
    scale_measure "slow_$SLOW_STREAMS" "$t" 1 "$((SLOW_SECONDS + stream_s + 120))" \
      --url "${URL[$t]}/v1/chat/completions" "${SLOW_HDRS[@]}" --mode load --concurrency "$SLOW_STREAMS" \
      --duration "$SLOW_SECONDS" --timeout "$((stream_s + 60))" --samples
  done
fi

# ---------------------------------------------------------------- report
LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg)
ours=$(env | cut -d= -f1 | grep -E '^(SCALE_BEFORE|SCALE_LEVELS|SCALE_SECONDS|SCALE_SEGMENTS|SCALE_TTFB_MS|SCALE_CHUNK_MS|SLOW_STREAMS|SLOW_CHUNKS|SLOW_CHUNK_MS|SLOW_SECONDS|SCALE_TARGETS|SCALE_SLUICE_ENV|SLUICE_WORKERS|MOCK_WORKERS|NGINX_WORKERS|HAPROXY_THREADS|CHUNKS|SLUICE)$' || true)
cmd=""
for n in $ours; do
  if [[ ${!n} == *" "* ]]; then cmd+="$n=\"${!n}\" "; else cmd+="$n=${!n} "; fi
done
cmd+="BENCH_ONLY=scale bash bench/run.sh"
"$PYTHON" "$ROOT/bench/scale_report.py" --work "$WORK" --out "$BENCH_OUT" --report "$ROOT/bench/report.py" \
  --set "command=$cmd" --set "levels=${LEVELS[*]}" --set "seconds=$SCALE_SECONDS" --set "segments=$SCALE_SEGMENTS" \
  --set "ttfb_ms=$SCALE_TTFB_MS" --set "chunk_ms=$SCALE_CHUNK_MS" --set "chunks=$CHUNKS" \
  --set "slow_streams=$SLOW_STREAMS" --set "slow_chunks=$SLOW_CHUNKS" --set "slow_chunk_ms=$SLOW_CHUNK_MS" \
  --set "slow_seconds=$SLOW_SECONDS" --set "loadavg_start=$LOADAVG_START" --set "loadavg_end=$LOADAVG_END" \
  --set "nginx_version=$("$NGINX" -v 2>&1 | sed 's/^nginx version: nginx\///')" \
  --set "haproxy_version=$("$HAPROXY" -v 2>/dev/null | head -n 1 | awk '{print $3}')" \
  --set "nginx_workers=$NGINX_WORKERS" --set "haproxy_threads=$HAPROXY_THREADS" --set "sluice_workers=$SLUICE_WORKERS" \
  --set "mock_workers=$MOCK_WORKERS" --set "nofile=$(ulimit -n)" --set "sluice_env=$SCALE_SLUICE_ENV" \
  --set "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" --set "before=$SCALE_BEFORE" \
  $([[ ${BENCH_STRICT:-0} == 1 ]] && echo --strict)
