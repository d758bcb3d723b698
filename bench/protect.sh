#!/usr/bin/env bash
# bench/protect.sh — what the protect-and-save stages cost (`BENCH_ONLY=protect bash bench/run.sh`,
# and the last benchmark of a full `make bench`):
#   1. protect throughput: two Sluices from the same config as the main scenarios' (one openai
#      channel on the mock, store.request_logs $SLUICE_REQUEST_LOGS), one with everything off, one
#      with `redaction: {enabled: true}` (the built-in rules) and `screening: {action: block}`;
#      both loaded in turn with the throughput scenario's streams (CONCURRENCY streams, CHUNKS
#      chunks) in PROTECT_SEGMENTS interleaved segments. Every request is bench/data/protect_chat.json
#      (a chat request whose user message is ~300 bytes of prose with one e-mail address and one
#      phone number) sent with `x-mock-echo: 1`, so on the protecting Sluice every request is
#      screened, has two values encrypted before it leaves, and gets them restored in the echoed
#      answer. Reported: req/s, the ratio on / off (target >= 0.9x), TTFB / close / tail, CPU per
#      request, peak RSS, and the protecting Sluice's own counters (redactions, restored tokens,
#      screened, flagged). In the same segments, the same two Sluices with
#      bench/data/protect_chat_clean.json (the same prose, the two values replaced by words): every
#      request screened and scanned, nothing to seal or restore (scenario protect_clean, reported).
#   1b. where the time goes: build/sluice_protect_bench (Google Benchmark) times each stage on its
#      own (seal, open, rule scan, the request scan, screen, the restoring stream tap).
#   2. cache hit latency: a Sluice with `cache: {enabled: true, ttl: 1h}`; one request fills the
#      entry, then sequential `--mode ping` requests, non-streamed and streamed, that are all hits
#      (checked per run with the gateway's sluice_cache_requests_total{result="hit"|"miss"});
#      against nginx serving the bytes of a hit (the JSON answer, and the SSE replay) as static
#      files, and the same request straight to the mock (what a miss costs upstream) and through
#      Sluice with Cache-Control: no-store (a request that skips the cache). Rounds interleaved.
# and writes them into their own marked block of bench/BENCHMARKS.md (via bench/report.py).
#
# Everything it starts listens on 127.0.0.1 and is stopped on exit.
# Knobs (environment): BUILD_DIR, SLUICE, LOADGEN, NGINX, BENCH_OUT, BENCH_NO_BUILD=1,
# BENCH_STRICT=1 (exit 1 when the 0.9x target is missed), BENCH_KEEP_WORK=1, MOCK_CMD,
# SLUICE_WORKERS (0 = one per core), MOCK_WORKERS (1), NGINX_WORKERS (auto), SLUICE_REQUEST_LOGS
# (false, as in bench/run.sh), CONCURRENCY (50), CHUNKS (20), PROTECT_SECONDS (THROUGHPUT_SECONDS
# or 15: per configuration and body), PROTECT_SEGMENTS (10: short and many, as the ratio sought is
# within what other load on the machine moves), PROTECT_BODY (bench/data/protect_chat.json),
# PROTECT_CLEAN_BODY (bench/data/protect_chat_clean.json), PROTECT_MICRO_MIN_TIME (0.5 s),
# CACHE_PING_ROUNDS (3), CACHE_PING_WARMUP (3), CACHE_PING_COUNT (300: per round, target and mode).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"  # the shared settings, log, die, bench_build, bench_work, start, measure...
CONCURRENCY=${CONCURRENCY:-50}
PROTECT_SECONDS=${PROTECT_SECONDS:-${THROUGHPUT_SECONDS:-15}}
PROTECT_SEGMENTS=${PROTECT_SEGMENTS:-10}
PROTECT_BODY=${PROTECT_BODY:-$ROOT/bench/data/protect_chat.json}
PROTECT_CLEAN_BODY=${PROTECT_CLEAN_BODY:-$ROOT/bench/data/protect_chat_clean.json}
PROTECT_MICRO_MIN_TIME=${PROTECT_MICRO_MIN_TIME:-0.5}
PROTECT_MICRO=${PROTECT_MICRO:-$BUILD_DIR/sluice_protect_bench}
CACHE_PING_ROUNDS=${CACHE_PING_ROUNDS:-3}
CACHE_PING_WARMUP=${CACHE_PING_WARMUP:-3}
CACHE_PING_COUNT=${CACHE_PING_COUNT:-300}
MASTER_KEY=sk-bench-master
REDACT_KEY=bench-redaction-key-0123456789abcdef
REQ_TIMEOUT=10   # seconds per request in the load generator


