#!/usr/bin/env python3
"""bench/streams_report.py: the block of bench/BENCHMARKS.md that bench/streams.sh measures
(streams that fail after the provider's 200: Sluice, nginx and haproxy with the same spare
upstream, and the mocks reached directly).

Reads WORK/runs/*.json (bench/lib.sh's measure() records) and WORK/upstream.jsonl (the requests
each mock received during each run); the helpers (Agg, pct, table, write_block) are
bench/report.py's."""
import argparse
import importlib.util
import json
import os
import sys
import time

BEGIN = "<!-- bench:streams:begin (written by bench/streams.sh; edit outside the markers) -->"
END = "<!-- bench:streams:end -->"
TARGETS = ("direct", "direct_spare", "nginx", "haproxy", "sluice")
PROXIES = ("nginx", "haproxy", "sluice")


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
    upstream = []
    path = os.path.join(a.work, "upstream.jsonl")
    if os.path.exists(path):
        upstream = [json.loads(line) for line in open(path) if line.strip()]
    text, checks = build(rep, runs, upstream, meta)
    rep.write_block(a.out, text, BEGIN, END)
    print(f"[bench] wrote {a.out}", file=sys.stderr)
    for name, limit, measured, ok in checks:
        print(f"[bench]   {name}: {measured} (limit {limit}): {'met' if ok else 'MISSED'}", file=sys.stderr)
    if a.strict and any(ok is False for *_, ok in checks):
        sys.exit(1)


def sent(agg):
    """Every request the client sent, the primed ones (one per stream, before the clock) too."""
    total = 0
    for r in agg.runs:
        res = r.get("result") or {}
        total += res.get("requests", 0) + res.get("primed", 0)
    return total


def upstream_calls(upstream, scenario, target, a="flaky", b="spare"):
    """(a, b): the requests each of the scenario's two mocks received while the target was measured."""
    rows = [u for u in upstream if u["scenario"] == scenario and u["target"] == target]
    return sum(u.get(a, 0) for u in rows), sum(u.get(b, 0) for u in rows)


