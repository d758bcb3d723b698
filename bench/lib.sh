# bench/lib.sh: what the benchmark scripts (bench/run.sh, bench/protect.sh, bench/tls.sh) share:
# the common settings (build paths, worker counts, chunks), bench_build, logging, a work directory
# whose processes are stopped on exit, starting processes and waiting for their ports, free
# loopback ports, /proc sampling, and measure() (one load-generator run with the CPU and memory
# deltas of the proxy and the mock, as a record in $WORK/runs that bench/report.py reads).
# Sourced, not run, right after the script sets ROOT; expects (for measure) MODEL, MOCK_PID and
# the PROXY_ROOT associative array to be set by the script.

# The settings every load script shares (the environment overrides each); ROOT is the caller's.
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
LOADGEN=${LOADGEN:-$BUILD_DIR/sluice_loadgen}
NGINX=${NGINX:-/usr/sbin/nginx}
BENCH_OUT=${BENCH_OUT:-$ROOT/bench/BENCHMARKS.md}
if [[ -z ${PYTHON:-} ]]; then
  if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
SLUICE_WORKERS=${SLUICE_WORKERS:-0}
MOCK_WORKERS=${MOCK_WORKERS:-1}
NGINX_WORKERS=${NGINX_WORKERS:-auto}
# Sluice's per-request database rows are off by default here, as nginx runs with access_log
# off: the proxy hop is compared like for like (set true to include them).
SLUICE_REQUEST_LOGS=${SLUICE_REQUEST_LOGS:-false}
CHUNKS=${CHUNKS:-20}
# The protect-on configuration that bench/ab.sh and bench/instructions.sh compare binaries on:
# redaction with the built-in rules and screening at block (their requests send
# bench/data/protect_chat.json with x-mock-echo, so two values are sealed and restored).
PROTECT_ON_LINES=("redaction:" "  enabled: true" "  key: \"bench-redaction-key-0123456789abcdef\"" "screening:"
  "  action: block")

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# bench_build TARGET...: configures $BUILD_DIR when it has no build yet and builds the targets,
# or does nothing with BENCH_NO_BUILD=1. A failure ends the script (with BENCH_BUILD_HINT, if set).
bench_build() {
  [[ ${BENCH_NO_BUILD:-0} == 1 ]] && return 0
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    local gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$ROOT" -B "$BUILD_DIR" "${gen[@]}" >&2 || die "cmake configure failed"
  fi
  log "building $*"
  cmake --build "$BUILD_DIR" --target "$@" -j"$(nproc)" >&2 || die "building $* failed${BENCH_BUILD_HINT:+ ($BENCH_BUILD_HINT)}"
}

# sluice_config FILE PORT "UPSTREAM_PORT..." SERVER_LINES [SECTION_LINES...]: a Sluice config
# listening on PORT with one openai channel per upstream port (mock1, mock2, ..., equal priority),
# the database a fresh file per port and store.request_logs $SLUICE_REQUEST_LOGS (a caller may set
# it for one call). SERVER_LINES (newline-separated, may be empty) are added under server:;
# SECTION_LINES follow the channels at the top level.
sluice_config() {
  local file=$1 port=$2 ups=$3 server_lines=$4 i=0 up line
  shift 4
  {
    echo "server:"
    echo "  listen: \"127.0.0.1:$port\""
    echo "  workers: $SLUICE_WORKERS"
    [[ -n $server_lines ]] && printf '%s\n' "$server_lines"
    echo "auth:"
    echo "  master_key: \"$MASTER_KEY\""
    echo "store:"
    echo "  url: \"sqlite://$WORK/sluice-$port.db\""
    echo "  request_logs: $SLUICE_REQUEST_LOGS"
    echo "routing:"
    echo "  max_retries: 2"
    echo "channels:"
    for up in $ups; do
      i=$((i + 1))
      echo "  - name: mock$i"
      echo "    type: openai"
      echo "    base_url: \"http://127.0.0.1:$up/v1\""
      echo "    keys: [\"k1\"]"
      echo "    models: [\"*\"]"
      echo "    priority: 1"
      echo "    weight: 1"
    done
    for line in "$@"; do echo "$line"; done
  } >"$file"
}

# bench_work PREFIX: WORK=a new /tmp/PREFIX.XXXXXX with runs/ in it; everything start()ed is
# stopped on exit, and WORK is removed unless BENCH_KEEP_WORK=1 or the script failed.
bench_work() {
  WORK=$(mktemp -d "/tmp/$1.XXXXXX")
  mkdir -p "$WORK/runs"
  PIDS=()
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM
  [[ -n ${LOADGEN_PID:-} ]] && kill -TERM "$LOADGEN_PID" 2>/dev/null
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 40); do
    local alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.05
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [[ ${BENCH_KEEP_WORK:-0} == 1 || $rc != 0 ]]; then
    log "work dir kept: $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
# start NAME CMD...: starts CMD in the background, output to $WORK/NAME.log; sets PID
start() {
  local name=$1; shift
  "$@" >"$WORK/$name.log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
}

