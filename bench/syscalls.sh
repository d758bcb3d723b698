#!/usr/bin/env bash
# bench/syscalls.sh — system calls per request of Sluice, nginx and haproxy relaying the same
# streams (`BENCH_ONLY=syscalls bash bench/run.sh`), and of a second Sluice binary with BEFORE=...:
# the kernel's share of a proxy's CPU (about 60 % of Sluice's at 1000 streams) follows the number
# of system calls it makes, and that number, unlike a CPU time on a shared machine, repeats from
# run to run. Each target serves COUNT streams (CONCURRENCY at once, SYSCALLS_TTFB_MS to the first
# byte, CHUNKS chunks SYSCALLS_CHUNK_MS apart) after a warm-up of two per connection, while
# `perf stat` counts the system calls its processes enter, in all and by kind (recvfrom, recvmsg,
# sendto, sendmsg, writev, epoll_wait, epoll_ctl, futex), divided by COUNT. Prints a Markdown table.
#   BEFORE=/tmp/old-sluice bash bench/syscalls.sh
# Needs perf (linux-perf) and the kernel's syscall tracepoints (root, or perf_event_paranoid <= -1).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
COUNT=${COUNT:-3000}
CONCURRENCY=${CONCURRENCY:-50}
SYSCALLS_TTFB_MS=${SYSCALLS_TTFB_MS:-100}
SYSCALLS_CHUNK_MS=${SYSCALLS_CHUNK_MS:-5}
NGINX=${NGINX:-/usr/sbin/nginx}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
MASTER_KEY=sk-bench-master
BEFORE=${BEFORE:-}
command -v perf >/dev/null || die "perf is not installed (SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh)"
perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1 ||
  die "perf cannot read the syscall tracepoints here (run as root or lower kernel.perf_event_paranoid)"
BENCH_NO_BUILD=${BENCH_NO_BUILD:-0} bench_build sluice sluice_loadgen
raise_nofile "$CONCURRENCY"
bench_work sluice-syscalls

KINDS=(recvfrom recvmsg sendto sendmsg writev epoll_wait epoll_ctl futex)
EVENTS=raw_syscalls:sys_enter
for k in "${KINDS[@]}"; do EVENTS+=",syscalls:sys_enter_$k"; done

read -r P_MOCK P_NGINX P_HAPROXY P_SLUICE P_BEFORE <<<"$(free_ports 5)"
start mock "$SLUICE" mock --listen "127.0.0.1:$P_MOCK" --workers "$MOCK_WORKERS" --chunks "$CHUNKS"
wait_port mock "$PID" "$P_MOCK"

declare -A ROOTPID=() PORT=()
mkdir -p "$WORK/nginx"
sed -e "s#@PREFIX@#$WORK/nginx#g" -e "s#@WORKERS@#auto#g" -e "s#@LISTEN@#127.0.0.1:$P_NGINX#g" \
    -e "s#@SSL@##g" -e "/ssl_certificate/d" -e "s#@UPSTREAM@#127.0.0.1:$P_MOCK#g" \
    -e "s#@KEEPALIVE@#$CONCURRENCY#g" -e "s#@CONNECTIONS@#$CONNECTIONS#g" -e "s#@NOFILE@#$((CONNECTIONS + 64))#g" \
    -e "s#@HEADER_TIMEOUT@#60s#g" "$ROOT/bench/nginx_tls.conf.template" >"$WORK/nginx/nginx.conf"
start nginx "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log"
wait_port nginx "$PID" "$P_NGINX"
ROOTPID[nginx]=$PID PORT[nginx]=$P_NGINX
sed -e "s#@THREADS@#$(nproc)#g" -e "s#@MAXCONN@#$((CONCURRENCY + 256))#g" -e "s#@LISTEN@#127.0.0.1:$P_HAPROXY#g" \
    -e "s#@UPSTREAM@#127.0.0.1:$P_MOCK#g" "$ROOT/bench/haproxy.cfg.template" >"$WORK/haproxy.cfg"