# ---------------------------------------------------------------- build
BENCH_BUILD_HINT="Google Benchmark: SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh" bench_build sluice sluice_loadgen sluice_protect_bench
[[ -x $SLUICE ]] || die "sluice binary not found at $SLUICE"
[[ -x $LOADGEN ]] || die "load generator not found at $LOADGEN"
[[ -x $NGINX ]] || die "nginx not found at $NGINX (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"
[[ -r $PROTECT_BODY ]] || die "request body $PROTECT_BODY not found"
[[ -r $PROTECT_CLEAN_BODY ]] || die "request body $PROTECT_CLEAN_BODY not found"
[[ -x $PROTECT_MICRO ]] || die "$PROTECT_MICRO not found (Google Benchmark: SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"
MOCK_CMD=${MOCK_CMD:-"$SLUICE mock"}
read -r -a MOCK <<<"$MOCK_CMD"

# ---------------------------------------------------------------- processes
bench_work sluice-bench-protect

read -r -a PORTS <<<"$(free_ports 5)"
P_MOCK=${PORTS[0]} P_OFF=${PORTS[1]} P_ON=${PORTS[2]} P_CACHE=${PORTS[3]} P_NGINX=${PORTS[4]}

declare -A PROXY_ROOT=()
MODEL=gpt-4o-mini  # measure() passes --model; the request bodies name the model themselves

# metric URL NAME: the value of one sample line of a Sluice's /metrics (0 when absent)
metric() {
  "$PYTHON" - "$1" "$MASTER_KEY" "$2" <<'PY'
import sys, urllib.request
url, key, name = sys.argv[1:4]
req = urllib.request.Request(url, headers={"Authorization": "Bearer " + key})
v = 0
for line in urllib.request.urlopen(req, timeout=10).read().decode().splitlines():
    if line.startswith(name + " "):
        v = int(float(line.split()[-1]))
print(v)
PY
}

LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
MOCK_ARGS=(--workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms 0 --chunk-interval-ms 0)
log "work dir $WORK"
log "starting mock on 127.0.0.1:$P_MOCK"
start mock "${MOCK[@]}" --listen "127.0.0.1:$P_MOCK" "${MOCK_ARGS[@]}"
MOCK_PID=$PID
wait_port mock "$MOCK_PID" "$P_MOCK" || die "the mock provider did not start (${MOCK[*]})"

PROTECT_SECTIONS=("redaction:" "  enabled: true" "  key: \"$REDACT_KEY\"" "screening:" "  action: block")
CACHE_SECTIONS=("cache:" "  enabled: true" "  ttl: 1h")
sluice_config "$WORK/sluice-off.yaml" "$P_OFF" "$P_MOCK" ""
sluice_config "$WORK/sluice-on.yaml" "$P_ON" "$P_MOCK" "" "${PROTECT_SECTIONS[@]}"
sluice_config "$WORK/sluice-cache.yaml" "$P_CACHE" "$P_MOCK" "" "${CACHE_SECTIONS[@]}"
log "starting sluice protect_off on 127.0.0.1:$P_OFF, protect_on on 127.0.0.1:$P_ON, cache on 127.0.0.1:$P_CACHE"
start sluice_off "$SLUICE" serve -c "$WORK/sluice-off.yaml"
OFF_PID=$PID
start sluice_on "$SLUICE" serve -c "$WORK/sluice-on.yaml"
ON_PID=$PID
start sluice_cache "$SLUICE" serve -c "$WORK/sluice-cache.yaml"
CACHE_PID=$PID
wait_port sluice_off "$OFF_PID" "$P_OFF" 30 || die "the protect_off sluice did not start"
wait_port sluice_on "$ON_PID" "$P_ON" 30 || die "the protect_on sluice did not start"
wait_port sluice_cache "$CACHE_PID" "$P_CACHE" 30 || die "the cache sluice did not start"
PROXY_ROOT[protect_off]=$OFF_PID
PROXY_ROOT[protect_on]=$ON_PID
PROXY_ROOT[sluice_hit]=$CACHE_PID
PROXY_ROOT[sluice_no_store]=$CACHE_PID