# wait_port NAME PID PORT [SECONDS]
wait_port() {
  local name=$1 pid=$2 port=$3 secs=${4:-20} i
  for ((i = 0; i < secs * 20; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "$name exited before listening on $port; its log:"
      tail -n 20 "$WORK/$name.log" >&2 || true
      return 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  log "$name did not listen on $port within ${secs}s; its log:"
  tail -n 20 "$WORK/$name.log" >&2 || true
  return 1
}

# free_ports N: N distinct free loopback ports, space-separated
free_ports() {
  "$PYTHON" - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# raise_nofile STREAMS: the open-file limit for STREAMS concurrent streams (each holds a client and
# an upstream connection in a proxy), inherited by every process started after it: the hard limit,
# or 65536 where there is none. Sets CONNECTIONS (2 * STREAMS + 256) for the proxies' configs.
raise_nofile() {
  local streams=$1 hard
  CONNECTIONS=$((2 * streams + 256))
  hard=$(ulimit -Hn)
  if [[ $hard == unlimited ]]; then
    ulimit -n $((CONNECTIONS < 65536 ? 65536 : CONNECTIONS))
  else
    ulimit -n "$hard"
    ((hard >= CONNECTIONS)) || log "warning: the hard open-file limit ($hard) is below $CONNECTIONS; $streams streams may fail"
  fi
}

CLK_TCK=$(getconf CLK_TCK)
# tree PID: the pid and its direct children (nginx master + workers)
proc_tree() { echo "$1"; ps --ppid "$1" -o pid= 2>/dev/null | tr -d ' ' || true; }
# cpu_split PID...: "user system" seconds of the given processes (all threads)
cpu_split() {
  local u=0 k=0 p a b
  for p in "$@"; do
    [[ -r /proc/$p/stat ]] || continue
    read -r a b <<<"$(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12, $13}')" || continue
    u=$((u + ${a:-0})) k=$((k + ${b:-0}))
  done
  awk -v u="$u" -v k="$k" -v hz="$CLK_TCK" 'BEGIN { printf "%.3f %.3f", u / hz, k / hz }'
}
# cpu_s PID...: utime+stime of the given processes (all threads), in seconds
cpu_s() { cpu_split "$@" | awk '{ printf "%.3f", $1 + $2 }'; }
# status_kb FIELD PID...: a /proc/PID/status field in kB, summed over the processes
status_kb() {
  local field=$1 t=0 p v
  shift
  for p in "$@"; do
    v=$(awk -v f="$field:" '$1 == f {print $2}' "/proc/$p/status" 2>/dev/null) || v=0
    t=$((t + ${v:-0}))
  done
  echo "$t"
}
hwm_kb() { status_kb VmHWM "$@"; }  # peak resident set
rss_kb() { status_kb VmRSS "$@"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
# machine_cpu_s: CPU seconds the whole machine has spent busy (all cores, all processes,
# the kernel's own threads included), from /proc/stat
machine_cpu_s() {
  awk -v hz="$CLK_TCK" '/^cpu / { printf "%.3f", ($2 + $3 + $4 + $7 + $8 + $9) / hz; exit }' /proc/stat
}

# measure SCENARIO TARGET ROUND TIMEOUT LOADGEN_ARGS...: one loadgen run with
# CPU/RSS deltas of the proxy and the mock(s); appends a record to $WORK/runs.
# The request's model is $MEASURE_MODEL when set, else $MODEL. With $MEASURE_SETTLE (seconds)
# the CPU is read that long after the load ends (work the proxy finishes afterwards, such as
# the last request-log batch, then counts for the segment that caused it). With MEASURE_WATCH=1
# the load generator reads the CPU itself where its measured requests start and end (after its
# warm-up and --prime), and samples the proxy's RSS meanwhile (proxy_rss_max_kb): then wall_s,
# machine_cpu_s, proxy_cpu_s and mock_cpu_s are its figures.
SEQ=0
measure() {
  local scenario=$1 target=$2 round=$3 limit=$4; shift 4
  local ppids="" mpids="$MOCK_PID ${EXTRA_MOCK_PIDS:-}"
  local m0 p1 m1 w0 w1 c0 c1 out watch=() wall mcpu pcpu kcpu rmax=null s0 s1 us=null ss=null
  [[ -n ${PROXY_ROOT[$target]:-} ]] && ppids=$(proc_tree "${PROXY_ROOT[$target]}" | tr '\n' ' ')
  if [[ ${MEASURE_WATCH:-0} == 1 ]]; then
    watch=(--watch-mock "$mpids")
    [[ -n $ppids ]] && watch+=(--watch-proxy "$ppids")
  fi
  # shellcheck disable=SC2086
  s0=$(cpu_split $ppids); m0=$(cpu_s $mpids); w0=$(date +%s.%N); c0=$(machine_cpu_s)
  # in the background + wait, so that a signal to this script is handled at once
  timeout "$limit" "$LOADGEN" --label "$scenario/$target" --model "${MEASURE_MODEL:-$MODEL}" "${watch[@]}" "$@" >"$WORK/loadgen.out" &
  LOADGEN_PID=$!
  wait "$LOADGEN_PID" || true
  LOADGEN_PID=""
  [[ -n ${MEASURE_SETTLE:-} ]] && sleep "$MEASURE_SETTLE"
  out=$(<"$WORK/loadgen.out")
  # shellcheck disable=SC2086
  s1=$(cpu_split $ppids); m1=$(cpu_s $mpids); w1=$(date +%s.%N); c1=$(machine_cpu_s)
  # The proxy's CPU from /proc around the run: user and system apart (for where it goes), and their sum.
  [[ -n $ppids ]] && read -r us ss <<<"$(awk -v a="$s0" -v b="$s1" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.3f %.3f", y[1] - x[1], y[2] - x[2] }')"
  [[ -n $out ]] || out=null
  if [[ -n ${PROXY_ROOT[$target]:-} ]] && ! kill -0 "${PROXY_ROOT[$target]}" 2>/dev/null; then
    log "warning: $target exited during $scenario (see $WORK/*.log)"
  fi
  wall=$(sub "$w1" "$w0") mcpu=$(sub "$c1" "$c0") kcpu=$(sub "$m1" "$m0") pcpu=null
  [[ -n $ppids ]] && pcpu=$(awk -v u="$us" -v k="$ss" 'BEGIN { printf "%.3f", u + k }')
  if ((${#watch[@]} > 0)) && [[ $out != null ]]; then
    local w
    w=$("$PYTHON" -c 'import json, sys
w = json.load(sys.stdin).get("watch")
if w: print(w["wall_s"], w["machine_cpu_s"], w["mock_cpu_s"], w["proxy_cpu_s"], w["proxy_rss_max_kb"])' <<<"$out" 2>/dev/null || true)
    if [[ -n $w ]]; then
      read -r wall mcpu kcpu p1 m1 <<<"$w"
      [[ -n $ppids ]] && pcpu=$p1 rmax=$m1
    fi
  fi
  SEQ=$((SEQ + 1))
  # shellcheck disable=SC2086
  printf '{"scenario":"%s","target":"%s","round":%s,"wall_s":%s,"machine_cpu_s":%s,"proxy_cpu_s":%s,"mock_cpu_s":%s,"proxy_hwm_kb":%s,"proxy_rss_kb":%s,"proxy_rss_max_kb":%s,"proxy_user_s":%s,"proxy_sys_s":%s,"result":%s}\n' \
    "$scenario" "$target" "$round" "$wall" "$mcpu" "$pcpu" "$kcpu" \
    "$([[ -n $ppids ]] && hwm_kb $ppids || echo null)" "$([[ -n $ppids ]] && rss_kb $ppids || echo null)" \
    "$rmax" "$us" "$ss" "$out" >"$WORK/runs/$(printf %03d $SEQ).json"
  if [[ $out == null ]]; then
    log "  $scenario/$target: the load generator produced no output"
  else
    "$PYTHON" -c 'import json,sys; r=json.load(sys.stdin); print("  %-32s ok %5d/%-5d  %8.1f req/s  ttfb p50 %.3f ms  close p50 %.3f ms" % (r["label"], r["ok"], r["requests"], r["rps"], r["ttfb_ms"]["p50"], r["close_ms"]["p50"]))' <<<"$out" >&2 || true
  fi
}

# Interleaved A/B loads (bench/ab.sh, bench/tracing.sh). ab_load NAME PORT [LOADGEN_ARGS...]: one
# segment of AB_SECONDS (SECONDS_PER) with CONCURRENCY streams of CHUNKS chunks on the gateway
# PIDS_OF[NAME] at PORT, the proxy's CPU read by the load generator; its requests, failures, wall
# and CPU seconds are added to OK[NAME], FAILED[NAME], WALL[NAME] and CPU[NAME] (declare -A them
# and ab_reset each name first). The requests carry the master key, or AB_KEY when it is set.
ab_reset() {
  local name
  for name in "$@"; do OK[$name]=0 FAILED[$name]=0 WALL[$name]=0 CPU[$name]=0; done
}
ab_load() {
  local name=$1 port=$2 ok failed wall cpu
  shift 2
  read -r ok failed wall cpu <<<"$("$LOADGEN" --url "http://127.0.0.1:$port/v1/chat/completions" \
    -H "Authorization: Bearer ${AB_KEY:-$MASTER_KEY}" -H "x-mock-chunks: $CHUNKS" --concurrency "$CONCURRENCY" \
    --duration "$SECONDS_PER" --prime --watch-proxy "${PIDS_OF[$name]}" --watch-mock "$MOCK_PID" "$@" |
    "$PYTHON" -c 'import json,sys; r=json.load(sys.stdin); w=r["watch"]; print(r["ok"], r.get("failed", 0), w["wall_s"], w["proxy_cpu_s"])')"
  OK[$name]=$((OK[$name] + ok))
  FAILED[$name]=$((FAILED[$name] + failed))
  CPU[$name]=$(awk -v a="${CPU[$name]}" -v b="$cpu" 'BEGIN { print a + b }')
  WALL[$name]=$(awk -v a="${WALL[$name]}" -v b="$wall" 'BEGIN { print a + b }')
}
