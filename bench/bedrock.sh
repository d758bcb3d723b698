#!/usr/bin/env bash
# bench/bedrock.sh — a Bedrock and a Vertex channel against an OpenAI channel on the same mock
# (`BENCH_ONLY=bedrock bash bench/run.sh`, ~1.5 minutes; not in the default run). One Sluice,
# three channels on one `sluice mock`: `oa` (openai, gpt-4o-mini: the client's OpenAI streams
# relayed as they are), `br` (bedrock, anthropic.claude-3-5-sonnet-20241022-v2:0: each request
# translated to Converse and signed with SigV4, each answer a binary event stream decoded, CRCs
# checked, and translated back to OpenAI chunks) and `vx` (vertex, gemini-2.5-flash: each request
# translated to Gemini generateContent and sent with a service account's access token, which the
# mock's token endpoint issued for an RS256 assertion made once per process; each answer translated
# back). CONCURRENCY OpenAI chat streams of CHUNKS chunks at once, in SEGMENTS interleaved segments
# of AB_SECONDS per channel (the order rotating). Reported per channel: streams, failures, streams
# per second and Sluice's CPU per stream, and each / openai; the difference is what signing (or the
# bearer token), event-stream decoding and translating both ways cost.
# Figures go into their own marked block of bench/BENCHMARKS.md.
# Knobs (environment): BUILD_DIR, SLUICE, BENCH_OUT, BENCH_NO_BUILD=1, BENCH_KEEP_WORK=1,
# SLUICE_WORKERS (0 = one per core), MOCK_WORKERS (1), CONCURRENCY (50), CHUNKS (20), AB_SECONDS (3),
# SEGMENTS (8).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
CONCURRENCY=${CONCURRENCY:-50}
SECONDS_PER=${AB_SECONDS:-3}
SEGMENTS=${SEGMENTS:-8}
MASTER_KEY=sk-bench-master
OA_MODEL=gpt-4o-mini
BR_MODEL=anthropic.claude-3-5-sonnet-20241022-v2:0
VX_MODEL=gemini-2.5-flash
# The mock's built-in test key (mock/BedrockMock.hpp kDefaultAwsKey): the mock verifies every signature.
AWS_KEY="AKIAMOCKACCESSKEY001:mock/secret+AccessKey0000000000000000000"

bench_build sluice sluice_loadgen
bench_work sluice-bench-bedrock
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)

read -r P_MOCK P_SLUICE <<<"$(free_ports 2)"
# A service account for the vertex channel: a fresh RSA key; the mock verifies its assertions.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$WORK/vertex-key.pem" 2>/dev/null ||
  die "openssl could not make the service account's key"
"$PYTHON" - "$WORK/vertex-key.pem" "http://127.0.0.1:$P_MOCK/token" "$WORK/vertex-sa.json" <<'PY'
import json, sys
key = open(sys.argv[1]).read()
json.dump({"type": "service_account", "project_id": "bench-project", "private_key_id": "k1", "private_key": key,
           "client_email": "bench@bench-project.iam.gserviceaccount.com", "client_id": "1", "token_uri": sys.argv[2]},
          open(sys.argv[3], "w"))
PY
start mock "$SLUICE" mock --listen "127.0.0.1:$P_MOCK" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms 0 \
  --google-sa "$WORK/vertex-sa.json"
MOCK_PID=$PID
wait_port mock "$MOCK_PID" "$P_MOCK"
cat >"$WORK/sluice.yaml" <<YAML
server:
  listen: "127.0.0.1:$P_SLUICE"
  workers: $SLUICE_WORKERS
auth:
  master_key: "$MASTER_KEY"
store:
  url: "sqlite://$WORK/sluice.db"
  request_logs: $SLUICE_REQUEST_LOGS
routing:
  discovery_interval: 0s
channels:
  - {name: oa, type: openai, base_url: "http://127.0.0.1:$P_MOCK/v1", keys: ["k1"], models: ["$OA_MODEL"]}
  - {name: br, type: bedrock, region: us-east-1, base_url: "http://127.0.0.1:$P_MOCK", keys: ["$AWS_KEY"], models: ["$BR_MODEL"]}
  - {name: vx, type: vertex, project: bench-project, location: us-central1, base_url: "http://127.0.0.1:$P_MOCK", keys: ["$WORK/vertex-sa.json"], models: ["$VX_MODEL"]}
