#!/usr/bin/env bash
# bench/tls.sh — streaming over TLS (`BENCH_ONLY=tls bash bench/run.sh`, and a step of a full
# `make bench`): Sluice terminating TLS against nginx terminating TLS with the same certificate,
# both proxying to the same `sluice mock`, with plain-HTTP nginx and plain Sluice in the same run
# so that what TLS itself costs shows:
#   1. kept-alive streams: for each concurrency in TLS_CONCURRENCY (50 and 2000), the four
#      targets nginx, sluice (plain HTTP), nginx_tls, sluice_tls (TLS 1.3) in TLS_SEGMENTS
#      interleaved segments (the order rotated per segment). Every connection first does one
#      unrecorded request (--prime: connect, handshake, the proxy's upstream connection), then the
#      measured streams run on the kept-alive connections. Reported: req/s, TTFB / close p50 and
#      p99, the proxy's CPU seconds per 10k requests (nginx: master + workers) read by the load
#      generator where the measured requests start and end, the proxy's RSS (max of 200 ms
#      samples during the segments, and VmHWM at the end); ratios Sluice / nginx on the same
#      transport, and TLS / plain for the same proxy.
#   2. a new connection per request (Connection: close; TLS: a full handshake, nothing resumed)
#      at TLS_CONNECT_CONCURRENCY, the same four targets: what connection set-up costs.
# The certificate is made for the run by openssl under the work dir: a throwaway CA and a server
# certificate for localhost / 127.0.0.1 (TLS_KEY: ec = ECDSA P-256, rsa = RSA 2048); the load
# generator verifies against that CA. Figures go into their own marked block of
# bench/BENCHMARKS.md (via bench/report.py). Thousands of connections: the open-file limit is
# raised to the hard limit (the proxies hold a client and an upstream connection per stream).
#
# Everything it starts listens on 127.0.0.1 and is stopped on exit. About 4 minutes by default.
# Knobs (environment): BUILD_DIR, SLUICE, LOADGEN, NGINX, BENCH_OUT, BENCH_NO_BUILD=1,
# BENCH_STRICT=1 (exit 1 when a target is missed), BENCH_KEEP_WORK=1, MOCK_CMD, SLUICE_WORKERS
# (0 = one per core), MOCK_WORKERS (1), NGINX_WORKERS (auto), SLUICE_REQUEST_LOGS (false, as in
# bench/run.sh), CHUNKS (20), TLS_CONCURRENCY ("50 2000"), TLS_SECONDS (15: per target and
# concurrency), TLS_SEGMENTS (3), TLS_CONNECT_CONCURRENCY (50), TLS_CONNECT_SECONDS (9: per target),
# TLS_CONNECT_SEGMENTS (3), TLS_KEY (ec), TLS_NGINX_KEEPALIVE (256: nginx's idle upstream
# connections per worker, as many as Sluice keeps), TLS_HEADER_TIMEOUT (60s: Sluice's
# server.header_timeout and nginx's client_header_timeout, both covering the handshake),
# TLS_TARGETS ("nginx sluice nginx_tls sluice_tls": a subset for a quick look).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"  # the shared settings, log, die, bench_build, bench_work, start, measure...
TLS_CONCURRENCY=${TLS_CONCURRENCY:-50 2000}
TLS_SECONDS=${TLS_SECONDS:-15}
TLS_SEGMENTS=${TLS_SEGMENTS:-3}
TLS_CONNECT_CONCURRENCY=${TLS_CONNECT_CONCURRENCY:-50}
TLS_CONNECT_SECONDS=${TLS_CONNECT_SECONDS:-9}
TLS_CONNECT_SEGMENTS=${TLS_CONNECT_SEGMENTS:-3}
TLS_KEY=${TLS_KEY:-ec}
TLS_NGINX_KEEPALIVE=${TLS_NGINX_KEEPALIVE:-256}
TLS_TARGETS=${TLS_TARGETS:-nginx sluice nginx_tls sluice_tls}
# Sluice's server.header_timeout covers the TLS handshake; nginx's client_header_timeout does
# too. Both get nginx's default: with Sluice's (10 s), a burst of 2000 handshakes on a busy
# 2-core machine had Sluice close connections still waiting for theirs.
TLS_HEADER_TIMEOUT=${TLS_HEADER_TIMEOUT:-60s}
MODEL=gpt-4o-mini
MASTER_KEY=sk-bench-master
REQ_TIMEOUT=10   # seconds per request in the load generator