# The non-streamed variant of the request body (the cache scenario pings both ways).
"$PYTHON" - "$PROTECT_BODY" "$WORK/body_stream.json" "$WORK/body_whole.json" "$PROTECT_CLEAN_BODY" "$WORK/body_clean.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
b["stream"] = True
open(sys.argv[2], "w").write(json.dumps(b, separators=(",", ":")))
b["stream"] = False
open(sys.argv[3], "w").write(json.dumps(b, separators=(",", ":")))
c = json.load(open(sys.argv[4]))
c["stream"] = True
open(sys.argv[5], "w").write(json.dumps(c, separators=(",", ":")))
PY

# ---------------------------------------------------------------- sanity
# Both ways (streamed and whole) through each Sluice: the echoed answer must be the user text as
# sent, i.e. the protecting Sluice restored what it encrypted, and its counters must show that
# each request was screened (not flagged), redacted twice and restored twice.
log "sanity: echoed answers through protect_off / protect_on equal the user text; the counters move"
"$PYTHON" - "$WORK/body_stream.json" "$WORK/body_whole.json" "$MASTER_KEY" "$CHUNKS" \
  "http://127.0.0.1:$P_MOCK" "http://127.0.0.1:$P_OFF" "http://127.0.0.1:$P_ON" "$WORK/body_clean.json" \
  >"$WORK/protect_sanity.json" <<'PY' ||
import json, sys, urllib.request
sbody, wbody, key, chunks, mock, off, on, cbody = sys.argv[1:9]
text = json.load(open(sbody))["messages"][-1]["content"]
clean = json.load(open(cbody))["messages"][-1]["content"]

def post(base, path, body):
    req = urllib.request.Request(base + path, data=open(body, "rb").read(), method="POST", headers={
        "Authorization": "Bearer " + key, "Content-Type": "application/json", "x-mock-echo": "1",
        "x-mock-chunks": chunks})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read().decode()

def answer(raw, stream):
    if not stream:
        return json.loads(raw)["choices"][0]["message"]["content"]
    out = []
    for line in raw.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            ch = json.loads(line[6:]).get("choices") or []
            if ch and ch[0].get("delta", {}).get("content"):
                out.append(ch[0]["delta"]["content"])
    return "".join(out)

def counters(base):
    req = urllib.request.Request(base + "/metrics", headers={"Authorization": "Bearer " + key})
    c = {}
    for line in urllib.request.urlopen(req, timeout=10).read().decode().splitlines():
        for name in ("sluice_restored_tokens_total", "sluice_tampered_tokens_total", "sluice_screened_requests_total"):
            if line.startswith(name + " "):
                c[name] = int(float(line.split()[-1]))
        if line.startswith("sluice_redactions_total{") or line.startswith("sluice_screen_flagged_total{"):
            c[line.rsplit(" ", 1)[0]] = int(float(line.split()[-1]))
    return c

res = {"text_bytes": len(text.encode()), "checks": []}
ok = True
for name, base in (("direct", mock), ("protect_off", off), ("protect_on", on)):
    before = counters(base) if name == "protect_on" else {}
    for stream, body in ((True, sbody), (False, wbody)):
        status, raw = post(base, "/v1/chat/completions", body)
        got = answer(raw, stream)
        good = status == 200 and got == text
        ok &= good
        res["checks"].append({"target": name, "stream": stream, "status": status, "echo_equal": got == text})
        if not good:
            print(f"sanity: {name} stream={stream}: status {status}, answer {got[:200]!r}", file=sys.stderr)
    if name == "protect_on":
        after = counters(base)
        d = {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}
        res["counters_for_2_requests"] = {k: v for k, v in sorted(d.items()) if v}
        want = {'sluice_redactions_total{rule="EMAIL",action="redact"}': 2,
                'sluice_redactions_total{rule="PHONE",action="redact"}': 2,
                "sluice_restored_tokens_total": 4, "sluice_screened_requests_total": 2}
        for k, v in want.items():
            if d.get(k, 0) != v:
                ok = False
                print(f"sanity: protect_on: {k} moved by {d.get(k, 0)} for 2 requests, expected {v}", file=sys.stderr)
        if any(k.startswith("sluice_screen_flagged_total") and v for k, v in d.items()):
            ok = False
            print("sanity: protect_on: the screen flagged the benchmark request", file=sys.stderr)