def build(rep, runs, upstream, meta):
    m = meta.get
    _, agg = rep.group_runs(runs)
    L, checks = [], []
    L.append("### Streams after the 200: in-band errors, latency-aware balancing, hedging, stalls (bench/streams.sh)")
    L.append("")
    L.append(f"- Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} at commit {m('commit')}; {rep.machine()}")
    L.append(f"- Command: `{m('command')}`")
    L.append(f"- Load average (1/5/15 min) at the start: {m('loadavg_start')}, at the end: {m('loadavg_end')} "
             "(anything else running on the machine distorts the figures)")
    L.append(f"- Two mocks (`sluice mock --workers {m('mock_workers')}`): `flaky` answers every stream with a 200 "
             f"and {m('inband_rate')} of them with an overloaded error event before any content "
             "(`--error-event-rate`, `--fail-status 529`), then ends without `[DONE]`; `spare` is healthy. "
             f"Each stream: {m('chunks')} chunks {m('chunk_ms')} ms apart. nginx {m('nginx_version')} and haproxy "
             f"{m('haproxy_version')} proxy to flaky with spare as their `backup` server; Sluice has flaky at "
             "priority 1 and spare at priority 2 (`server.workers: "
             f"{m('sluice_workers')}`, `store.request_logs: false`). `direct` is flaky reached without a proxy, "
             "`direct_spare` the spare alone (the latency floor).")
    L.append(f"- {m('concurrency')} concurrent streams, {m('seconds')} s per target in {m('segments')} interleaved "
             "segments. A request succeeded when it answered 200 and its stream ended with `data: [DONE]`. "
             "Upstream calls per request: the requests both mocks received during the target's runs over the "
             "requests the client sent (primed ones included).")
    L.append("")

    rows = []
    sc = "inband"
    s, sp, d = agg(sc, "sluice"), agg(sc, "direct_spare"), agg(sc, "direct")
    if s and s.present:
        rows.append(("in-band errors: Sluice's success rate", "100%",
                     f"{s.success * 100:.2f}% ({s.ok} of {s.requests})", s.failed == 0 and s.requests > 0))
        if sp and sp.present:
            added = (s.p("close", 50) or 0) - (sp.p("close", 50) or 0)
            rows.append(("in-band errors: close p50 added over the healthy mock alone", "(reported)",
                         f"{rep.fmt(added)} ms ({rep.fmt(s.p('close', 50))} vs {rep.fmt(sp.p('close', 50))})", None))
        for peer in ("nginx", "haproxy"):
            x = agg(sc, peer)
            if x and x.present:
                rows.append((f"in-band errors: {peer}'s success rate", "(reported)",
                             f"{x.success * 100:.2f}% ({x.ok} of {x.requests})", None))
        if d and d.present:
            rows.append(("in-band errors: the flaky mock alone", "(reported)",
                         f"{d.success * 100:.2f}% ({d.ok} of {d.requests})", None))
    lat, wt = agg("balance", "sluice_latency"), agg("balance", "sluice_weighted")
    if lat and lat.present:
        f, sl = upstream_calls(upstream, "balance", "sluice_latency", "fast", "slow")
        share = f / (f + sl) if f + sl else None
        rows.append(("balancing: share to the fast channel with balance: latency", ">= 90%",
                     f"{share * 100:.1f}% ({f} of {f + sl})" if share is not None else "n/a",
                     share is not None and share >= 0.9 and lat.failed == 0))
        if wt and wt.present:
            rows.append(("balancing: TTFB p50 / p99, latency vs weighted", "(reported)",
                         f"{rep.fmt(lat.p('ttfb', 50))} / {rep.fmt(lat.p('ttfb', 99))} ms vs "
                         f"{rep.fmt(wt.p('ttfb', 50))} / {rep.fmt(wt.p('ttfb', 99))} ms", None))
    hg, nh = agg("hedge", "sluice_hedge"), agg("hedge", "sluice_nohedge")
    if hg and hg.present and nh and nh.present:
        slow_ms = float(m("slow_first_ms") or 3000)
        rate = float(m("slow_rate") or 0.2)

        def held(x):  # the share of requests that waited for a held first byte
            return sum(1 for t in x.ttfb if t >= slow_ms * 0.9) / len(x.ttfb) if x.ttfb else None

        h, w = held(hg), held(nh)
        # Hedged, a request waits only when both channels hold its first byte: rate squared.
        rows.append(("hedging: requests that waited for a held first byte, with hedge_after",
                     f"<= {2 * rate * rate * 100:.0f}% (twice {rate:g}^2: both channels held)",
                     f"{h * 100:.1f}% (without: {w * 100:.1f}%)" if h is not None and w is not None else "n/a",
                     h is not None and h <= 2 * rate * rate and hg.failed == 0))
        rows.append(("hedging: TTFB p90 / p99, with vs without", "(reported)",
                     f"{rep.fmt(hg.p('ttfb', 90))} / {rep.fmt(hg.p('ttfb', 99))} ms vs "
                     f"{rep.fmt(nh.p('ttfb', 90))} / {rep.fmt(nh.p('ttfb', 99))} ms", None))
        a, b = upstream_calls(upstream, "hedge", "sluice_hedge", "h1", "h2")
        n = sent(hg)
        rows.append(("hedging: upstream calls per request", "(reported)",
                     f"{rep.fmt((a + b) / n, 2) if n else 'n/a'} (without: "
                     f"{rep.fmt(sum(upstream_calls(upstream, 'hedge', 'sluice_nohedge', 'h1', 'h2')) / sent(nh), 2) if sent(nh) else 'n/a'})",
                     None))
    sc_, cont, err = "stall", agg("stall", "sluice_stall_continue"), agg("stall", "sluice_stall_error")
    if cont and cont.present:
        rows.append(("stalls: Sluice's success rate with on_stall: continue", "100%",
                     f"{cont.success * 100:.2f}% ({cont.ok} of {cont.requests})", cont.failed == 0 and cont.requests > 0))
        for t in ("sluice_stall_error", "nginx_s", "haproxy_s"):
            x = agg(sc_, t)
            if x and x.present:
                rows.append((f"stalls: {t}'s success rate", "(reported)",
                             f"{x.success * 100:.2f}% ({x.ok} of {x.requests})", None))
        if err and err.present:
            rows.append(("stalls: close p50 / p99, continue vs error", "(reported)",
                         f"{rep.fmt(cont.p('close', 50))} / {rep.fmt(cont.p('close', 99))} ms vs "
                         f"{rep.fmt(err.p('close', 50))} / {rep.fmt(err.p('close', 99))} ms", None))
    L.append("| target | limit | measured | result |")
    L.append("|---|---|---|---|")
    for name, limit, measured, ok in rows:
        L.append(f"| {name} | {limit} | {measured} | {'-' if ok is None else ('**met**' if ok else '**missed**')} |")
        if ok is not None:
            checks.append((name, limit, measured, ok))
    L.append("")

    present = [t for t in TARGETS if agg(sc, t) and agg(sc, t).present]
    if present:
        L.append(f"#### In-band errors: {m('inband_rate')} of flaky's streams fail before any content")
        L.append("")
        hdr = ["target", "requests", "ok", "failed", "success", "req/s", "TTFB p50", "TTFB p99", "close p50",
               "close p99", "calls to flaky", "calls to spare", "upstream calls / request", "proxy CPU s",
               "CPU s / 10k req", "failures seen by the client"]
        out = []
        for t in present:
            x = agg(sc, t)
            proxy = t in PROXIES
            f, sp_ = upstream_calls(upstream, sc, t)
            n = sent(x)
            errs = ", ".join(f"{k}: {v}" for k, v in sorted(x.errors.items())) or "-"
            out.append([t, x.requests, x.ok, x.failed, f"{x.success * 100:.2f}%" if x.success is not None else "n/a",
                        rep.fmt(x.rps, 0), rep.fmt(x.p("ttfb", 50)), rep.fmt(x.p("ttfb", 99)),
                        rep.fmt(x.p("close", 50)), rep.fmt(x.p("close", 99)), f, sp_,
                        rep.fmt((f + sp_) / n, 2) if n else "n/a",
                        rep.fmt(x.proxy_cpu, 2) if proxy else "n/a", rep.fmt(x.cpu_per_10k) if proxy else "n/a",
                        errs])
        L.append(rep.table(hdr, out))
        L.append("")
        L.append("nginx and haproxy pass flaky's 200 on at once: the error event reaches the client, which sees "
                 "a stream without `[DONE]`; their `backup` server is tried only when flaky refuses a connection "
                 "or answers an error status. Sluice holds the 200 until the first event that carries content "
                 "(src/gateway/CommitGate.cpp); an error event before it is a failed attempt, and the spare "
                 "answers instead. TTFB is the time to the first byte the client received: the mock sends its "
                 "role chunk at once and its first content one chunk interval later, and Sluice's first byte is "
                 "that content (the role chunk goes with it), so its TTFB is the others' plus one chunk interval, "
                 "and the failed attempt when there was one; the whole answer (close) is what the hold costs.")
        L.append("")
    bal = [t for t in ("nginx_rr", "haproxy_rr", "sluice_weighted", "sluice_latency")
           if agg("balance", t) and agg("balance", t).present]
    if bal:
        L.append(f"#### Latency-aware balancing: two channels {m('fast_ms')} ms and {m('slow_ms')} ms to the first byte")
        L.append("")
        hdr = ["target", "requests", "failed", "req/s", "share to fast", "TTFB p50", "TTFB p99", "close p50",
               "close p99", "proxy CPU s", "CPU s / 10k req"]
        out = []
        for t in bal:
            x = agg("balance", t)
            f, sl = upstream_calls(upstream, "balance", t, "fast", "slow")
            out.append([t, x.requests, x.failed, rep.fmt(x.rps, 0),
                        f"{f / (f + sl) * 100:.1f}%" if f + sl else "n/a",
                        rep.fmt(x.p("ttfb", 50)), rep.fmt(x.p("ttfb", 99)), rep.fmt(x.p("close", 50)),
                        rep.fmt(x.p("close", 99)), rep.fmt(x.proxy_cpu, 2), rep.fmt(x.cpu_per_10k)])
        L.append(rep.table(hdr, out))
        L.append("")
        L.append("nginx_rr and haproxy_rr: round robin over the two mocks (nginx's and haproxy's default); "
                 "sluice_weighted: both channels at priority 1, weight 1 (the default `balance: weighted`); "
                 "sluice_latency: the same with `routing.balance: latency`. The share is the fast mock's requests "
                 "over both mocks' during the target's runs.")
        L.append("")
    hd = [t for t in ("nginx_h", "sluice_nohedge", "sluice_hedge") if agg("hedge", t) and agg("hedge", t).present]
    if hd:
        L.append(f"#### Hedging: {m('slow_rate')} of first bytes held {m('slow_first_ms')} ms; "
                 f"`hedge_after: {m('hedge_after')}`")
        L.append("")
        hdr = ["target", "requests", "failed", "req/s", "TTFB p50", "TTFB p90", "TTFB p99", "close p50", "close p99",
               "upstream calls / request", "proxy CPU s", "CPU s / 10k req"]
        out = []
        for t in hd:
            x = agg("hedge", t)
            a, b = upstream_calls(upstream, "hedge", t, "h1", "h2")
            n = sent(x)
            out.append([t, x.requests, x.failed, rep.fmt(x.rps, 0), rep.fmt(x.p("ttfb", 50)), rep.fmt(x.p("ttfb", 90)),
                        rep.fmt(x.p("ttfb", 99)), rep.fmt(x.p("close", 50)), rep.fmt(x.p("close", 99)),
                        rep.fmt((a + b) / n, 2) if n else "n/a", rep.fmt(x.proxy_cpu, 2), rep.fmt(x.cpu_per_10k)])
        L.append(rep.table(hdr, out))
        L.append("")
        L.append("Both mocks hold a first byte now and then (`--slow-rate`, `--slow-ms`), each on its own. nginx_h: "
                 "round robin over the two; sluice_nohedge: one at priority 1, the other at 2; sluice_hedge: the same "
                 "with `routing.hedge_after`. A hedged request whose first attempt is held gets a second on the other "
                 "mock after hedge_after and is answered by whichever starts first; the other is cancelled. Only a "
                 "request both mocks hold (slow rate squared) still waits, which is what p99 shows.")
        L.append("")
    st = [t for t in ("nginx_s", "haproxy_s", "sluice_stall_error", "sluice_stall_continue")
          if agg("stall", t) and agg("stall", t).present]
    if st:
        L.append(f"#### Stalls: {m('stall_rate')} of stally's streams stall after {m('stall_after')} chunks; "
                 f"cut after {m('stall_timeout')} of silence")
        L.append("")
        hdr = ["target", "requests", "ok", "failed", "success", "req/s", "TTFB p50", "close p50", "close p99",
               "calls to stally", "calls to spare", "upstream calls / request", "proxy CPU s", "CPU s / 10k req",
               "failures seen by the client"]
        out = []
        for t in st:
            x = agg("stall", t)
            a, b = upstream_calls(upstream, "stall", t, "stally", "spare")
            n = sent(x)
            errs = ", ".join(f"{k}: {v}" for k, v in sorted(x.errors.items())) or "-"
            out.append([t, x.requests, x.ok, x.failed, f"{x.success * 100:.2f}%" if x.success is not None else "n/a",
                        rep.fmt(x.rps, 0), rep.fmt(x.p("ttfb", 50)), rep.fmt(x.p("close", 50)),
                        rep.fmt(x.p("close", 99)), a, b, rep.fmt((a + b) / n, 2) if n else "n/a",
                        rep.fmt(x.proxy_cpu, 2), rep.fmt(x.cpu_per_10k), errs])
        L.append(rep.table(hdr, out))
        L.append("")
        L.append("`stally` (`--stall-after`, `--stall-rate`) stops sending partway through some streams and holds "
                 "the connection open; `spare` is healthy. nginx_s and haproxy_s cut a silent upstream after the same "
                 "time (`proxy_read_timeout`, `timeout server`) and the client gets a stream without `[DONE]`: their "
                 "`backup` is not tried once the answer began. sluice_stall_error: `routing.stall_timeout` with "
                 "`on_stall: error` (the stream ends with an error event); sluice_stall_continue: the same with "
                 "`on_stall: continue`: the spare is asked for the rest of the answer, with the text already sent as "
                 "the assistant's partial turn, and the client reads one whole answer. Its close p99 is the stall "
                 "timeout plus the continuation. Sluice sends fewer requests to stally than nginx and haproxy do: "
                 "each stall counts against the channel, and its circuit breaker moves traffic to the spare for a "
                 "while. Reading every stream through the codecs (what continue needs) costs CPU: compare the two "
                 "Sluice rows' CPU per 10k. A request succeeded when it answered 200 and ended with "
                 "`data: [DONE]` and no error chunk.")
        L.append("")
    return "\n".join(L), checks


if __name__ == "__main__":
    main()