read -r -a LEVELS <<<"$TLS_CONCURRENCY"
read -r -a WANT <<<"$TLS_TARGETS"
((${#LEVELS[@]} > 0)) || die "TLS_CONCURRENCY is empty"
for t in "${WANT[@]}"; do
  [[ $t =~ ^(nginx|sluice|nginx_tls|sluice_tls)$ ]] || die "TLS_TARGETS: unknown target $t (nginx, sluice, nginx_tls, sluice_tls)"
done
case $TLS_KEY in
  ec) KEY_ARGS=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1) KEY_DESC="ECDSA P-256" ;;
  rsa) KEY_ARGS=(-newkey rsa:2048) KEY_DESC="RSA 2048" ;;
  *) die "TLS_KEY=$TLS_KEY: expected ec or rsa" ;;
esac

# ---------------------------------------------------------------- build
bench_build sluice sluice_loadgen
[[ -x $SLUICE ]] || die "sluice binary not found at $SLUICE"
[[ -x $LOADGEN ]] || die "load generator not found at $LOADGEN"
[[ -x $NGINX ]] || die "nginx not found at $NGINX (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"
"$NGINX" -V 2>&1 | grep -q -- --with-http_ssl_module || die "$NGINX was built without the SSL module"
command -v openssl >/dev/null || die "openssl (the command) is needed to make the certificate"
MOCK_CMD=${MOCK_CMD:-"$SLUICE mock"}
read -r -a MOCK <<<"$MOCK_CMD"

# Every stream holds a client and an upstream connection in the proxy; the processes started
# below inherit this limit.
max_level=0
for c in "${LEVELS[@]}" "$TLS_CONNECT_CONCURRENCY"; do ((c > max_level)) && max_level=$c; done
raise_nofile "$max_level"

# ---------------------------------------------------------------- processes
bench_work sluice-bench-tls

read -r -a PORTS <<<"$(free_ports 5)"
P_MOCK=${PORTS[0]} P_NGINX=${PORTS[1]} P_NGINX_TLS=${PORTS[2]} P_SLUICE=${PORTS[3]} P_SLUICE_TLS=${PORTS[4]}
declare -A PROXY_ROOT=()

# ---------------------------------------------------------------- the certificate
# A CA made for this run and a server certificate it signs, for the name and the address the
# load generator connects to; both proxies serve the same chain and key.
CERTS=$WORK/certs
mkdir -p "$CERTS"
{
  openssl req -x509 "${KEY_ARGS[@]}" -nodes -days 2 -subj "/CN=sluice bench CA" \
    -keyout "$CERTS/ca.key" -out "$CERTS/ca.pem" &&
  openssl req "${KEY_ARGS[@]}" -nodes -subj "/CN=localhost" -keyout "$CERTS/server.key" -out "$CERTS/server.csr" &&
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' >"$CERTS/ext.cnf" &&
  openssl x509 -req -in "$CERTS/server.csr" -CA "$CERTS/ca.pem" -CAkey "$CERTS/ca.key" -CAcreateserial \
    -days 2 -extfile "$CERTS/ext.cnf" -out "$CERTS/server.pem"
} >"$WORK/openssl.log" 2>&1 || { cat "$WORK/openssl.log" >&2; die "making the certificate failed"; }
log "certificate: $KEY_DESC, CN=localhost, SAN DNS:localhost IP:127.0.0.1, signed by a throwaway CA ($CERTS)"

# ---------------------------------------------------------------- start the peers
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
MOCK_ARGS=(--workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms 0 --chunk-interval-ms 0)
log "work dir $WORK (open-file limit $(ulimit -n))"
log "starting mock on 127.0.0.1:$P_MOCK"
start mock "${MOCK[@]}" --listen "127.0.0.1:$P_MOCK" "${MOCK_ARGS[@]}"
MOCK_PID=$PID
wait_port mock "$MOCK_PID" "$P_MOCK" || die "the mock provider did not start (${MOCK[*]})"

