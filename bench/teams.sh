#!/usr/bin/env bash
# bench/teams.sh — what a team costs on the request path (`BENCH_ONLY=teams bash bench/run.sh`).
# One gateway, one mock; three callers loaded in turn, in SEGMENTS interleaved segments of
# AB_SECONDS each (the order rotating), CONCURRENCY streams of CHUNKS chunks at once:
#   master  the master key: no limits at all
#   key     a virtual key with its own RPM, TPM and daily, monthly and total budgets (never reached)
#   team    a virtual key with the same limits, in a team with the same limits: each request is
#           checked and counted against the key and against its team
# Run twice: limits kept in the gateway (no Redis), then exact across instances through Redis
# (skipped with a note when redis-server is not installed). Prints req/s and the gateway's CPU
# per request of each caller, and team / key.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MASTER_KEY=sk-bench-master
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
CONCURRENCY=${CONCURRENCY:-50}
SECONDS_PER=${AB_SECONDS:-3}
SEGMENTS=${SEGMENTS:-6}
BENCH_NO_BUILD=${BENCH_NO_BUILD:-0} bench_build sluice sluice_loadgen
bench_work sluice-teams
declare -A OK CPU WALL FAILED PIDS_OF

read -r P_MOCK P_REDIS <<<"$(free_ports 2)"
start mock "$SLUICE" mock --listen "127.0.0.1:$P_MOCK" --workers "$MOCK_WORKERS" --chunks "$CHUNKS" --ttfb-ms 0 --chunk-interval-ms 0
MOCK_PID=$PID
wait_port mock "$MOCK_PID" "$P_MOCK"

admin() {  # PORT METHOD PATH [BODY]: the admin API's answer (fails on an HTTP error)
  curl -fsS --noproxy '*' -X "$2" "http://127.0.0.1:$1/admin/api$3" -H "Authorization: Bearer $MASTER_KEY" \
    -H 'content-type: application/json' ${4:+-d "$4"}
}
field() { "$PYTHON" -c "import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split('.'): v=v[k]
print(v)" "$1"; }

LIMITS='"rpm":100000000,"tpm":100000000000,"budget_daily_usd":1000000,"budget_monthly_usd":1000000,"budget_total_usd":1000000'
ROWS=()
run_mode() {  # LABEL [CONFIG LINES...]
  local label=$1 port key team_key team_id name
  shift
  port=$(free_ports 1)
  sluice_config "$WORK/$label.yaml" "$port" "$P_MOCK" "" "$@"
  start "gw-$label" "$SLUICE" serve -c "$WORK/$label.yaml"
  GW=$PID
  PIDS_OF=([master]=$GW [key]=$GW [team]=$GW)
  wait_port "gw-$label" "$GW" "$port" 30
  key=$(admin "$port" POST /keys "{\"name\":\"bench-key\",$LIMITS}" | field secret)
  team_id=$(admin "$port" POST /teams "{\"name\":\"bench-team\",$LIMITS}" | field id)
  team_key=$(admin "$port" POST /keys "{\"name\":\"bench-team-key\",\"team_id\":$team_id,$LIMITS}" | field secret)
  # The gateway takes new keys from the store within about a second.
  for k in "$key" "$team_key"; do
    for _ in $(seq 50); do
      curl -fsS --noproxy '*' -o /dev/null "http://127.0.0.1:$port/v1/chat/completions" -H "Authorization: Bearer $k" \
        -H 'content-type: application/json' -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}' && break
      sleep 0.2
    done
  done
  ab_reset master key team
  local order=(master key team) seg i
  for ((seg = 0; seg < SEGMENTS; seg++)); do
    for ((i = 0; i < 3; i++)); do
      name=${order[$(((i + seg) % 3))]}
      case $name in
        master) AB_KEY=$MASTER_KEY ab_load master "$port" ;;
        key) AB_KEY=$key ab_load key "$port" ;;
        team) AB_KEY=$team_key ab_load team "$port" ;;
      esac
    done
    log "$label: segment $((seg + 1))/$SEGMENTS done"
  done
  kill -TERM "$GW"
  wait "$GW" 2>/dev/null || true
  for name in master key team; do
    ROWS+=("$label $name ${OK[$name]} ${WALL[$name]} ${CPU[$name]}")
    ((FAILED[$name] == 0)) || die "$label $name: ${FAILED[$name]} requests failed"
  done
}

run_mode in-process
if command -v redis-server >/dev/null; then
  start redis redis-server --port "$P_REDIS" --save '' --appendonly no
  wait_port redis "$PID" "$P_REDIS"
  run_mode redis "redis:" "  url: \"redis://127.0.0.1:$P_REDIS\""
else
  log "redis-server is not installed: the Redis rows are left out (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"
fi

echo "| limits | caller | requests | req/s | gateway CPU us / request | / key |"
echo "|---|---|---|---|---|---|"
"$PYTHON" - "${ROWS[@]}" <<'EOF'
import sys
rows = [r.split() for r in sys.argv[1:]]
per = {}
for mode, name, ok, wall, cpu in rows:
    ok, wall, cpu = int(ok), float(wall), float(cpu)
    per[(mode, name)] = (ok, ok / wall if wall else 0, cpu * 1e6 / ok if ok else 0)
for mode, name, *_ in rows:
    ok, rps, us = per[(mode, name)]
    base = per[(mode, "key")][2]
    print(f"| {mode} | {name} | {ok} | {rps:.0f} | {us:.1f} | {us / base:.3f}x |")
EOF