start haproxy "$HAPROXY" -db -f "$WORK/haproxy.cfg"
wait_port haproxy "$PID" "$P_HAPROXY"
ROOTPID[haproxy]=$PID PORT[haproxy]=$P_HAPROXY
sluice_config "$WORK/sluice.yaml" "$P_SLUICE" "$P_MOCK" "  header_timeout: 60s"
start sluice "$SLUICE" serve -c "$WORK/sluice.yaml"
wait_port sluice "$PID" "$P_SLUICE" 30
ROOTPID[sluice]=$PID PORT[sluice]=$P_SLUICE
TARGETS=(nginx haproxy sluice)
if [[ -n $BEFORE ]]; then
  sluice_config "$WORK/before.yaml" "$P_BEFORE" "$P_MOCK" "  header_timeout: 60s"
  start before "$BEFORE" serve -c "$WORK/before.yaml"
  wait_port before "$PID" "$P_BEFORE" 30
  ROOTPID[before]=$PID PORT[before]=$P_BEFORE
  TARGETS=(nginx haproxy before sluice)
fi

load() {  # PORT COUNT
  "$LOADGEN" --url "http://127.0.0.1:$1/v1/chat/completions" -H "Authorization: Bearer $MASTER_KEY" \
    -H "x-mock-chunks: $CHUNKS" -H "x-mock-ttfb-ms: $SYSCALLS_TTFB_MS" -H "x-mock-chunk-interval-ms: $SYSCALLS_CHUNK_MS" \
    --concurrency "$CONCURRENCY" --count "$2" |
    "$PYTHON" -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r["ok"] == r["requests"] else 1)'
}

declare -A N=()
for t in "${TARGETS[@]}"; do
  load "${PORT[$t]}" $((CONCURRENCY * 2)) || die "$t: warm-up requests failed"
  pids=$(proc_tree "${ROOTPID[$t]}" | paste -sd, -)
  perf stat -x, -e "$EVENTS" -p "$pids" -o "$WORK/perf-$t.csv" -- bash -c "$(declare -f load); LOADGEN='$LOADGEN' MASTER_KEY='$MASTER_KEY' CHUNKS='$CHUNKS' SYSCALLS_TTFB_MS='$SYSCALLS_TTFB_MS' SYSCALLS_CHUNK_MS='$SYSCALLS_CHUNK_MS' CONCURRENCY='$CONCURRENCY' PYTHON='$PYTHON' load '${PORT[$t]}' '$COUNT'" ||
    die "$t: measured requests failed"
  while IFS=, read -r value _ event _; do
    [[ $event == *sys_enter* ]] || continue
    N[$t:${event##*sys_enter_}]=$value
    [[ $event == raw_syscalls:sys_enter ]] && N[$t:all]=$value
  done <"$WORK/perf-$t.csv"
  log "$t: $(awk -v a="${N[$t:all]}" -v n="$COUNT" 'BEGIN { printf "%.1f", a / n }') system calls per request"
done

per() { awk -v a="${1:-0}" -v n="$COUNT" 'BEGIN { printf "%.1f", a / n }'; }
header="| target | all"
rule="|---|---:"
for k in "${KINDS[@]}"; do header+=" | $k"; rule+="|---:"; done
echo "System calls per request: $COUNT streams, $CONCURRENCY at once, ${SYSCALLS_TTFB_MS} ms to the first byte, $CHUNKS chunks ${SYSCALLS_CHUNK_MS} ms apart"
echo
echo "$header | / nginx |"
echo "$rule|---:|"
for t in "${TARGETS[@]}"; do
  row="| $t | $(per "${N[$t:all]}")"
  for k in "${KINDS[@]}"; do row+=" | $(per "${N[$t:$k]:-0}")"; done
  echo "$row | $(awk -v a="${N[$t:all]}" -v b="${N[nginx:all]}" 'BEGIN { printf "%.2fx", a / b }') |"
done