wants() { [[ " ${WANT[*]} " == *" $1 "* ]]; }

# start_nginx NAME PORT SSL: an nginx from bench/nginx_tls.conf.template ("ssl" or "")
start_nginx() {
  local name=$1 port=$2 ssl=$3 dir=$WORK/$1
  mkdir -p "$dir"
  sed -e "s#@PREFIX@#$dir#g" -e "s#@WORKERS@#$NGINX_WORKERS#g" -e "s#@LISTEN@#127.0.0.1:$port#g" \
      -e "s#@SSL@#$ssl#g" -e "s#@CERT@#$CERTS/server.pem#g" -e "s#@KEY@#$CERTS/server.key#g" \
      -e "s#@UPSTREAM@#127.0.0.1:$P_MOCK#g" -e "s#@KEEPALIVE@#$TLS_NGINX_KEEPALIVE#g" \
      -e "s#@CONNECTIONS@#$CONNECTIONS#g" -e "s#@NOFILE@#$((CONNECTIONS + 64))#g" \
      -e "s#@HEADER_TIMEOUT@#$TLS_HEADER_TIMEOUT#g" \
      "$ROOT/bench/nginx_tls.conf.template" >"$dir/nginx.conf"
  log "starting $name on 127.0.0.1:$port (worker_processes $NGINX_WORKERS${ssl:+, listen ssl})"
  start "$name" "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  wait_port "$name" "$PID" "$port" || die "$name did not start (see $dir/error.log)"
  PROXY_ROOT[$name]=$PID
}

wants nginx && start_nginx nginx "$P_NGINX" ""
wants nginx_tls && start_nginx nginx_tls "$P_NGINX_TLS" ssl
if wants sluice; then
  sluice_config "$WORK/sluice.yaml" "$P_SLUICE" "$P_MOCK" "  header_timeout: $TLS_HEADER_TIMEOUT"
  log "starting sluice on 127.0.0.1:$P_SLUICE (workers $SLUICE_WORKERS)"
  start sluice "$SLUICE" serve -c "$WORK/sluice.yaml"
  wait_port sluice "$PID" "$P_SLUICE" 30 || die "sluice did not start"
  PROXY_ROOT[sluice]=$PID
fi
if wants sluice_tls; then
  sluice_config "$WORK/sluice-tls.yaml" "$P_SLUICE_TLS" "$P_MOCK" "  header_timeout: $TLS_HEADER_TIMEOUT
  tls:
    cert: \"$CERTS/server.pem\"
    key: \"$CERTS/server.key\""
  log "starting sluice_tls on 127.0.0.1:$P_SLUICE_TLS (workers $SLUICE_WORKERS, server.tls)"
  start sluice_tls "$SLUICE" serve -c "$WORK/sluice-tls.yaml"
  wait_port sluice_tls "$PID" "$P_SLUICE_TLS" 30 || die "sluice_tls did not start"
  PROXY_ROOT[sluice_tls]=$PID
fi

declare -A URL=([nginx]="http://127.0.0.1:$P_NGINX" [sluice]="http://127.0.0.1:$P_SLUICE"
                [nginx_tls]="https://127.0.0.1:$P_NGINX_TLS" [sluice_tls]="https://127.0.0.1:$P_SLUICE_TLS")
HDRS=(-H "Authorization: Bearer $MASTER_KEY" -H "x-mock-chunks: $CHUNKS")
# TLS_ARGS[TARGET]: the load generator's TLS options in the sanity requests: verify against the
# run's CA (the work dir's path has no spaces). The measured runs then skip verification
# (RUN_TLS_ARGS): it is the client's own cost, once per handshake, on the cores the proxies need.
declare -A TLS_ARGS=([nginx]="" [sluice]="" [nginx_tls]="--cacert $CERTS/ca.pem" [sluice_tls]="--cacert $CERTS/ca.pem")
declare -A RUN_TLS_ARGS=([nginx]="" [sluice]="" [nginx_tls]="--insecure" [sluice_tls]="--insecure")

