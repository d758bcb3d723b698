#!/usr/bin/env python3
"""bench/scale_report.py: the block of bench/BENCHMARKS.md that bench/scale.sh measures
(thousands of concurrent streams: Sluice, nginx, haproxy and the mock reached directly).

Reads WORK/runs/*.json (bench/lib.sh's measure() records) and WORK/conns.jsonl (the upstream
connections the mock accepted during each run, and the proxy's RSS just before it); the helpers
(Agg, pct, table, write_block) are bench/report.py's."""
import argparse
import importlib.util
import json
import os
import sys
import time

BEGIN = "<!-- bench:scale:begin (written by bench/scale.sh; edit outside the markers) -->"
END = "<!-- bench:scale:end -->"
TARGETS = ("direct", "nginx", "haproxy", "before", "sluice")
PROXIES = ("nginx", "haproxy", "before", "sluice")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--report", required=True, help="bench/report.py, for its helpers")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("report", a.report)
    rep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rep)
    meta = dict(kv.split("=", 1) for kv in a.set)
    runs = rep.load(a.work)
    conns = []
    path = os.path.join(a.work, "conns.jsonl")
    if os.path.exists(path):
        conns = [json.loads(line) for line in open(path) if line.strip()]
    text, checks = build(rep, runs, conns, meta)
    rep.write_block(a.out, text, BEGIN, END)
    print(f"[bench] wrote {a.out}", file=sys.stderr)
    for name, limit, measured, ok in checks:
        print(f"[bench]   {name}: {measured} (limit {limit}): {'met' if ok else 'MISSED'}", file=sys.stderr)
    if a.strict and any(ok is False for *_, ok in checks):
        sys.exit(1)


def rss_max_mb(agg):
    v = [r.get("proxy_rss_max_kb") for r in agg.runs if r.get("proxy_rss_max_kb")]
    return max(v) / 1024 if v else None


def cpu_split(agg):
    """The proxy's user and system CPU seconds over the runs (from /proc around each run)."""
    u = [r.get("proxy_user_s") for r in agg.runs if r.get("proxy_user_s") is not None]
    k = [r.get("proxy_sys_s") for r in agg.runs if r.get("proxy_sys_s") is not None]
    if not u or not k or sum(u) + sum(k) <= 0:
        return ""
    return f"{100 * sum(u) / (sum(u) + sum(k)):.0f}% / {100 * sum(k) / (sum(u) + sum(k)):.0f}%"


def connects(conns, scenario, target):
    """The upstream connections the mock accepted in each segment, in order."""
    return [c["upstream_connects"] for c in sorted(conns, key=lambda c: c["round"])
            if c["scenario"] == scenario and c["target"] == target]