YAML
start sluice "$SLUICE" serve -c "$WORK/sluice.yaml"
SLUICE_PID=$PID
wait_port sluice "$SLUICE_PID" "$P_SLUICE"
declare -A PIDS_OF=([openai]=$SLUICE_PID [bedrock]=$SLUICE_PID [vertex]=$SLUICE_PID)
declare -A MODEL_OF=([openai]=$OA_MODEL [bedrock]=$BR_MODEL [vertex]=$VX_MODEL)
for name in openai bedrock vertex; do
  out=$("$LOADGEN" --url "http://127.0.0.1:$P_SLUICE/v1/chat/completions" -H "Authorization: Bearer $MASTER_KEY" \
    --model "${MODEL_OF[$name]}" --mode ping --count 5 --timeout 10 || true)
  grep -q '"ok":5' <<<"$out" || die "the $name channel does not answer: $out"
done
log "work dir $WORK; $CONCURRENCY streams x $CHUNKS chunks, $SEGMENTS segments of ${SECONDS_PER}s per channel"

declare -A OK CPU WALL FAILED
ab_reset openai bedrock vertex
for ((seg = 0; seg < SEGMENTS; seg++)); do
  case $((seg % 3)) in
    0) order=(openai bedrock vertex) ;;
    1) order=(bedrock vertex openai) ;;
    *) order=(vertex openai bedrock) ;;
  esac
  for name in "${order[@]}"; do ab_load "$name" "$P_SLUICE" --model "${MODEL_OF[$name]}"; done
  log "segment $((seg + 1))/$SEGMENTS done"
done
rejected=$(curl -s "http://127.0.0.1:$P_MOCK/mock/stats" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["requests"])')

cmd=""
for v in CONCURRENCY CHUNKS AB_SECONDS SEGMENTS SLUICE_WORKERS MOCK_WORKERS; do
  env | grep -q "^$v=" && cmd+="$v=${!v} "
done
cmd+="BENCH_ONLY=bedrock bash bench/run.sh"
section=$(
  echo "## A Bedrock and a Vertex channel against an OpenAI channel"
  echo
  echo "\`$cmd\` at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'): one Sluice, three channels on one"
  echo "mock, $CONCURRENCY OpenAI chat streams of $CHUNKS chunks at once, $SEGMENTS interleaved segments of ${SECONDS_PER} s"
  echo "per channel. \`openai\`: relayed as they are; \`bedrock\`: translated to Converse, SigV4-signed per"
  echo "attempt, the answer an AWS event stream (CRCs checked) translated back; \`vertex\`: translated to"
  echo "Gemini generateContent with a service account's access token (one per process), translated back."
  echo "Load average $LOADAVG_START at"
  echo "the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; the mock served $rejected requests, every bedrock"
  echo "one after verifying its signature. CPU is Sluice's (all threads), per stream: the comparison to read."
  echo "Streams per second are bounded by the one-worker mock, which verifies a SigV4 signature and frames"
  echo "every event (two CRCs each) for each bedrock stream, so they overstate the gateway's share."
  echo
  echo "| channel | streams | failed | streams/s | Sluice CPU us / stream | vs openai: streams/s | vs openai: CPU / stream |"
  echo "|---|---|---|---|---|---|---|"
  awk -v okb="${OK[openai]}" -v oka="${OK[bedrock]}" -v okv="${OK[vertex]}" \
      -v wb="${WALL[openai]}" -v wa="${WALL[bedrock]}" -v wv="${WALL[vertex]}" \
      -v cb="${CPU[openai]}" -v ca="${CPU[bedrock]}" -v cv="${CPU[vertex]}" \
      -v fb="${FAILED[openai]}" -v fa="${FAILED[bedrock]}" -v fv="${FAILED[vertex]}" 'BEGIN {
    rb = okb / wb; ra = oka / wa; rv = okv / wv; ub = cb / okb * 1e6; ua = ca / oka * 1e6; uv = cv / okv * 1e6
    printf "| openai (gpt-4o-mini) | %d | %d | %.0f | %.1f | | |\n", okb, fb, rb, ub
    printf "| bedrock (anthropic.claude-3-5-sonnet) | %d | %d | %.0f | %.1f | %.3fx | %.3fx |\n", oka, fa, ra, ua, ra / rb, ua / ub
    printf "| vertex (gemini-2.5-flash) | %d | %d | %.0f | %.1f | %.3fx | %.3fx |\n", okv, fv, rv, uv, rv / rb, uv / ub
  }'
)
"$PYTHON" - "$BENCH_OUT" "$ROOT/bench" <<PY
import sys
sys.path.insert(0, sys.argv[2])
import report
report.write_block(sys.argv[1], """$section""", "<!-- bench:bedrock:begin (written by bench/bedrock.sh; edit outside the markers) -->",
                   "<!-- bench:bedrock:end -->", after="<!-- bench:ws:end -->")
PY
echo "$section"