# Sanity: five streams through every target, each ending in data: [DONE]; the TLS ones verify
# the certificate, and both TLS proxies must negotiate the same version, cipher and group (else
# the comparison would be between two different pieces of cryptography).
: >"$WORK/tls_sanity.jsonl"
TARGETS=()
for t in nginx sluice nginx_tls sluice_tls; do
  [[ -n ${PROXY_ROOT[$t]:-} ]] || continue
  # shellcheck disable=SC2086
  out=$("$LOADGEN" --url "${URL[$t]}/v1/chat/completions" --model "$MODEL" "${HDRS[@]}" ${TLS_ARGS[$t]} \
        --label "$t" --mode ping --count 5 --timeout "$REQ_TIMEOUT" || true)
  grep -q '"ok":5' <<<"$out" || die "requests through $t failed: $out"
  echo "$out" >>"$WORK/tls_sanity.jsonl"
  TARGETS+=("$t")
done
((${#TARGETS[@]} > 0)) || die "no target started"
"$PYTHON" - "$WORK/tls_sanity.jsonl" <<'PY' >&2 || log "warning: the TLS proxies negotiated different parameters (see above)"
import json, sys
tls = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "tls" in r:
        tls[r["label"]] = (r["tls"]["version"], r["tls"]["cipher"], r["tls"]["group"])
for k, v in tls.items():
    print(f"[bench] {k}: {' '.join(v)}")
sys.exit(0 if len(set(tls.values())) <= 1 else 1)
PY

# rotate N: the targets rotated by N (fair interleaving across segments)
rotate() {
  local n=$1 k=${#TARGETS[@]} i
  for ((i = 0; i < k; i++)); do echo "${TARGETS[$(((i + n) % k))]}"; done
}

# The load generator reads the proxy's and the mock's CPU itself, over the measured requests
# only (priming 2000 handshakes would otherwise count against the first segment's requests).
# shellcheck disable=SC2034  # read by measure() in bench/lib.sh
MEASURE_WATCH=1

# ---------------------------------------------------------------- 1. kept-alive streams
seg=$(awk -v a="$TLS_SECONDS" -v b="$TLS_SEGMENTS" 'BEGIN { printf "%g", a / b }')
for c in "${LEVELS[@]}"; do
  log "tls 1: $c kept-alive streams x $CHUNKS chunks, ${TLS_SECONDS}s per target ($TLS_SEGMENTS interleaved segments of ${seg}s): ${TARGETS[*]}"
  for ((r = 0; r < TLS_SEGMENTS; r++)); do
    for t in $(rotate "$r"); do
      # shellcheck disable=SC2086
      measure "tls_keepalive_$c" "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 120 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" ${RUN_TLS_ARGS[$t]} --mode load --warmup 10 --prime \
        --concurrency "$c" --duration "$seg" --timeout "$REQ_TIMEOUT" --samples
    done
  done
done

# ---------------------------------------------------------------- 2. a connection per request
cseg=$(awk -v a="$TLS_CONNECT_SECONDS" -v b="$TLS_CONNECT_SEGMENTS" 'BEGIN { printf "%g", a / b }')
if ((TLS_CONNECT_SEGMENTS > 0)); then
  log "tls 2: a new connection per request, $TLS_CONNECT_CONCURRENCY at once, ${TLS_CONNECT_SECONDS}s per target ($TLS_CONNECT_SEGMENTS interleaved segments of ${cseg}s)"
  for ((r = 0; r < TLS_CONNECT_SEGMENTS; r++)); do
    for t in $(rotate "$r"); do
      # shellcheck disable=SC2086
      measure "tls_connect_$TLS_CONNECT_CONCURRENCY" "$t" "$((r + 1))" "$(awk -v s="$cseg" 'BEGIN { printf "%d", s + 120 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" ${RUN_TLS_ARGS[$t]} --mode load --conn-per-request \
        --concurrency "$TLS_CONNECT_CONCURRENCY" --duration "$cseg" --timeout "$REQ_TIMEOUT" --samples
    done
  done
fi
# peak RSS since start, after everything
: >"$WORK/tls_hwm.jsonl"
for t in "${TARGETS[@]}"; do
  ppids=$(proc_tree "${PROXY_ROOT[$t]}" | tr '\n' ' ')
  # shellcheck disable=SC2086
  printf '{"target":"%s","hwm_kb":%s,"rss_kb":%s,"processes":%s}\n' "$t" "$(hwm_kb $ppids)" "$(rss_kb $ppids)" \
    "$(wc -w <<<"$ppids")" >>"$WORK/tls_hwm.jsonl"
done

# ---------------------------------------------------------------- report
LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg)
# overrides NAME...: "NAME=value " for each one set in the environment, quoted when it has a space
overrides() {
  local n out=""
  for n in "$@"; do
    [[ -n ${!n+x} ]] || continue
    if [[ ${!n} == *" "* ]]; then out+="$n=\"${!n}\" "; else out+="$n=${!n} "; fi
  done
  echo "$out"
}
# (only what was exported into this script: the knobs above are shell variables unless given)
ours=$(env | cut -d= -f1 | grep -E '^(TLS_CONCURRENCY|TLS_SECONDS|TLS_SEGMENTS|TLS_CONNECT_CONCURRENCY|TLS_CONNECT_SECONDS|TLS_CONNECT_SEGMENTS|TLS_KEY|TLS_NGINX_KEEPALIVE|TLS_HEADER_TIMEOUT|TLS_TARGETS)$' || true)
# shellcheck disable=SC2086
if [[ -n ${TLS_COMMAND:-} ]]; then
  CMD="$(overrides $ours)$TLS_COMMAND"
else
  theirs=$(env | cut -d= -f1 | grep -E '^(SLUICE_WORKERS|MOCK_WORKERS|NGINX_WORKERS|SLUICE_REQUEST_LOGS|CHUNKS|MOCK_CMD|SLUICE)$' || true)
  CMD="$(overrides $theirs $ours)BENCH_ONLY=tls bash bench/run.sh"
fi
nginx_version=$("$NGINX" -v 2>&1 | sed 's/^nginx version: nginx\///')
nginx_workers_n=0
for t in nginx nginx_tls; do
  [[ -n ${PROXY_ROOT[$t]:-} ]] && nginx_workers_n=$(($(proc_tree "${PROXY_ROOT[$t]}" | wc -l) - 1))
done
report_args=(--work "$WORK" --out "$BENCH_OUT" --set "command=$CMD"
  --set "sluice_version=$("$SLUICE" version 2>/dev/null | head -n 1 || echo n/a)" --set "nginx_version=$nginx_version"
  --set "openssl_version=$(openssl version | cut -d' ' -f1-2)"
  --set "nginx_workers=$NGINX_WORKERS" --set "nginx_workers_n=$nginx_workers_n"
  --set "sluice_workers=$SLUICE_WORKERS" --set "sluice_request_logs=$SLUICE_REQUEST_LOGS"
  --set "mock_cmd=${MOCK[*]##*/} ${MOCK_ARGS[*]}" --set "chunks=$CHUNKS" --set "model=$MODEL"
  --set "tls_concurrency=${LEVELS[*]}" --set "tls_seconds=$TLS_SECONDS" --set "tls_segments=$TLS_SEGMENTS"
  --set "tls_connect_concurrency=$TLS_CONNECT_CONCURRENCY" --set "tls_connect_seconds=$TLS_CONNECT_SECONDS"
  --set "tls_connect_segments=$TLS_CONNECT_SEGMENTS" --set "tls_key=$KEY_DESC"
  --set "tls_nginx_keepalive=$TLS_NGINX_KEEPALIVE" --set "tls_nofile=$(ulimit -n)"
  --set "tls_header_timeout=$TLS_HEADER_TIMEOUT"
  --set "loadavg_tls_start=$LOADAVG_START" --set "loadavg_tls_end=$LOADAVG_END")
[[ ${BENCH_STRICT:-0} == 1 ]] && report_args+=(--strict)
"$PYTHON" "$ROOT/bench/report.py" "${report_args[@]}"