def build(rep, runs, conns, meta):
    m = meta.get
    _, agg = rep.group_runs(runs)
    levels = [int(x) for x in m("levels", "").split()]
    slow_n = int(m("slow_streams", "0") or 0)
    L, checks = [], []
    L.append(f"### Thousands of streams: Sluice, nginx and haproxy (bench/scale.sh)")
    L.append("")
    L.append(f"- Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} at commit {m('commit')}; {rep.machine()}")
    L.append(f"- Command: `{m('command')}`")
    L.append(f"- Load average (1/5/15 min) at the start: {m('loadavg_start')}, at the end: {m('loadavg_end')} "
             "(anything else running on the machine distorts the figures)")
    L.append(f"- nginx {m('nginx_version')}: `worker_processes {m('nginx_workers')}`, upstream `keepalive` = the "
             "largest stream count, `proxy_buffering off`, `access_log off` (bench/nginx_tls.conf.template without "
             f"ssl). haproxy {m('haproxy_version')}: `nbthread {m('haproxy_threads')}`, `mode http`, `http-reuse "
             "always`, no log (bench/haproxy.cfg.template). Sluice: `server.workers: "
             f"{m('sluice_workers')}` (0: one per core), `store.request_logs: false`"
             + (f", run with `{m('sluice_env')}`" if m("sluice_env") else "")
             + (f"; `before` is `{m('before')}` with the same config" if m("before") else "")
             + f". Open-file limit {m('nofile')}.")
    L.append(f"- Mock: `sluice mock --workers {m('mock_workers')}`; the delays are asked for per request "
             "(x-mock-ttfb-ms, x-mock-chunks, x-mock-chunk-interval-ms). RSS is the proxy's VmRSS summed over its "
             "processes (nginx: master + workers), sampled every 200 ms by the load generator; CPU is utime + "
             "stime over the measured requests. Upstream connections: how many connections the mock accepted "
             "during each segment (its `connections_accepted`), listed per segment; the first segment of a "
             "stream count warms the pool, a warm pool opens none.")
    L.append("")

    def a_(scenario, t):
        return agg(scenario, t)

    # ---- targets
    rows = []
    for c in levels:
        sc = f"realistic_{c}"
        s, n, h = a_(sc, "sluice"), a_(sc, "nginx"), a_(sc, "haproxy")
        if not (s and s.present):
            continue
        # 1000 streams and more: nginx's throughput too, 40 MB, and no connection opened once warm;
        # fewer: nginx's CPU and 20 MB.
        big = c >= 1000
        if n and n.present:
            if big:
                r = s.rps / n.rps if n.rps else None
                rows.append((f"{c} streams: throughput vs nginx", ">= 1.00x",
                             f"{rep.ratio(s.rps, n.rps)} ({s.rps:.0f} vs {n.rps:.0f} req/s)", r is not None and r >= 1.0))
            r = s.cpu_per_10k / n.cpu_per_10k if n.cpu_per_10k else None
            rows.append((f"{c} streams: CPU per request vs nginx", "<= 1.00x",
                         f"{rep.ratio(s.cpu_per_10k, n.cpu_per_10k)} ({rep.fmt(s.cpu_per_10k)} vs "
                         f"{rep.fmt(n.cpu_per_10k)} CPU s / 10k req)", r is not None and r <= 1.0))
        mb, limit = rss_max_mb(s), (40 if big else 20)
        rows.append((f"{c} streams: Sluice RSS (max)", f"<= {limit} MB", f"{rep.fmt(mb, 1)} MB",
                     mb is not None and mb <= limit))
        if big:
            cs = connects(conns, sc, "sluice")
            warm = cs[1:]
            rows.append((f"{c} streams: upstream connections opened once warm", "0",
                         f"{sum(warm)} (per segment: {', '.join(map(str, cs))})", bool(warm) and sum(warm) == 0))
        b = a_(sc, "before")
        if b and b.present:
            rows.append((f"{c} streams: Sluice vs before", "(reported)",
                         f"req/s {rep.ratio(s.rps, b.rps)}, CPU per request {rep.ratio(s.cpu_per_10k, b.cpu_per_10k)}, "
                         f"RSS max {rep.fmt(rss_max_mb(s), 1)} vs {rep.fmt(rss_max_mb(b), 1)} MB", None))
        if h and h.present:
            rows.append((f"{c} streams: throughput vs haproxy", "(reported)",
                         f"{rep.ratio(s.rps, h.rps)} ({s.rps:.0f} vs {h.rps:.0f} req/s)", None))
            rows.append((f"{c} streams: CPU per request vs haproxy", "(reported)",
                         f"{rep.ratio(s.cpu_per_10k, h.cpu_per_10k)}", None))
    if slow_n:
        s = a_(f"slow_{slow_n}", "sluice")
        if s and s.present:
            mb = rss_max_mb(s)
            rows.append((f"{slow_n} slow streams: every stream served", f"{slow_n} at once, 0 failed",
                         f"{s.ok} ok, {s.failed} failed", s.failed == 0 and s.ok >= slow_n))
            rows.append((f"{slow_n} slow streams: Sluice RSS (max)", "<= 130 MB", f"{rep.fmt(mb, 1)} MB",
                         mb is not None and mb <= 130))
    L.append("| target | limit | measured | result |")
    L.append("|---|---|---|---|")
    for name, limit, measured, ok in rows:
        L.append(f"| {name} | {limit} | {measured} | {'-' if ok is None else ('**met**' if ok else '**missed**')} |")
        if ok is not None:
            checks.append((name, limit, measured, ok))
    L.append("")

    # ---- realistic levels
    for c in levels:
        sc = f"realistic_{c}"
        present = [t for t in TARGETS if a_(sc, t) and a_(sc, t).present]
        if not present:
            continue
        L.append(f"#### {c} concurrent streams: {m('ttfb_ms')} ms to the first byte, {m('chunks')} chunks "
                 f"{m('chunk_ms')} ms apart; {m('seconds')} s per target in {m('segments')} interleaved segments")
        L.append("")
        n, h = a_(sc, "nginx"), a_(sc, "haproxy")
        hdr = ["target", "requests", "failed", "req/s", "/ nginx", "/ haproxy", "TTFB p50", "TTFB p99", "close p50",
               "close p99", "proxy CPU s", "CPU s / 10k req", "/ nginx", "/ haproxy", "user / system", "mock CPU s",
               "client CPU s", "RSS max MB", "upstream connections per segment"]
        out = []
        for t in present:
            x = a_(sc, t)
            proxy = t in PROXIES
            out.append([t, x.requests, x.failed, rep.fmt(x.rps, 0), rep.ratio(x.rps, n.rps if n else None),
                        rep.ratio(x.rps, h.rps if h else None), rep.fmt(x.p("ttfb", 50)), rep.fmt(x.p("ttfb", 99)),
                        rep.fmt(x.p("close", 50)), rep.fmt(x.p("close", 99)),
                        rep.fmt(x.proxy_cpu, 2) if proxy else "n/a", rep.fmt(x.cpu_per_10k) if proxy else "n/a",
                        rep.ratio(x.cpu_per_10k, n.cpu_per_10k if n else None) if proxy else "",
                        rep.ratio(x.cpu_per_10k, h.cpu_per_10k if h else None) if proxy else "",
                        cpu_split(x) if proxy else "", rep.fmt(x.mock_cpu, 2), rep.fmt(x.client_cpu, 2),
                        rep.fmt(rss_max_mb(x), 1) if proxy else "n/a",
                        ", ".join(map(str, connects(conns, sc, t))) if proxy else "n/a (the client's own)"])
        L.append(rep.table(hdr, out))
        L.append("")

    # ---- slow
    if slow_n:
        sc = f"slow_{slow_n}"
        present = [t for t in TARGETS if a_(sc, t) and a_(sc, t).present]
        if present:
            L.append(f"#### {slow_n} slow streams at once: a chunk every {m('slow_chunk_ms')} ms, {m('slow_chunks')} "
                     f"chunks each; {m('slow_seconds')} s of new streams per target, one target after another, on "
                     "processes started afresh")
            L.append("")
            hdr = ["target", "streams ok", "failed", "TTFB p50", "TTFB p99", "RSS before MB", "RSS max MB",
                   "KB per stream", "proxy CPU s", "CPU % of a core", "mock CPU s", "upstream connections"]
            out = []
            for t in present:
                x = a_(sc, t)
                proxy = t in PROXIES
                before = [c.get("rss_before_kb") for c in conns if c["scenario"] == sc and c["target"] == t]
                b = before[0] / 1024 if before and before[0] else None
                mx = rss_max_mb(x)
                per = (mx - b) * 1024 / slow_n if proxy and mx is not None and b is not None else None
                wall = sum(r.get("wall_s") or 0 for r in x.runs)
                cpu_pct = x.proxy_cpu / wall * 100 if proxy and x.proxy_cpu is not None and wall else None
                out.append([t, x.ok, x.failed, rep.fmt(x.p("ttfb", 50)), rep.fmt(x.p("ttfb", 99)),
                            rep.fmt(b, 1) if proxy else "n/a", rep.fmt(mx, 1) if proxy else "n/a",
                            rep.fmt(per, 1) if proxy else "n/a", rep.fmt(x.proxy_cpu, 2) if proxy else "n/a",
                            rep.fmt(cpu_pct, 1) if proxy else "n/a", rep.fmt(x.mock_cpu, 2),
                            ", ".join(map(str, connects(conns, sc, t))) if proxy else "n/a"])
            L.append(rep.table(hdr, out))
            L.append("")
            L.append("TTFB here is the time to the first chunk (the first of a slow stream comes at once). KB per "
                     "stream: (RSS max - RSS before) / streams, what one more open stream costs the proxy.")
            L.append("")
    return "\n".join(L), checks


if __name__ == "__main__":
    main()