# The clean body: echoed as sent through both; on protect_on screened, nothing redacted or restored.
before = counters(on)
for name, base in (("protect_off", off), ("protect_on", on)):
    status, raw = post(base, "/v1/chat/completions", cbody)
    got = answer(raw, True)
    good = status == 200 and got == clean
    ok &= good
    res["checks"].append({"target": name, "body": "clean", "stream": True, "status": status, "echo_equal": got == clean})
    if not good:
        print(f"sanity: {name} clean body: status {status}, answer {got[:200]!r}", file=sys.stderr)
after = counters(on)
d = {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}
res["clean_counters_for_1_request"] = {k: v for k, v in sorted(d.items()) if v}
if d.get("sluice_screened_requests_total", 0) != 1 or any(
        v for k, v in d.items() if k.startswith(("sluice_redactions_total", "sluice_restored_tokens_total",
                                                 "sluice_screen_flagged_total"))):
    ok = False
    print(f"sanity: protect_on, clean body: counters moved {d}, expected one screened request only", file=sys.stderr)
res["clean_text_bytes"] = len(clean.encode())
res["ok"] = ok
print(json.dumps(res))
sys.exit(0 if ok else 1)
PY
  die "sanity check failed (see above); the protect figures would not measure what they claim"
HDRS=(-H "Authorization: Bearer $MASTER_KEY" -H "x-mock-chunks: $CHUNKS" -H "x-mock-echo: 1")

# ---------------------------------------------------------------- 1. protect throughput
declare -A URL=([protect_off]="http://127.0.0.1:$P_OFF" [protect_on]="http://127.0.0.1:$P_ON")
seg=$(awk -v a="$PROTECT_SECONDS" -v b="$PROTECT_SEGMENTS" 'BEGIN { printf "%g", a / b }')
log "protect 1/2 throughput: $CONCURRENCY streams x $CHUNKS chunks, ${PROTECT_SECONDS}s per configuration ($PROTECT_SEGMENTS interleaved segments of ${seg}s), body $(basename "$PROTECT_BODY")"
declare -A BODY=([protect]="$WORK/body_stream.json" [protect_clean]="$WORK/body_clean.json")
for ((r = 0; r < PROTECT_SEGMENTS; r++)); do
  if ((r % 2 == 0)); then order=(protect_off protect_on); else order=(protect_on protect_off); fi
  for scen in protect protect_clean; do
    for t in "${order[@]}"; do
      measure "$scen" "$t" "$((r + 1))" "$(awk -v s="$seg" 'BEGIN { printf "%d", s + 60 }')" \
        --url "${URL[$t]}/v1/chat/completions" "${HDRS[@]}" --body-file "${BODY[$scen]}" \
        --mode load --warmup 10 --concurrency "$CONCURRENCY" --duration "$seg" --timeout "$REQ_TIMEOUT" --samples
    done
  done
done
# The protecting Sluice's own account of everything it did (sanity requests included).
"$PYTHON" - "http://127.0.0.1:$P_ON/metrics" "$MASTER_KEY" >"$WORK/protect_counters.json" <<'PY' ||
import json, sys, urllib.request
url, key = sys.argv[1:3]
req = urllib.request.Request(url, headers={"Authorization": "Bearer " + key})
out = {}
for line in urllib.request.urlopen(req, timeout=10).read().decode().splitlines():
    if line.startswith(("sluice_redactions_total{", "sluice_screen_flagged_total{", "sluice_restored_tokens_total ",
                        "sluice_tampered_tokens_total ", "sluice_screened_requests_total ")):
        name, value = line.rsplit(" ", 1)
        out[name] = int(float(value))
print(json.dumps(out))
PY
  log "warning: could not read the protecting Sluice's counters"

# ---------------------------------------------------------------- 1b. each stage on its own
log "protect 1b: $(basename "$PROTECT_MICRO") (each stage on its own, min time ${PROTECT_MICRO_MIN_TIME}s per benchmark)"
SLUICE_SOURCE_DIR=$ROOT "$PROTECT_MICRO" --benchmark_min_time="$PROTECT_MICRO_MIN_TIME" \
  --benchmark_out="$WORK/protect_micro.json" --benchmark_out_format=json >"$WORK/protect_micro.txt" 2>&1 ||
  { tail -n 20 "$WORK/protect_micro.txt" >&2; die "$PROTECT_MICRO failed"; }

