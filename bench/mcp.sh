#!/usr/bin/env bash
# bench/mcp.sh — what the MCP gateway adds to a tool call (`BENCH_ONLY=mcp bash bench/run.sh`,
# ~2 minutes; not in the default run). A real MCP server from npm, server-everything, runs in its
# Streamable HTTP mode; Sluice puts it behind /mcp twice: as that HTTP server ("remote") and as a
# stdio child of its own ("local"). bench/mcp_calls.mjs opens an MCP session and times tools/call
# requests of the server's `echo` tool, each from sending it to the whole answer read, through:
#   direct        server-everything's own /mcp (the floor)
#   sluice_http   Sluice's /mcp, remote__echo: relayed to the same HTTP server
#   sluice_stdio  Sluice's /mcp, local__echo: relayed to the stdio child (no direct equivalent)
# at MCP_CONCURRENCY callers at once (each waits for its answer before the next call), for
# MCP_CALLS calls per caller, in MCP_ROUNDS interleaved rounds (the order rotated per round).
# Reported: p50 / p90 / p99 / mean per target (the median round's), failures, Sluice's CPU per
# 1000 calls, and each Sluice target's added latency over direct. Its own block of BENCHMARKS.md.
# Knobs: MCP_CONCURRENCY ("1 16"), MCP_CALLS (300), MCP_ROUNDS (3), MCP_REQUEST_LOGS (true:
# every call is a request-log row, as in production), BENCH_NO_BUILD=1, BENCH_KEEP_WORK=1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
MCP_CONCURRENCY=${MCP_CONCURRENCY:-"1 16"}
MCP_CALLS=${MCP_CALLS:-300}
MCP_ROUNDS=${MCP_ROUNDS:-3}
MCP_REQUEST_LOGS=${MCP_REQUEST_LOGS:-true}
MASTER_KEY=sk-bench-master
EVERYTHING=$ROOT/tests/e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js
NODE=$(command -v node) || die "node is not installed"

bench_build sluice
[[ -x $SLUICE ]] || die "no $SLUICE"
if [[ ! -f $EVERYTHING ]]; then
  log "installing the MCP server from npm (tests/e2e)"
  (cd "$ROOT/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci in tests/e2e failed"
fi
bench_work sluice-bench-mcp
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)

read -r P_MCP P_SLUICE <<<"$(free_ports 2)"
PORT=$P_MCP start everything "$NODE" "$EVERYTHING" streamableHttp
MCP_PID=$PID
wait_port everything "$MCP_PID" "$P_MCP"
cat >"$WORK/sluice.yaml" <<YAML
server:
  listen: "127.0.0.1:$P_SLUICE"
  workers: $SLUICE_WORKERS
auth:
  master_key: "$MASTER_KEY"
store:
  url: "sqlite://$WORK/sluice.db"
  request_logs: $MCP_REQUEST_LOGS
routing:
  discovery_interval: 0s
channels: []
mcp:
  servers:
    - {name: remote, url: "http://127.0.0.1:$P_MCP/mcp"}
    - {name: local, command: ["$NODE", "$EVERYTHING", "stdio"]}
YAML
start sluice "$SLUICE" serve -c "$WORK/sluice.yaml"
SLUICE_PID=$PID
wait_port sluice "$SLUICE_PID" "$P_SLUICE"
# Both servers up before the first call.
for _ in $(seq 1 200); do
  up=$(curl -s "http://127.0.0.1:$P_SLUICE/metrics" | awk '/^sluice_mcp_server_up\{/ { s += $2 } END { print s + 0 }')
  [[ $up == 2 ]] && break
  sleep 0.1
done
[[ $up == 2 ]] || die "the MCP servers did not come up behind Sluice (up: $up); see $WORK/sluice.log"
log "work dir $WORK; $MCP_CALLS calls per caller, callers: $MCP_CONCURRENCY, $MCP_ROUNDS rounds"

