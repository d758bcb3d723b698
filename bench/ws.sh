#!/usr/bin/env bash
# bench/ws.sh — the Responses API's WebSocket mode against POST (`BENCH_ONLY=ws bash bench/run.sh`,
# ~2 minutes; not in the default run): an agent loop's turns (build/sluice_ws_turns,
# bench/ws_turns.cpp) where each turn waits for the previous answer, as an agent waits for the
# model before it runs its tool. WS_CONNS loops run WS_TURNS turns each, the conversation growing
# by a user item and the answer per turn, through these targets in WS_ROUNDS interleaved rounds
# (the order rotated per round):
#   direct     POST /v1/responses to the mock itself, the whole conversation each turn: the floor
#   post       the same POSTs through Sluice (native: an openai channel on the mock)
#   ws         one WebSocket per loop through Sluice: each turn sends only its new item with
#              previous_response_id, and the gateway expands the chain from the socket's own
#              last responses
#   post_tr / ws_tr  the same two through Sluice to an anthropic channel on the mock (translated)
# Reported per target: turns, failures, per-turn latency (send to the terminal event) mean / p50 /
# p90 / p99, the request bytes the client sent per turn, and Sluice's CPU per 1000 turns; the
# overhead of each Sluice target over direct (p50 and mean), and ws / post.
# Figures go into their own marked block of bench/BENCHMARKS.md.
# Knobs (environment): BUILD_DIR, SLUICE, BENCH_OUT, BENCH_NO_BUILD=1, BENCH_KEEP_WORK=1,
# SLUICE_WORKERS (0 = one per core), MOCK_WORKERS (1), WS_CONNS (20), WS_TURNS (30), WS_ROUNDS (3),
# WS_CHUNKS (20: chunks per answer), WS_TTFB_MS (0: the mock's delay to the first byte).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
WS_CONNS=${WS_CONNS:-20}
WS_TURNS=${WS_TURNS:-30}
WS_ROUNDS=${WS_ROUNDS:-3}
WS_CHUNKS=${WS_CHUNKS:-20}
WS_TTFB_MS=${WS_TTFB_MS:-0}
WS_TURNS_BIN=${WS_TURNS_BIN:-$BUILD_DIR/sluice_ws_turns}
MASTER_KEY=sk-bench-master

bench_build sluice sluice_ws_turns
[[ -x $SLUICE ]] || die "no $SLUICE"
[[ -x $WS_TURNS_BIN ]] || die "no $WS_TURNS_BIN"
bench_work sluice-bench-ws
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)

read -r P_MOCK P_SLUICE <<<"$(free_ports 2)"
start mock "$SLUICE" mock --listen "127.0.0.1:$P_MOCK" --workers "$MOCK_WORKERS" --chunks "$WS_CHUNKS" \
  --ttfb-ms "$WS_TTFB_MS"
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
  - name: native
    type: openai
    base_url: "http://127.0.0.1:$P_MOCK/v1"
    keys: ["k1"]
    models: ["gpt-*"]
  - name: translated
    type: anthropic
    base_url: "http://127.0.0.1:$P_MOCK"
    keys: ["k1"]
    models: ["claude-*"]
YAML
start sluice "$SLUICE" serve -c "$WORK/sluice.yaml"
SLUICE_PID=$PID
wait_port sluice "$SLUICE_PID" "$P_SLUICE"
log "work dir $WORK; $WS_CONNS loops x $WS_TURNS turns per target and round, $WS_ROUNDS rounds"

# one TARGET ROUND: one ws_turns run, its JSON line with the target, round and Sluice's CPU added
one() {
  local target=$1 round=$2 port=$P_SLUICE mode model=gpt-4o-mini key=$MASTER_KEY before after line
  case $target in
    direct) port=$P_MOCK mode=post key=k1 ;;
    post) mode=post ;;
    ws) mode=ws ;;
    post_tr) mode=post model=claude-sonnet-4-5 ;;
    ws_tr) mode=ws model=claude-sonnet-4-5 ;;
  esac
  before=$(cpu_s "$SLUICE_PID")
  line=$("$WS_TURNS_BIN" 127.0.0.1 "$port" "$key" "$model" "$mode" "$WS_CONNS" "$WS_TURNS") ||
    die "$target: ws_turns failed: $line"
  after=$(cpu_s "$SLUICE_PID")
  echo "${line%\}},\"target\":\"$target\",\"round\":$round,\"sluice_cpu_s\":$(sub "$after" "$before")}" >>"$WORK/runs/ws.jsonl"
  log "  $target round $round: $line"
}
TARGETS=(direct post ws post_tr ws_tr)
# A warm-up of each target (connections, the mock's and Sluice's first requests), not recorded.
for t in "${TARGETS[@]}"; do
  "$WS_TURNS_BIN" 127.0.0.1 "$([[ $t == direct ]] && echo "$P_MOCK" || echo "$P_SLUICE")" \
    "$([[ $t == direct ]] && echo k1 || echo "$MASTER_KEY")" \
    "$([[ $t == *_tr ]] && echo claude-sonnet-4-5 || echo gpt-4o-mini)" \
    "$([[ $t == ws* ]] && echo ws || echo post)" 2 3 >/dev/null || die "warm-up of $t failed"