# ---------------------------------------------------------------- 2. cache hit latency
log "protect 2/2 cache: filling the entry, saving a hit's bytes for nginx"
mkdir -p "$WORK/nginx/www"
"$PYTHON" - "$WORK/body_whole.json" "$WORK/body_stream.json" "$MASTER_KEY" "http://127.0.0.1:$P_CACHE" \
  "$WORK/nginx/www" >"$WORK/cache_fill.json" <<'PY' ||
import json, sys, time, urllib.request
wbody, sbody, key, base, www = sys.argv[1:6]

def post(body, extra=None):
    h = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    h.update(extra or {})
    req = urllib.request.Request(base + "/v1/chat/completions", data=open(body, "rb").read(), method="POST", headers=h)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers.get("x-sluice-cache"), r.read()

fill = post(wbody)              # the miss that stores the entry
time.sleep(0.3)                 # the entry is stored once the answer has been sent
whole = post(wbody)             # a hit: these bytes are what nginx serves for the JSON answer
stream = post(sbody)            # a streamed hit of the same entry: the SSE replay nginx serves
ok = fill[:2] == (200, "miss") and whole[:2] == (200, "hit") and stream[:2] == (200, "hit")
ok &= b"data: [DONE]" in stream[2]
open(www + "/answer.json", "wb").write(whole[2])
open(www + "/answer.sse", "wb").write(stream[2])
print(json.dumps({"fill": fill[1], "whole": whole[1], "stream": stream[1], "json_bytes": len(whole[2]),
                  "sse_bytes": len(stream[2]), "ok": ok}))
sys.exit(0 if ok else 1)
PY
  die "filling the cache did not give miss, then hits: $(cat "$WORK/cache_fill.json")"

# nginx serving those bytes as static files. The static module answers POST with 405; the
# error_page turns that into the file with a 200 (an internal redirect, GET).
cat >"$WORK/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
user root;
worker_processes $NGINX_WORKERS;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events {
    worker_connections 4096;
    multi_accept on;
}
http {
    access_log off;
    client_body_temp_path $WORK/nginx/client_body_temp;
    keepalive_timeout 300s;
    keepalive_requests 10000000;
    tcp_nodelay on;
    sendfile on;
    types {
        application/json json;
        text/event-stream sse;
    }
    server {
        listen 127.0.0.1:$P_NGINX;
        root $WORK/nginx/www;
        error_page 405 =200 \$uri;
    }
}
EOF
log "starting nginx (static files) on 127.0.0.1:$P_NGINX (worker_processes $NGINX_WORKERS)"
start nginx "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log"
NGINX_PID=$PID
wait_port nginx "$NGINX_PID" "$P_NGINX" || die "nginx did not start (see $WORK/nginx/error.log)"
PROXY_ROOT[nginx_static]=$NGINX_PID

CACHE_URL="http://127.0.0.1:$P_CACHE/v1/chat/completions"
declare -A C_URL=([sluice_hit]="$CACHE_URL" [sluice_no_store]="$CACHE_URL"
                  [direct]="http://127.0.0.1:$P_MOCK/v1/chat/completions")