calls() {  # TARGET CONCURRENCY N: one mcp_calls run's JSON line
  local url=http://127.0.0.1:$P_SLUICE/mcp key=$MASTER_KEY tool
  case $1 in
    direct) url=http://127.0.0.1:$P_MCP/mcp key=- tool=echo ;;
    sluice_http) tool=remote__echo ;;
    sluice_stdio) tool=local__echo ;;
  esac
  "$NODE" "$ROOT/bench/mcp_calls.mjs" "$url" "$key" "$tool" "$2" "$3"
}
TARGETS=(direct sluice_http sluice_stdio)
for t in "${TARGETS[@]}"; do calls "$t" 4 25 >/dev/null || die "warm-up of $t failed"; done
for c in $MCP_CONCURRENCY; do
  for ((r = 0; r < MCP_ROUNDS; r++)); do
    n=${#TARGETS[@]}
    for ((i = 0; i < n; i++)); do
      t=${TARGETS[$(((i + r) % n))]}
      before=$(cpu_s "$SLUICE_PID")
      line=$(calls "$t" "$c" "$MCP_CALLS") || die "$t: mcp_calls failed: $line"
      after=$(cpu_s "$SLUICE_PID")
      echo "${line%\}},\"target\":\"$t\",\"concurrency\":$c,\"round\":$((r + 1)),\"sluice_cpu_s\":$(sub "$after" "$before")}" >>"$WORK/runs/mcp.jsonl"
      log "  c=$c $t round $((r + 1)): $line"
    done
  done
done

cmd=""
for v in MCP_CONCURRENCY MCP_CALLS MCP_ROUNDS MCP_REQUEST_LOGS SLUICE_WORKERS; do
  env | grep -q "^$v=" && cmd+="$v=\"${!v}\" "
done
cmd+="BENCH_ONLY=mcp bash bench/run.sh"
everything_version=$("$NODE" -p "require('$ROOT/tests/e2e/node_modules/@modelcontextprotocol/server-everything/package.json').version")
"$PYTHON" - "$WORK/runs/mcp.jsonl" "$BENCH_OUT" "$ROOT/bench" "$cmd" "$MCP_CALLS" "$MCP_ROUNDS" "$LOADAVG_START" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" \
  "$everything_version" "$MCP_REQUEST_LOGS" <<'PY'
import json, sys
runs_file, out, bench_dir, cmd, calls, rounds, la0, la1, commit, version, logs = sys.argv[1:12]
sys.path.insert(0, bench_dir)
import report  # write_block

runs = [json.loads(l) for l in open(runs_file) if l.strip()]
order = ["direct", "sluice_http", "sluice_stdio"]
label = {
    "direct": "direct: server-everything's own /mcp",
    "sluice_http": "Sluice /mcp -> the same server over HTTP",
    "sluice_stdio": "Sluice /mcp -> server-everything as a stdio child",
}
lines = [
    "### MCP tool calls through the gateway (bench/mcp.sh)",
    "",
    f"`{cmd}` at {commit}: @modelcontextprotocol/server-everything {version}, `tools/call` of its `echo` "
    f"tool, {calls} calls per caller (each waits for its answer), {rounds} interleaved rounds per target; "
    f"Sluice with request logs {'on' if logs == 'true' else 'off'} (each call is a log row). Latency is per "
    "call, from sending it to the whole answer read, the median round's percentile; CPU is Sluice's per "
    f"1000 calls. Load average {la0} at the start, {la1} at the end (2 cores, shared).",
    "",
]
for conc in sorted({r["concurrency"] for r in runs}):
    agg = {}
    for t in order:
        rs = [r for r in runs if r["target"] == t and r["concurrency"] == conc]
        if not rs:
            continue
        med = lambda k: sorted(r[k] for r in rs)[len(rs) // 2]
        n = sum(r["calls"] for r in rs)
        agg[t] = {"calls": n, "failed": sum(r["failed"] for r in rs), "p50": med("p50_ms"), "p90": med("p90_ms"),
                  "p99": med("p99_ms"), "mean": sum(r["mean_ms"] * r["calls"] for r in rs) / max(n, 1),
                  "cpu": sum(r["sluice_cpu_s"] for r in rs) / max(n, 1) * 1000}
    lines += [f"{conc} caller{'s' if conc != 1 else ''} at once:", "",
              "| target | calls | failed | p50 ms | p90 ms | p99 ms | mean ms | added p50 ms | added p99 ms | Sluice CPU s / 1000 calls |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    d = agg.get("direct")
    for t in order:
        if t not in agg:
            continue
        a = agg[t]
        add50 = "" if t == "direct" or not d else f"{a['p50'] - d['p50']:+.2f}"
        add99 = "" if t == "direct" or not d else f"{a['p99'] - d['p99']:+.2f}"
        cpu = "" if t == "direct" else f"{a['cpu']:.2f}"
        lines.append(f"| {label[t]} | {a['calls']} | {a['failed']} | {a['p50']:.2f} | {a['p90']:.2f} | {a['p99']:.2f} | "
                     f"{a['mean']:.2f} | {add50} | {add99} | {cpu} |")
    lines.append("")
begin = "<!-- bench:mcp:begin (written by bench/mcp.sh; edit outside the markers) -->"
end = "<!-- bench:mcp:end -->"
report.write_block(out, "\n".join(lines).rstrip(), begin, end, after="<!-- bench:ws:end -->")
print("\n".join(lines))
PY