done
for ((r = 0; r < WS_ROUNDS; r++)); do
  n=${#TARGETS[@]}
  for ((i = 0; i < n; i++)); do one "${TARGETS[$(((i + r) % n))]}" "$((r + 1))"; done
done

cmd=""
for v in WS_CONNS WS_TURNS WS_ROUNDS WS_CHUNKS WS_TTFB_MS SLUICE_WORKERS MOCK_WORKERS; do
  [[ -n ${!v+x} ]] && env | grep -q "^$v=" && cmd+="$v=${!v} "
done
cmd+="BENCH_ONLY=ws bash bench/run.sh"
"$PYTHON" - "$WORK/runs/ws.jsonl" "$BENCH_OUT" "$ROOT/bench" "$cmd" "$WS_CONNS" "$WS_TURNS" "$WS_ROUNDS" "$WS_CHUNKS" \
  "$WS_TTFB_MS" "$LOADAVG_START" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" <<'PY'
import json, sys
runs_file, out, bench_dir, cmd, conns, turns, rounds, chunks, ttfb, la0, la1, commit = sys.argv[1:13]
sys.path.insert(0, bench_dir)
import report  # write_block

runs = [json.loads(l) for l in open(runs_file) if l.strip()]
order = ["direct", "post", "ws", "post_tr", "ws_tr"]
label = {
    "direct": "direct to the mock (POST, whole conversation)",
    "post": "Sluice, POST (whole conversation), native",
    "ws": "Sluice, WebSocket (new item + previous_response_id), native",
    "post_tr": "Sluice, POST, translated to Anthropic",
    "ws_tr": "Sluice, WebSocket, translated to Anthropic",
}
agg = {}
for t in order:
    rs = [r for r in runs if r["target"] == t]
    if not rs:
        continue
    n = sum(r["turns"] for r in rs)
    med = lambda k: sorted(r[k] for r in rs)[len(rs) // 2]
    agg[t] = {
        "turns": n,
        "failed": sum(r["failed"] + r["connection_errors"] for r in rs),
        "mean": sum(r["mean_ms"] * r["turns"] for r in rs) / max(n, 1),
        "p50": med("p50_ms"), "p90": med("p90_ms"), "p99": med("p99_ms"),
        "bytes": sum(r["sent_bytes"] for r in rs) / max(n, 1),
        "cpu": sum(r["sluice_cpu_s"] for r in rs) / max(n, 1) * 1000,
    }
lines = [
    "## The Responses WebSocket mode against POST",
    "",
    f"`{cmd}` at {commit}: {conns} agent loops at once, {turns} turns each (a turn waits for the "
    f"previous answer; the conversation grows by a user item and the {chunks}-chunk answer per turn), "
    f"{rounds} interleaved rounds per target, the mock answering at once (first byte after {ttfb} ms). "
    f"Load average {la0} at the start, {la1} at the end. Latency is per turn, from sending it to its "
    "terminal event (the median round's percentile); bytes are what the client sent per turn; CPU is "
    "Sluice's, per 1000 turns.",
    "",
    "| target | turns | failed | mean ms | p50 ms | p90 ms | p99 ms | client bytes / turn | Sluice CPU s / 1000 turns |",
    "|---|---|---|---|---|---|---|---|---|",
]
for t in order:
    if t in agg:
        a = agg[t]
        cpu = "" if t == "direct" else f"{a['cpu']:.2f}"
        lines.append(f"| {label[t]} | {a['turns']} | {a['failed']} | {a['mean']:.2f} | {a['p50']:.2f} | "
                     f"{a['p90']:.2f} | {a['p99']:.2f} | {a['bytes']:.0f} | {cpu} |")
lines.append("")
if "direct" in agg:
    d = agg["direct"]
    for t in ["post", "ws", "post_tr", "ws_tr"]:
        if t in agg:
            a = agg[t]
            lines.append(f"- {label[t]}: +{a['p50'] - d['p50']:.2f} ms per turn at p50 over direct "
                         f"(+{a['mean'] - d['mean']:.2f} ms mean).")
for w, p in [("ws", "post"), ("ws_tr", "post_tr")]:
    if w in agg and p in agg:
        ratio = lambda k: f"{agg[w][k] / agg[p][k]:.2f}x" if agg[p][k] else "n/a"
        lines.append(f"- {label[w]} / POST: p50 {ratio('p50')}, CPU per turn {ratio('cpu')}, client bytes "
                     f"per turn {ratio('bytes')}.")
begin = "<!-- bench:ws:begin (written by bench/ws.sh; edit outside the markers) -->"
end = "<!-- bench:ws:end -->"
report.write_block(out, "\n".join(lines), begin, end, after="<!-- bench:streams:end -->")
print("\n".join(lines))
PY