declare -A C_STATIC=([whole]="http://127.0.0.1:$P_NGINX/answer.json" [stream]="http://127.0.0.1:$P_NGINX/answer.sse")
declare -A C_BODY=([whole]="$WORK/body_whole.json" [stream]="$WORK/body_stream.json")
declare -A C_STREAM=([whole]=0 [stream]=1)
C_TARGETS=(sluice_hit nginx_static direct sluice_no_store)
C_HDRS=(-H "Authorization: Bearer $MASTER_KEY" -H "x-mock-chunks: $CHUNKS")
HIT_METRIC='sluice_cache_requests_total{result="hit"}'
MISS_METRIC='sluice_cache_requests_total{result="miss"}'
: >"$WORK/cache_checks.jsonl"
log "  $CACHE_PING_ROUNDS rounds x ($CACHE_PING_WARMUP warm-up + $CACHE_PING_COUNT sequential requests) per target, non-streamed and streamed"
for ((r = 0; r < CACHE_PING_ROUNDS; r++)); do
  for mode in whole stream; do
    for ((i = 0; i < ${#C_TARGETS[@]}; i++)); do
      t=${C_TARGETS[$(((i + r) % ${#C_TARGETS[@]}))]}
      url=${C_URL[$t]:-${C_STATIC[$mode]}}
      extra=()
      [[ $t == sluice_no_store ]] && extra=(-H "Cache-Control: no-store")
      if [[ $t == sluice_hit ]]; then
        h0=$(metric "http://127.0.0.1:$P_CACHE/metrics" "$HIT_METRIC")
        x0=$(metric "http://127.0.0.1:$P_CACHE/metrics" "$MISS_METRIC")
      fi
      measure "protect_cache_$mode" "$t" "$((r + 1))" 120 --url "$url" "${C_HDRS[@]}" "${extra[@]}" \
        --body-file "${C_BODY[$mode]}" --stream "${C_STREAM[$mode]}" --mode ping \
        --warmup "$CACHE_PING_WARMUP" --count "$CACHE_PING_COUNT" --timeout "$REQ_TIMEOUT" --samples
      if [[ $t == sluice_hit ]]; then
        h1=$(metric "http://127.0.0.1:$P_CACHE/metrics" "$HIT_METRIC")
        x1=$(metric "http://127.0.0.1:$P_CACHE/metrics" "$MISS_METRIC")
        printf '{"mode":"%s","round":%d,"sent":%d,"hits":%d,"misses":%d}\n' "$mode" "$((r + 1))" \
          "$((CACHE_PING_WARMUP + CACHE_PING_COUNT))" "$((h1 - h0))" "$((x1 - x0))" >>"$WORK/cache_checks.jsonl"
        if ((h1 - h0 != CACHE_PING_WARMUP + CACHE_PING_COUNT || x1 - x0 != 0)); then
          log "warning: $mode round $((r + 1)): $((h1 - h0)) hits and $((x1 - x0)) misses for $((CACHE_PING_WARMUP + CACHE_PING_COUNT)) requests"
        fi
      fi
    done
  done
done

# ---------------------------------------------------------------- report
LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg)
overrides=$(env | grep -E '^(PROTECT_SECONDS|PROTECT_SEGMENTS|PROTECT_BODY|PROTECT_CLEAN_BODY|PROTECT_MICRO_MIN_TIME|CACHE_PING_ROUNDS|CACHE_PING_WARMUP|CACHE_PING_COUNT)=' | tr '\n' ' ' || true)
if [[ -n ${PROTECT_COMMAND:-} ]]; then
  CMD="$overrides$PROTECT_COMMAND"
else
  more=$(env | grep -E '^(SLUICE_WORKERS|MOCK_WORKERS|NGINX_WORKERS|SLUICE_REQUEST_LOGS|CONCURRENCY|CHUNKS|THROUGHPUT_SECONDS|MOCK_CMD|SLUICE)=' | tr '\n' ' ' || true)
  CMD="$more${overrides}BENCH_ONLY=protect bash bench/run.sh"
fi
nginx_version=$("$NGINX" -v 2>&1 | sed 's/^nginx version: nginx\///')
report_args=(--work "$WORK" --out "$BENCH_OUT" --set "command=$CMD"
  --set "sluice_version=$("$SLUICE" version 2>/dev/null | head -n 1 || echo n/a)" --set "nginx_version=$nginx_version"
  --set "nginx_workers=$NGINX_WORKERS" --set "nginx_workers_n=$(($(proc_tree "$NGINX_PID" | wc -l) - 1))"
  --set "sluice_workers=$SLUICE_WORKERS" --set "sluice_request_logs=$SLUICE_REQUEST_LOGS"
  --set "mock_cmd=${MOCK[*]##*/} ${MOCK_ARGS[*]}" --set "concurrency=$CONCURRENCY" --set "chunks=$CHUNKS"
  --set "protect_seconds=$PROTECT_SECONDS" --set "protect_segments=$PROTECT_SEGMENTS"
  --set "protect_body=${PROTECT_BODY#"$ROOT"/}" --set "protect_body_bytes=$(wc -c <"$WORK/body_stream.json")"
  --set "protect_clean_body=${PROTECT_CLEAN_BODY#"$ROOT"/}" --set "protect_clean_body_bytes=$(wc -c <"$WORK/body_clean.json")"
  --set "protect_micro_min_time=$PROTECT_MICRO_MIN_TIME"
  --set "cache_ping_rounds=$CACHE_PING_ROUNDS" --set "cache_ping_warmup=$CACHE_PING_WARMUP"
  --set "cache_ping_count=$CACHE_PING_COUNT"
  --set "loadavg_protect_start=$LOADAVG_START" --set "loadavg_protect_end=$LOADAVG_END")
[[ ${BENCH_STRICT:-0} == 1 ]] && report_args+=(--strict)
"$PYTHON" "$ROOT/bench/report.py" "${report_args[@]}"
