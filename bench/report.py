#!/usr/bin/env python3
"""Turn the records collected by bench/run.sh into a markdown section of
bench/BENCHMARKS.md (stdlib only).

    report.py --work DIR --out bench/BENCHMARKS.md [--set key=value ...] [--strict]

DIR/runs/*.json each hold one load-generator run:
    {"scenario", "target", "round", "wall_s", "machine_cpu_s", "proxy_cpu_s", "mock_cpu_s",
     "proxy_hwm_kb", "proxy_rss_kb", "result": <sluice_loadgen JSON or null>}
DIR/translate_bench.json (optional) is the Google Benchmark JSON of build/sluice_translate_bench.
DIR/store_bench.jsonl (optional) holds one JSON line per run of build/sluice_store_bench, and
DIR/logs_rows.json (optional) the logging Sluice's request-log counters after scenario 6.
The section between the BEGIN/END markers is replaced; the rest of the file is kept.
Scenario 5 (records with scenario "translation", and the micro benchmarks) goes into its own
block between the TR_BEGIN/TR_END markers, so that a run of only that scenario
(BENCH_ONLY=translation) replaces that block and keeps the rest. Scenario 6 (records with
scenario "logs", and the store benchmark) likewise goes between LOGS_BEGIN/LOGS_END.
The prompt-injection detector's figures (bench/screen.sh: DIR/screen_eval.json from
build/sluice_train_screen --eval, DIR/screen_cli_eval.json from `sluice screen` on the same texts,
DIR/screen_bench.json from build/sluice_screen_bench) go between SCREEN_BEGIN/SCREEN_END.
The protect-and-save figures (bench/protect.sh: records with scenario "protect", "protect_clean"
and "protect_cache_*", DIR/protect_sanity.json, DIR/protect_counters.json, DIR/protect_micro.json
from build/sluice_protect_bench, DIR/cache_fill.json, DIR/cache_checks.jsonl) go between
PROTECT_BEGIN/PROTECT_END.
The TLS figures (bench/tls.sh: records with scenario "tls_keepalive_<streams>" and
"tls_connect_<streams>", targets nginx / sluice / nginx_tls / sluice_tls, each result's "watch"
CPU already copied into the record by measure(); DIR/tls_sanity.jsonl, DIR/tls_hwm.jsonl) go
between TLS_BEGIN/TLS_END.
"""
import argparse
import datetime
import glob
import json
import math
import os
import platform
import statistics
import sys

BEGIN = "<!-- bench:begin (written by bench/report.py; edit outside the markers) -->"
END = "<!-- bench:end -->"
TR_BEGIN = "<!-- bench:translation:begin (written by bench/report.py; edit outside the markers) -->"
TR_END = "<!-- bench:translation:end -->"
TR_TARGET = 0.9  # translated streaming throughput / passthrough
LOGS_BEGIN = "<!-- bench:logs:begin (written by bench/report.py; edit outside the markers) -->"
LOGS_END = "<!-- bench:logs:end -->"
LOGS_TARGET = 0.95  # throughput with request logs / without
SCREEN_BEGIN = "<!-- bench:screen:begin (written by bench/report.py; edit outside the markers) -->"
SCREEN_END = "<!-- bench:screen:end -->"
SCREEN_P99_TARGET_US = 100.0  # the detector on a 2 KB prompt, and on an 8 KB one (issue 21)
PROTECT_BEGIN = "<!-- bench:protect:begin (written by bench/report.py; edit outside the markers) -->"
PROTECT_END = "<!-- bench:protect:end -->"
PROTECT_TARGET = 0.9  # streaming throughput with redaction + screening on / all off
TLS_BEGIN = "<!-- bench:tls:begin (written by bench/report.py; edit outside the markers) -->"
TLS_END = "<!-- bench:tls:end -->"
TLS_RPS_TARGET = 0.9  # Sluice over TLS / nginx over TLS, streaming throughput
TLS_CPU_TARGET = 1.5  # Sluice over TLS / nginx over TLS, proxy CPU per request

HEADER = """# Benchmarks

Figures from `make bench` (`bash bench/run.sh`): the mock provider reached
directly, through nginx (`proxy_pass` with upstream keep-alive and buffering off:
the floor for a proxy hop) and through Sluice, all on the same machine in one run.
The load generator is `build/sluice_loadgen` (bench/loadgen.cpp: one thread,
keep-alive connections). TTFB is the time to the first byte of the response body
(the first SSE chunk); close is the time to the end of the response; tail is
close minus TTFB. On a small machine the client, the mock and the proxy compete
for the same cores, so their CPU seconds are listed beside the figures.

TLS (`BENCH_ONLY=tls bash bench/run.sh`, bench/tls.sh, also the last step of
`make bench`; its own block below): Sluice terminating TLS against nginx
terminating TLS (`listen ... ssl`, bench/nginx_tls.conf.template) with the same
certificate, made for the run by openssl (a throwaway CA and an ECDSA P-256
server certificate for 127.0.0.1), both proxying to the same `sluice mock`, and
plain-HTTP nginx and plain Sluice in the same run so that what TLS itself costs
shows. At 50 and at 2000 concurrent kept-alive streams (every connection primed
with one unrecorded request, then the four targets in interleaved segments):
req/s, TTFB / close p50 and p99, the proxy's CPU seconds per 10k requests (read
by the load generator over its measured requests only) and its RSS; then with a
new connection per request (a full TLS handshake each time). Targets: Sluice over
TLS >= 0.90x nginx-over-TLS throughput and <= 1.5x its CPU per request. About 4
minutes; knobs (TLS_SECONDS, TLS_CONCURRENCY, TLS_KEY=rsa, ...) in bench/tls.sh.

"""


# ----------------------------------------------------------------- helpers

def pct(values, p):
    """Nearest-rank percentile (the same definition as the load generator)."""
    if not values:
        return None
    v = sorted(values)
    k = max(1, min(len(v), math.ceil(p / 100.0 * len(v))))
    return v[k - 1]


def fmt(x, nd=3, unit=""):
    if x is None:
        return "n/a"
    return f"{x:.{nd}f}{unit}"


def ratio(a, b, nd=2):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.{nd}f}x"


def delta(a, b, nd=3):
    if a is None or b is None:
        return "n/a"
    return f"{a - b:+.{nd}f}"


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


class Agg:
    """Several runs of one scenario against one target, merged."""

    def __init__(self, runs):
        self.runs = runs
        res = [r["result"] for r in runs if r.get("result")]
        self.present = bool(res)
        self.requests = sum(r["requests"] for r in res)
        self.ok = sum(r["ok"] for r in res)
        self.failed = sum(r["failed"] for r in res)
        self.elapsed = sum(r["elapsed_s"] for r in res)
        self.body_bytes = sum(r.get("body_bytes", 0) for r in res)
        self.by_status = {}
        self.errors = {}
        for r in res:
            for k, v in r.get("by_status", {}).items():
                self.by_status[k] = self.by_status.get(k, 0) + v
            for k, v in r.get("errors", {}).items():
                self.errors[k] = self.errors.get(k, 0) + v
        self.ttfb, self.close, self.tail = [], [], []
        for r in res:
            s = r.get("samples") or {}
            t, c = s.get("ttfb_ms", []), s.get("close_ms", [])
            self.ttfb += t
            self.close += c
            self.tail += [b - a for a, b in zip(t, c)]
        self.client_cpu = sum(r.get("client_cpu_s", 0) for r in res) if res else None
        self.mock_cpu = sum(r["mock_cpu_s"] for r in runs if r.get("mock_cpu_s") is not None) if runs else None
        pc = [r["proxy_cpu_s"] for r in runs if r.get("proxy_cpu_s") is not None]
        self.proxy_cpu = sum(pc) if pc else None
        hw = [r["proxy_hwm_kb"] for r in runs if r.get("proxy_hwm_kb")]
        self.hwm_kb = max(hw) if hw else None
        mc = [r["machine_cpu_s"] for r in runs if r.get("machine_cpu_s") is not None]
        self.machine_cpu = sum(mc) if mc else None

    @property
    def other_cpu(self):
        """CPU the machine spent outside the proxy, the mock and the client (other work,
        kernel threads such as writeback), or None."""
        if self.machine_cpu is None or self.proxy_cpu is None or self.mock_cpu is None or self.client_cpu is None:
            return None
        return self.machine_cpu - self.proxy_cpu - self.mock_cpu - self.client_cpu

    @property
    def rps(self):
        return self.requests / self.elapsed if self.elapsed else None

    def p(self, which, q):
        return pct(getattr(self, which), q)

    @property
    def success(self):
        return self.ok / self.requests if self.requests else None

    @property
    def cpu_per_10k(self):
        if self.proxy_cpu is None or not self.requests:
            return None
        return self.proxy_cpu / self.requests * 10000

    @property
    def bytes_per_req(self):
        return self.body_bytes / self.ok if self.ok else None

    def statuses(self):
        return ", ".join(f"{k}: {v}" for k, v in sorted(self.by_status.items())) or "-"


def load(work):
    runs = []
    for f in sorted(glob.glob(os.path.join(work, "runs", "*.json"))):
        with open(f) as fh:
            try:
                runs.append(json.load(fh))
            except json.JSONDecodeError as e:
                print(f"report.py: skipping {f}: {e}", file=sys.stderr)
    return runs


def machine():
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    mem = f", {int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                    break
    except OSError:
        pass
    return f"nproc {os.cpu_count()}, {model}{mem}, Linux {platform.release()}"


# ----------------------------------------------------------------- report

def group_runs(runs):
    """The records by (scenario, target), and agg(scenario, target): their Agg, or None."""
    by = {}
    for r in runs:
        by.setdefault((r["scenario"], r["target"]), []).append(r)

    def agg(s, t):
        rs = by.get((s, t))
        return Agg(rs) if rs else None

    return by, agg


def build(runs, meta):
    by, agg = group_runs(runs)

    targets = [t for t in ("direct", "nginx", "sluice") if ("ping", t) in by or ("throughput", t) in by]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    m = meta.get
    L = []
    L.append(f"## Latest run: {now}\n")
    L.append(f"- Machine: {machine()}")
    L.append(f"- Command: `{m('command', 'make bench')}` (runs `bash bench/run.sh`)")
    nw = m("nginx_workers", "auto")
    nwn = m("nginx_workers_n")
    L.append(f"- nginx {m('nginx_version', '?')}: `worker_processes {nw}`"
             + (f" (= {nwn} workers)" if nwn else "")
             + ", upstream `keepalive 64`, `proxy_buffering off`, `proxy_request_buffering off`")
    sw = m("sluice_workers", "0")
    L.append(f"- Sluice (`sluice version`: {m('sluice_version', '?')}): `server.workers: {sw}`"
             + (" (one per core)" if sw == "0" else "")
             + f", `store.request_logs: {m('sluice_request_logs', 'false')}` (nginx: `access_log off`)")
    L.append(f"- Mock: `{m('mock_cmd', 'sluice mock')}`; every request asks for model "
             f"`{m('model', '?')}`, `stream: true`, with `x-mock-chunks: {m('chunks', '?')}`")
    if m("loadavg_start"):
        L.append(f"- Load average (1/5/15 min) before the run: {m('loadavg_start')}, after: "
                 f"{m('loadavg_end', '?')} (anything else running on the machine distorts the figures)")
    L.append("- Latencies in milliseconds. Ratios are target / direct and target / nginx. "
             "CPU seconds are utime+stime from /proc over the scenario (client: getrusage).")
    L.append("")

    ping = {t: agg("ping", t) for t in targets}
    thr = {t: agg("throughput", t) for t in targets}
    fo = {t: agg("failover", t) for t in ("direct_healthy", "direct_failing", "sluice_failover")}
    fo = {k: v for k, v in fo.items() if v}

    # --- targets
    checks = []
    s_thr, n_thr = thr.get("sluice"), thr.get("nginx")
    s_png, n_png, d_png = ping.get("sluice"), ping.get("nginx"), ping.get("direct")

    def check(name, limit, measured, ok):
        checks.append((name, limit, measured, "n/a (not run)" if ok is None else ("**met**" if ok else "**missed**")))

    if s_thr and n_thr and s_thr.rps and n_thr.rps:
        r = s_thr.rps / n_thr.rps
        check("throughput vs nginx", ">= 0.90x", f"{r:.2f}x ({s_thr.rps:.0f} vs {n_thr.rps:.0f} req/s)", r >= 0.9)
    else:
        check("throughput vs nginx", ">= 0.90x", "n/a", None)
    if s_thr and n_thr and s_thr.cpu_per_10k and n_thr.cpu_per_10k:
        r = s_thr.cpu_per_10k / n_thr.cpu_per_10k
        check("proxy CPU per request vs nginx", "<= 1.5x",
              f"{r:.2f}x ({s_thr.cpu_per_10k:.2f} vs {n_thr.cpu_per_10k:.2f} CPU s / 10k req)", r <= 1.5)
    else:
        check("proxy CPU per request vs nginx", "<= 1.5x", "n/a", None)
    if s_png and n_png and d_png and s_png.close and n_png.close and d_png.close:
        s_add = s_png.p("close", 50) - d_png.p("close", 50)
        n_add = n_png.p("close", 50) - d_png.p("close", 50)
        check("ping: close p50 added over direct", "<= nginx's + 0.1 ms",
              f"{s_add:+.3f} ms (nginx {n_add:+.3f} ms)", s_add <= n_add + 0.1)
        s_tail = s_png.p("tail", 50) - d_png.p("tail", 50)
        n_tail = n_png.p("tail", 50) - d_png.p("tail", 50)
        check("ping: tail p50 added over direct", "<= 0.2 ms",
              f"{s_tail:+.3f} ms (nginx {n_tail:+.3f} ms)", s_tail <= 0.2)
    else:
        check("ping: close p50 added over direct", "<= nginx's + 0.1 ms", "n/a", None)
        check("ping: tail p50 added over direct", "<= 0.2 ms", "n/a", None)
    if s_thr and s_thr.hwm_kb:
        mb = s_thr.hwm_kb / 1024
        check(f"Sluice peak RSS at {m('concurrency', '50')} streams", "<= 30 MB", f"{mb:.1f} MB", mb <= 30)
    else:
        check(f"Sluice peak RSS at {m('concurrency', '50')} streams", "<= 30 MB", "n/a", None)
    sf, dh = fo.get("sluice_failover"), fo.get("direct_healthy")
    if sf and dh and sf.requests:
        want = int(m("failover_count", sf.requests))
        check("failover successes", f"{want}/{want}", f"{sf.ok}/{sf.requests}", sf.ok == want and sf.requests == want)
        sp, dp = sf.p("close", 95), dh.p("close", 95)
        if sp is not None and dp is not None:
            check("failover close p95 vs healthy direct p95", "<= +5 ms",
                  f"{sp - dp:+.3f} ms ({sp:.3f} vs {dp:.3f})", sp - dp <= 5)
        else:
            check("failover close p95 vs healthy direct p95", "<= +5 ms", "n/a", False)
    else:
        check("failover successes", f"{m('failover_count', '2000')}/{m('failover_count', '2000')}", "n/a", None)
        check("failover close p95 vs healthy direct p95", "<= +5 ms", "n/a", None)

    L.append("### Targets\n")
    L.append(table(["target", "limit", "measured", "result"], checks))
    L.append("")

    # --- 1. ping
    L.append(f"### 1. Ping: {m('ping_rounds', '?')} rounds x ({m('ping_warmup', '?')} warm-up + "
             f"{m('ping_count', '?')} sequential streams on one connection), rounds interleaved, samples merged\n")
    d = ping.get("direct")
    n = ping.get("nginx")
    rows = []
    for t in targets:
        a = ping.get(t)
        if not a:
            continue
        rows.append([
            t, f"{a.ok}/{a.requests}",
            fmt(a.p("ttfb", 50)), fmt(a.p("ttfb", 95)), fmt(a.p("close", 50)), fmt(a.p("close", 95)),
            fmt(a.p("tail", 50)),
            delta(a.p("close", 50), d.p("close", 50)) if d else "n/a",
            delta(a.p("tail", 50), d.p("tail", 50)) if d else "n/a",
            ratio(a.p("close", 50), d.p("close", 50)) if d else "n/a",
            ratio(a.p("close", 50), n.p("close", 50)) if n else "n/a",
            fmt(a.client_cpu, 3), fmt(a.mock_cpu, 2), fmt(a.proxy_cpu, 2),
        ])
    L.append(table(["target", "ok", "TTFB p50", "TTFB p95", "close p50", "close p95", "tail p50",
                    "close p50 added", "tail p50 added", "close p50 / direct", "close p50 / nginx",
                    "client CPU s", "mock CPU s", "proxy CPU s"], rows))
    L.append("")

    # --- 2. throughput
    L.append(f"### 2. Throughput: {m('concurrency', '?')} concurrent streams, {m('chunks', '?')} chunks each, "
             f"no upstream delay, {m('throughput_seconds', '?')} s per target "
             f"({m('throughput_segments', '?')} interleaved segments)\n")
    d, n = thr.get("direct"), thr.get("nginx")
    rows = []
    for t in targets:
        a = thr.get(t)
        if not a:
            continue
        rows.append([
            t, a.requests, a.failed, fmt(a.rps, 0),
            ratio(a.rps, d.rps) if d else "n/a", ratio(a.rps, n.rps) if n else "n/a",
            fmt(a.p("ttfb", 50)), fmt(a.p("close", 50)), fmt(a.p("close", 99)),
            ratio(a.p("close", 50), d.p("close", 50)) if d else "n/a",
            ratio(a.p("close", 50), n.p("close", 50)) if n else "n/a",
            fmt(a.client_cpu, 2), fmt(a.mock_cpu, 2), fmt(a.proxy_cpu, 2),
        ])
    L.append(table(["target", "requests", "failed", "req/s", "/ direct", "/ nginx", "TTFB p50",
                    "close p50", "close p99", "close p50 / direct", "close p50 / nginx",
                    "client CPU s", "mock CPU s", "proxy CPU s"], rows))
    L.append("")

    # --- 3. resources
    L.append("### 3. Proxy resources (from the throughput runs)\n")
    rows = []
    for t in targets:
        a = thr.get(t)
        if not a or t == "direct":
            continue
        rows.append([
            t, fmt(a.hwm_kb / 1024 if a.hwm_kb else None, 1), fmt(a.proxy_cpu, 2), fmt(a.cpu_per_10k, 3),
            ratio(a.cpu_per_10k, n.cpu_per_10k) if n else "n/a",
            fmt(a.bytes_per_req, 0),
        ])
    if d:
        rows.append(["(direct: body bytes per stream)", "", "", "", "", fmt(d.bytes_per_req, 0)])
    L.append(table(["proxy", "peak RSS MB (VmHWM)", "CPU s", "CPU s / 10k req", "/ nginx",
                    "body bytes / stream"], rows))
    L.append("")
    L.append("nginx's RSS and CPU are master + workers summed. Peak RSS is the process's VmHWM "
             "after the throughput segments (its peak since start).")
    L.append("")

    # --- 4. failover
    L.append(f"### 4. Failover: {m('failover_count', '?')} requests at concurrency "
             f"{m('failover_concurrency', '?')}; Sluice with two equal-priority channels, one mock at "
             f"`--fail-rate {m('fail_rate', '?')} --fail-status {m('fail_status', '?')}`, "
             f"`routing.max_retries: 2`\n")
    rows = []
    names = {"direct_healthy": "direct, healthy mock (reference)",
             "direct_failing": "direct, failing mock",
             "sluice_failover": "sluice, healthy + failing"}
    for k in ("direct_healthy", "direct_failing", "sluice_failover"):
        a = fo.get(k)
        if not a:
            continue
        rows.append([
            names[k], a.requests, a.ok, fmt(100 * a.success if a.success is not None else None, 2, " %"),
            a.statuses(), fmt(a.p("ttfb", 95)), fmt(a.p("close", 50)), fmt(a.p("close", 95)),
            delta(a.p("close", 95), dh.p("close", 95)) if dh else "n/a",
            fmt(a.client_cpu, 2), fmt(a.mock_cpu, 2), fmt(a.proxy_cpu, 2),
        ])
    L.append(table(["run", "requests", "ok", "success", "statuses", "TTFB p95", "close p50", "close p95",
                    "close p95 - healthy direct", "client CPU s", "mock CPU s (both)", "proxy CPU s"], rows))
    L.append("")
    errs = {k: a.errors for k, a in list(ping.items()) + list(thr.items()) + list(fo.items()) if a and a.errors}
    if errs:
        L.append("Errors seen: " + "; ".join(f"{k}: " + ", ".join(f"{e} x{c}" for e, c in v.items())
                                              for k, v in errs.items()))
        L.append("")
    return "\n".join(L), checks


# ----------------------------------------------------------------- 5. translation

def load_micro(work):
    path = os.path.join(work, "translate_bench.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        print(f"report.py: skipping {path}: {e}", file=sys.stderr)
        return None


def to_ns(value, unit):
    return value * {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}.get(unit, 1.0)


def micro_table(micro):
    """Rows for the micro benchmarks; times are CPU time per iteration."""
    rows, by_name = [], {}
    for b in micro.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        name = b.get("name", "?")
        if b.get("error_occurred"):
            rows.append([f"`{name}`", "error: " + str(b.get("error_message", "?")), "", "", "", "", ""])
            continue
        ns = to_ns(b.get("cpu_time", 0.0), b.get("time_unit", "ns"))
        events = b.get("events")
        in_b, out_b = b.get("in_bytes"), b.get("out_bytes")
        per_event = ns / events if events else None
        mbs = in_b / ns * 1e3 if in_b and ns else None  # bytes/ns * 1e9 / 1e6
        by_name[name] = {"ns": ns, "per_event": per_event, "events": events}
        kind = name.split("/", 1)[0]
        per = {"request": "request", "response": "response", "json": "request",
               "stream": "stream", "passthrough": "stream"}.get(kind, "iteration")
        rows.append([
            f"`{name}`", f"{ns:,.0f} ns / {per}", f"{int(events)}" if events else "",
            fmt(per_event, 0) if per_event else "", fmt(mbs, 0),
            f"{int(in_b)}" if in_b is not None else "", f"{int(out_b)}" if out_b is not None else "",
        ])
    return rows, by_name


def build_translation(runs, micro, meta):
    m = meta.get
    by = {}
    for r in runs:
        if r.get("scenario") == "translation":
            by.setdefault(r["target"], []).append(r)
    pas = Agg(by["passthrough"]) if by.get("passthrough") else None
    trn = Agg(by["translated"]) if by.get("translated") else None
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    model, tmodel = m("model", "gpt-4o-mini"), m("translate_model", "claude-sonnet-4-5")
    L = []
    L.append("### 5. Translation: OpenAI client -> Anthropic upstream vs passthrough\n")
    L.append(f"- Run: {now}, `{m('command', 'make bench')}`; {machine()}")
    if m("loadavg_tr_start"):
        L.append(f"- Load average (1/5/15 min) before scenario 5: {m('loadavg_tr_start')}, after the micro "
                 f"benchmarks: {m('loadavg_tr_end', '?')}")
    L.append(f"- One Sluice (`server.workers: {m('sluice_workers', '0')}`) with two channels on the same mock: "
             f"`{{name: oa, type: openai, models: [{model}]}}` and "
             f"`{{name: an, type: anthropic, models: [{tmodel}]}}`. The load generator sends the same OpenAI "
             f"chat request (`stream: true`, `x-mock-chunks: {m('chunks', '?')}`) on {m('concurrency', '?')} "
             f"concurrent streams to `{model}` (passthrough: OpenAI upstream, the stream filtered as it is) "
             f"and to `{tmodel}` (translated: the request to Anthropic Messages, the Anthropic SSE stream back "
             f"to OpenAI chunks ending in `data: [DONE]`, which the load generator checks), "
             f"{m('translation_seconds', '?')} s per path in {m('translation_segments', '?')} interleaved "
             "segments (alternating which path goes first). Sluice CPU is the whole process (both paths "
             "share it, never at the same time). On a shared 2-core machine the req/s ratio moves with "
             "whatever else runs; CPU s per request is the steadier figure.")
    L.append("")
    checks = []
    if pas and trn and pas.rps and trn.rps:
        r = trn.rps / pas.rps
        checks.append(("translation: translated / passthrough streaming throughput", f">= {TR_TARGET:.2f}x",
                       f"{r:.2f}x ({trn.rps:.0f} vs {pas.rps:.0f} req/s)", "**met**" if r >= TR_TARGET else "**missed**"))
    else:
        checks.append(("translation: translated / passthrough streaming throughput", f">= {TR_TARGET:.2f}x",
                       "n/a", "n/a (not run)"))
    if pas and trn and pas.cpu_per_10k and trn.cpu_per_10k:
        checks_cpu = f"{trn.cpu_per_10k / pas.cpu_per_10k:.2f}x ({trn.cpu_per_10k:.2f} vs {pas.cpu_per_10k:.2f} CPU s / 10k req)"
    else:
        checks_cpu = "n/a"
    L.append(table(["target", "limit", "measured", "result"],
                   checks + [("translation: Sluice CPU per request, translated / passthrough", "(reported)",
                              checks_cpu, "-")]))
    L.append("")
    rows = []
    for name, label, a in (("passthrough", f"`{model}` (oa, openai)", pas), ("translated", f"`{tmodel}` (an, anthropic)", trn)):
        if not a:
            continue
        rows.append([
            name, label, a.requests, a.failed, fmt(a.rps, 0), ratio(a.rps, pas.rps) if pas else "n/a",
            fmt(a.p("ttfb", 50)), fmt(a.p("ttfb", 99)), fmt(a.p("close", 50)), fmt(a.p("close", 99)),
            fmt(a.proxy_cpu, 2), fmt(a.cpu_per_10k, 3),
            ratio(a.cpu_per_10k, pas.cpu_per_10k) if pas else "n/a",
            fmt(a.mock_cpu, 2), fmt(a.client_cpu, 2), fmt(a.bytes_per_req, 0),
        ])
    if rows:
        L.append(table(["path", "model (channel)", "requests", "failed", "req/s", "/ passthrough", "TTFB p50",
                        "TTFB p99", "close p50", "close p99", "Sluice CPU s", "Sluice CPU s / 10k req",
                        "/ passthrough", "mock CPU s", "client CPU s", "body bytes / stream"], rows))
        L.append("")
        errs = {k: a.errors for k, a in (("passthrough", pas), ("translated", trn)) if a and a.errors}
        if errs:
            L.append("Errors seen: " + "; ".join(f"{k}: " + ", ".join(f"{e} x{c}" for e, c in v.items())
                                                  for k, v in errs.items()))
            L.append("")
    else:
        L.append("(no end-to-end figures: the translation Sluice did not run)\n")

    L.append(f"#### Translation micro benchmarks (`build/sluice_translate_bench`, "
             f"`--benchmark_min_time={m('translate_bench_min_time', '?')}`)\n")
    if micro:
        ctx = micro.get("context", {})
        rows, by_name = micro_table(micro)
        L.append("CPU time per iteration. `request/A->B`: translateRequest of a client request in format A "
                 "(tests/fixtures/providers/ `openai_request_full.json` / `anthropic_request_full.json`, system "
                 "prompt, 6 turns, plus a second tool: 2 tools) for an upstream in format B; `response/U->C`: "
                 "translateResponse of a whole upstream response in format U for a client in format C; "
                 "`stream/U->C/INPUT`: a StreamTranslator made per stream and fed the upstream stream one event "
                 "per feed() call, then finish(); `passthrough/...`: providers::openai::StreamFilter fed an "
                 "OpenAI stream the same way (the passthrough path); `json/...`: Boost.JSON parse + serialize "
                 "of the same request (a floor for any JSON rewrite). `mock_text20` streams are what "
                 "`sluice mock --chunks 20` sends (bench/data/), the others are fixtures. MB/s = upstream "
                 "(input) bytes per CPU second.")
        L.append("")
        L.append(table(["benchmark", "CPU time", "events", "ns / event", "MB/s (input)", "bytes in", "bytes out"],
                       rows))
        L.append("")
        t, p = by_name.get("stream/anthropic->openai/mock_text20"), by_name.get("passthrough/openai/mock_text20")
        if t and p:
            L.append(f"The same 20-chunk text stream costs {t['ns'] / 1000:.1f} us translated from Anthropic "
                     f"({t['per_event']:.0f} ns per upstream event) against {p['ns'] / 1000:.1f} us passed through "
                     f"({p['per_event']:.0f} ns per event): {t['ns'] / p['ns']:.1f}x, "
                     f"{(t['ns'] - p['ns']) / 1000:+.1f} us of CPU per stream, "
                     f"{(t['ns'] - p['ns']) * 1e4 / 1e9:+.3f} CPU s per 10k streams.")
            L.append("")
        if ctx.get("library_build_type") == "debug":
            L.append("(Google Benchmark prints \"Library was built as DEBUG\": that is Debian's libbenchmark "
                     "itself; the code measured is Sluice's build, "
                     f"{ctx.get('host_name', '')} load average at start "
                     f"{', '.join(f'{x:.2f}' for x in ctx.get('load_avg', []))}.)")
            L.append("")
    else:
        L.append("(not run: no build/sluice_translate_bench output)\n")
    return "\n".join(L), checks


# ----------------------------------------------------------------- 6. request logs

def load_store_bench(work):
    path = os.path.join(work, "store_bench.jsonl")
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                print(f"report.py: skipping a line of {path}: {e}", file=sys.stderr)
    return out


def load_json(work, name):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        print(f"report.py: skipping {path}: {e}", file=sys.stderr)
        return None


def median_run(rs):
    """The run with the median rows/s (the middle one of an odd count, the lower of an even)."""
    rs = sorted(rs, key=lambda r: r.get("rows_per_s", 0))
    return rs[(len(rs) - 1) // 2] if rs else None


def build_logs(runs, store_runs, counters, meta):
    m = meta.get
    by = {}
    for r in runs:
        if r.get("scenario") == "logs":
            by.setdefault(r["target"], []).append(r)
    off = Agg(by["logs_off"]) if by.get("logs_off") else None
    on = Agg(by["logs_on"]) if by.get("logs_on") else None
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = []
    L.append("### 6. Request logs: store.request_logs true vs false\n")
    L.append(f"- Run: {now}, `{m('command', 'make bench')}`; {machine()}")
    if m("loadavg_logs_start"):
        L.append(f"- Load average (1/5/15 min) before scenario 6: {m('loadavg_logs_start')}, after the store "
                 f"benchmark: {m('loadavg_logs_end', '?')}")
    L.append(f"- Two Sluices (`server.workers: {m('sluice_workers', '0')}`) from the same config as section 2's "
             "(one openai channel on the mock, requests with the master key), one with `store.request_logs: false`, "
             "one with `true` writing to a fresh SQLite file (WAL). The load generator sends section 2's load "
             f"({m('concurrency', '?')} concurrent streams, {m('chunks', '?')} chunks each) to each, "
             f"{m('logs_seconds', '?')} s per configuration in {m('logs_segments', '?')} interleaved segments "
             "(alternating which goes first). Each segment's Sluice CPU is read 0.5 s after its load ends, so "
             "the last log batch counts too. On a shared 2-core machine every CPU cycle the log writer takes is "
             "one the proxy, the mock and the client do not get: the req/s ratio is the target. It also moves "
             "with whatever else runs (the other CPU column); requests per CPU second of the three processes "
             "does not, and is the steadier figure.")
    L.append("")
    checks = []
    if off and on and off.rps and on.rps:
        r = on.rps / off.rps
        checks.append(("request logs: throughput with / without", f">= {LOGS_TARGET:.2f}x",
                       f"{r:.2f}x ({on.rps:.0f} vs {off.rps:.0f} req/s)",
                       "**met**" if r >= LOGS_TARGET else "**missed**"))
    else:
        checks.append(("request logs: throughput with / without", f">= {LOGS_TARGET:.2f}x", "n/a", "n/a (not run)"))
    def bench_cpu_per_req(a):
        """CPU seconds of Sluice + mock + client per request: what a request costs the machine,
        whatever else ran beside."""
        if a.proxy_cpu is None or a.mock_cpu is None or a.client_cpu is None or not a.requests:
            return None
        return (a.proxy_cpu + a.mock_cpu + a.client_cpu) / a.requests

    bon, boff = (bench_cpu_per_req(on), bench_cpu_per_req(off)) if off and on else (None, None)
    if bon and boff:
        checks_total = (f"{boff / bon:.2f}x ({bon * 1e6:.1f} vs {boff * 1e6:.1f} us of Sluice + mock + client CPU "
                        "per request)")
    else:
        checks_total = "n/a"
    if off and on and off.cpu_per_10k and on.cpu_per_10k:
        extra_us = (on.cpu_per_10k - off.cpu_per_10k) / 10000 * 1e6
        cpu = (f"{on.cpu_per_10k / off.cpu_per_10k:.2f}x ({on.cpu_per_10k:.3f} vs {off.cpu_per_10k:.3f} CPU s / "
               f"10k req: {extra_us:+.1f} us per request)")
    else:
        cpu = "n/a"
    table_checks = checks + [
        ("request logs: Sluice CPU per request, with / without", "(reported)", cpu, "-"),
        ("request logs: requests per CPU second of the bench (Sluice + mock + client), with / without",
         "(reported)", checks_total, "-"),
    ]
    L.append(table(["target", "limit", "measured", "result"], table_checks))
    L.append("")
    rows = []
    for name, label, a in (("logs_off", "`store.request_logs: false`", off), ("logs_on", "`store.request_logs: true` (SQLite)", on)):
        if not a:
            continue
        rows.append([
            name, label, a.requests, a.failed, fmt(a.rps, 0), ratio(a.rps, off.rps) if off else "n/a",
            fmt(a.p("ttfb", 50)), fmt(a.p("close", 50)), fmt(a.p("close", 99)),
            fmt(a.proxy_cpu, 2), fmt(a.cpu_per_10k, 3), ratio(a.cpu_per_10k, off.cpu_per_10k) if off else "n/a",
            fmt(a.mock_cpu, 2), fmt(a.client_cpu, 2), fmt(a.other_cpu, 2),
        ])
    if rows:
        L.append(table(["run", "config", "requests", "failed", "req/s", "/ off", "TTFB p50", "close p50",
                        "close p99", "Sluice CPU s", "Sluice CPU s / 10k req", "/ off", "mock CPU s",
                        "client CPU s", "other CPU s"], rows))
        L.append("")
        L.append("Other CPU s: what the machine spent busy outside Sluice, the mock and the client during the "
                 "segments, warm-up and settling included (/proc/stat): other users' work, and the kernel's own "
                 "threads (page writeback of the log database counts there).")
        L.append("")
        if counters and on:
            sent = on.requests + 5 + 10 * len(on.runs)  # + the sanity pings and each segment's warm-up
            L.append(f"The logging Sluice's own count afterwards (`/metrics`): {counters.get('written', '?')} rows "
                     f"written, {counters.get('dropped', '?')} dropped, {counters.get('rejected', '?')} rejected; "
                     f"{counters.get('rows_in_db', '?')} rows in the file for {sent} requests sent to it "
                     f"({on.requests} measured, 5 sanity, 10 warm-up per segment).")
            L.append("")
        errs = {k: a.errors for k, a in (("logs_off", off), ("logs_on", on)) if a and a.errors}
        if errs:
            L.append("Errors seen: " + "; ".join(f"{k}: " + ", ".join(f"{e} x{c}" for e, c in v.items())
                                                  for k, v in errs.items()))
            L.append("")
    else:
        L.append("(no end-to-end figures: the scenario 6 Sluices did not run)\n")

    L.append(f"#### The log writer alone (`build/sluice_store_bench --rows {m('store_bench_rows', '?')}`, "
             f"median of {m('store_bench_runs', '?')} runs)\n")
    if store_runs:
        L.append("One thread builds records like the gateway's (no bodies, a virtual key on each) and pushes them "
                 "through a LogWriter with its default options as fast as enqueue() takes them (a full queue makes "
                 "it wait instead of dropping); rows/s is rows committed per second from the first enqueue until "
                 "drain() returns. Enqueue ns is the producer's CPU per record (building it + enqueue(), which also "
                 "frees a record already written: the request path's whole share); writer "
                 "CPU is the rest of the process's CPU per row (the writer thread: SQL, SQLite itself, the kernel's "
                 "file writes; for PostgreSQL the client side only, the server's CPU is not counted). SQLite: a "
                 "fresh file (WAL, synchronous=NORMAL). PostgreSQL: a throwaway local cluster from "
                 "tests/scripts/with-postgres.sh (fsync off, synchronous_commit off), over TCP on 127.0.0.1.")
        L.append("")
        rows = []
        for backend in ("sqlite", "postgres"):
            rs = [r for r in store_runs if r.get("backend") == backend and r.get("mode", "writer") == "writer"]
            med = median_run(rs)
            if not med:
                continue
            rows.append([backend, med.get("rows"), med.get("batch"), f"{med.get('rows_per_s', 0):,.0f}",
                         ", ".join(f"{r.get('rows_per_s', 0):,.0f}" for r in rs),
                         fmt(med.get("enqueue_ns"), 0), fmt(med.get("writer_cpu_us"), 2),
                         med.get("queue_full_waits")])
        L.append(table(["database", "rows", "batch", "rows/s (median)", "rows/s (all runs)", "enqueue ns / record",
                        "writer CPU us / row", "queue-full waits"], rows))
        L.append("")
    else:
        L.append("(not run: no build/sluice_store_bench output)\n")
    return "\n".join(L), checks


# ----------------------------------------------------------------- prompt-injection detector

def build_screen(ev, cli, micro, meta, everyday=None):
    m = meta.get
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = ["### Prompt-injection detector (`sluice screen`, src/guard/)\n"]
    L.append(f"- Run: {now}, `{m('command', 'BENCH_ONLY=screen bash bench/run.sh')}` (runs `bash bench/screen.sh`); "
             f"{machine()}")
    if m("loadavg_screen_start"):
        L.append(f"- Load average (1/5/15 min) before: {m('loadavg_screen_start')}, after: "
                 f"{m('loadavg_screen_end', '?')}")
    L.append("- Model: models/injection.model (logistic regression over hashed character 3-5-grams and word "
             "1-2-grams of the normalised text, int8 weights; a long text is scored by its most suspicious window; "
             "a text up to 2 KB also by three character-surprisal features, weighed by a second stage), "
             "trained by `build/sluice_train_screen` on the 80% of models/prompt-injection/train.jsonl outside the "
             "held-out split; the split is by a MinHash of each text's word 4-grams, so near-duplicate templates "
             "fall on one side. The second stage and the threshold come from out-of-fold scores on folds of whole "
             "sources: the threshold is the lowest at which at most 2.5% of the everyday requests of the 80% are "
             "flagged by models that never saw their source; the held-out 20% was used for nothing but these "
             "figures. Quality on sources never trained on: the leave-one-source-out table above.")
    L.append("")
    checks = []
    if ev:
        L.append(f"Held-out quality at the tuned threshold {ev.get('threshold', 0):.4f} "
                 f"(`build/sluice_train_screen --eval models/injection.model`):\n")
        L.append(table(["texts", "precision", "recall", "F1", "TP", "FP", "TN", "FN"],
                       [[ev["n"], f"{ev['precision']:.4f}", f"{ev['recall']:.4f}", f"{ev['f1']:.4f}",
                         ev["tp"], ev["fp"], ev["tn"], ev["fn"]]]))
        L.append("")
        if cli:
            agree = all(cli.get(k) == ev.get(k) for k in ("tp", "fp", "fn"))
            L.append(f"The same {cli['n']} texts through `sluice screen` (the CLI, scored from its output): "
                     f"precision {cli['precision']:.4f}, recall {cli['recall']:.4f}, F1 {cli['f1']:.4f}"
                     + (" (identical)." if agree else " (**differs from the evaluation above**)."))
            L.append("")
        rows = []
        for source, b in sorted(ev.get("by_source", {}).items()):
            wrong = b["fp"] + b["fn"]
            kind = "attack" if b["tp"] + b["fn"] > 0 else "benign"
            rows.append([source, kind, b["n"], wrong, f"{wrong / b['n'] * 100:.1f}%" if b["n"] else "n/a"])
        L.append("Errors per source (held-out):\n")
        L.append(table(["source", "label", "texts", "wrong", "error rate"], rows))
        L.append("")
        if everyday:
            ex = "; ".join(f"\"{t}\"" for t in everyday.get("examples", []))
            L.append(f"Out of distribution: {everyday['flagged']} of {everyday['n']} hand-written everyday requests "
                     "(bench/data/screen_everyday.jsonl, all benign, not in the training data) are flagged at the "
                     "threshold" + (f", e.g. {ex}." if ex else " (the first model, before the everyday-request "
                                    "data, flagged 11)."))
            L.append("")
        L.append("Caveats (models/prompt-injection/README.md): the multilingual data is small and templated, and "
                 "benign non-English traffic is covered by M-IFEval (es/fr/ja), OASST and a few written rows only.")
        L.append("")
    else:
        L.append("(quality not measured: no screen_eval.json)\n")

    if micro:
        rows = []
        p99_2k = p99_8k = None
        for b in micro.get("benchmarks", []):
            if b.get("run_type") == "aggregate":
                continue
            name = b.get("name", "?")
            if b.get("error_occurred"):
                rows.append([f"`{name}`", "error: " + str(b.get("error_message", "?")), "", "", "", ""])
                continue
            unit = b.get("time_unit", "ns")
            cpu_us = to_ns(b.get("cpu_time", 0.0), unit) / 1e3
            bps = b.get("bytes_per_second")
            if name == "score/2048":
                p99_2k = b.get("p99_us")
            if name == "score/8192":
                p99_8k = b.get("p99_us")
            rows.append([f"`{name}`", fmt(cpu_us, 2), fmt(b.get("p50_us"), 2), fmt(b.get("p99_us"), 2),
                         fmt(b.get("max_us"), 1), fmt(bps / 1e6 if bps else None, 1)])
        if p99_2k is not None:
            ok = p99_2k < SCREEN_P99_TARGET_US
            checks.append(("detector p99 on a 2 KB prompt", f"< {SCREEN_P99_TARGET_US:.0f} us", f"{p99_2k:.2f} us",
                           "**met**" if ok else "**missed**"))
        if p99_8k is not None:
            ok = p99_8k < SCREEN_P99_TARGET_US
            checks.append(("detector p99 on an 8 KB prompt", f"< {SCREEN_P99_TARGET_US:.0f} us", f"{p99_8k:.2f} us",
                           "**met**" if ok else "**missed**"))
        L.append(f"Time per call (`build/sluice_screen_bench --benchmark_min_time={m('screen_bench_min_time', '?')}`, "
                 "Google Benchmark; each call timed on its own, 64 different prompts of each size cut from the "
                 "training texts; a text over 16 KB is scored on its first and last 8 KB):\n")
        L.append(table(["target", "limit", "measured", "result"], checks))
        L.append("")
        L.append(table(["benchmark", "mean CPU us / call", "p50 us", "p99 us", "max us", "MB/s"], rows))
        L.append("")
    else:
        L.append("(speed not measured: no build/sluice_screen_bench output)\n")
    return "\n".join(L), checks

# ----------------------------------------------------------------- protect and save (bench/protect.sh)

def is_protect(r):
    return str(r.get("scenario", "")).startswith("protect")


def load_jsonl(work, name):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as fh:
        for line in fh:
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    print(f"report.py: skipping a line of {path}: {e}", file=sys.stderr)
    return out


PROTECT_MICRO_ROWS = [
    ("seal", "seal one e-mail address into a token (AES-256-SIV: CMAC + CTR)"),
    ("open", "open that token"),
    ("scan", "the built-in rules over the ~300-byte prose with the two values"),
    ("scan/no_hit", "the same over the clean prose"),
    ("scan_request", "the whole request scan: its JSON walked, scanned, two values sealed, the body written"),
    ("screen", "the prompt-injection detector on the prose"),
    ("stream/plain", "the echoed answer (20 chunks, one event per read) through the plain OpenAI tap"),
    ("stream/restoring/0", "the same answer with its two tokens through the restoring tap, opening them"),
    ("stream/restoring/1", "the same with the request's sealed tokens at hand (what the gateway does)"),
]


def micro_protect(micro, m, on, off):
    """The per-stage table from build/sluice_protect_bench's JSON."""
    ns = {}
    for b in micro.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        unit = {"ns": 1.0, "us": 1e3, "ms": 1e6}.get(b.get("time_unit", "ns"), 1.0)
        ns[b["name"]] = b["cpu_time"] * unit
    rows = [[f"`{n}`", what, fmt(ns[n] / 1000, 2)] for n, what in PROTECT_MICRO_ROWS if n in ns]
    out = ["#### Where the time goes: each stage on its own\n",
           f"`build/sluice_protect_bench --benchmark_min_time={m('protect_micro_min_time', '0.5')}` (Google "
           "Benchmark, bench/protect_bench.cpp; one thread, warm caches, the same request body):\n",
           table(["benchmark", "what", "CPU us / call"], rows), ""]
    need = ("scan_request", "screen", "stream/restoring/1", "stream/plain")
    if all(k in ns for k in need):
        stages = (ns["scan_request"] + ns["screen"] + ns["stream/restoring/1"] - ns["stream/plain"]) / 1000
        measured = ""
        if on and off and on.cpu_per_10k and off.cpu_per_10k:
            extra = (on.cpu_per_10k - off.cpu_per_10k) / 10000 * 1e6
            measured = f"; the gateway under load spent {extra:+.1f} us per request more with them on"
            if extra > stages + 1:
                measured += (" (the rest: the allocations, bytes and locking around a redacted request, which a warm "
                             "single-threaded loop does not see)")
        out.append(f"Per request the stages add up to {stages:.1f} us (scan_request + screen + the restoring tap "
                   f"over the plain one){measured}.")
        out.append("")
    return "\n".join(out)


def build_protect(runs, sanity, counters, fill, cache_checks, meta, micro=None):
    m = meta.get
    by, agg = group_runs(runs)

    off, on = agg("protect", "protect_off"), agg("protect", "protect_on")
    offc, onc = agg("protect_clean", "protect_off"), agg("protect_clean", "protect_on")
    chunks = int(m("chunks", "20") or 20)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = ["### 7. Protect and save: redaction + screening on vs off, and a cache hit vs nginx\n"]
    L.append(f"- Run: {now}, `{m('command', 'BENCH_ONLY=protect bash bench/run.sh')}` (runs `bash bench/protect.sh`); "
             f"{machine()}")
    L.append(f"- Load average (1/5/15 min) at the start: {m('loadavg_protect_start', '?')}, at the end: "
             f"{m('loadavg_protect_end', '?')} (anything else running on the machine distorts the figures)")
    def segments(scen):
        """on / off req/s of each segment (the two ran back to back): median, min, max."""
        ons = {x["round"]: x for x in by.get((scen, "protect_on"), []) if x.get("result")}
        offs = {x["round"]: x for x in by.get((scen, "protect_off"), []) if x.get("result")}
        rs = sorted(ons[k]["result"]["rps"] / offs[k]["result"]["rps"] for k in ons
                    if k in offs and offs[k]["result"].get("rps"))
        if not rs:
            return ""
        return f"; per segment: median {statistics.median(rs):.2f}x, {rs[0]:.2f}x to {rs[-1]:.2f}x"

    checks = []
    if off and on and off.rps and on.rps:
        r = on.rps / off.rps
        ok = r >= PROTECT_TARGET
        checks.append(("protect: throughput with redaction + screening / all off", f">= {PROTECT_TARGET:.2f}x",
                       f"{r:.2f}x ({on.rps:.0f} vs {off.rps:.0f} req/s{segments('protect')})",
                       "**met**" if ok else "**missed**"))
        verdict = (f"redaction + screening on stream {r:.2f}x the requests per second of all off "
                   f"({on.rps:.0f} vs {off.rps:.0f} req/s): the >= {PROTECT_TARGET:.1f}x target is "
                   + ("**met**." if ok else "**missed**."))
    else:
        checks.append(("protect: throughput with redaction + screening / all off", f">= {PROTECT_TARGET:.2f}x",
                       "n/a", "n/a (not run)"))
        verdict = "not measured (the protect throughput runs are missing)."
    clean_row = None
    if offc and onc and offc.rps and onc.rps:
        rc = onc.rps / offc.rps
        clean_row = ("protect: the same, prose without personal data (nothing sealed or restored)", "(reported)",
                     f"{rc:.2f}x ({onc.rps:.0f} vs {offc.rps:.0f} req/s{segments('protect_clean')})", "-")
        verdict += (f" With the same prose but no personal data in it (screened and scanned, nothing to seal or "
                    f"restore): {rc:.2f}x.")
    L.append(f"- **Verdict:** {verdict}")
    L.append("")

    # --- 1. throughput
    L.append("#### Throughput: redaction + screening on vs all off\n")
    L.append(f"Two Sluices (`server.workers: {m('sluice_workers', '0')}`, `store.request_logs: "
             f"{m('sluice_request_logs', 'false')}` as in sections 1-4, one openai channel on the mock, requests with "
             "the master key) from the same config but for the protect sections: `protect_off` has none (redaction, "
             "screening and cache off), `protect_on` adds `redaction: {enabled: true, key: ...}` (the built-in rules) "
             "and `screening: {action: block}`. The load generator sends section 2's load "
             f"({m('concurrency', '?')} concurrent streams, `x-mock-chunks: {chunks}`) to each, "
             f"{m('protect_seconds', '?')} s per configuration in {m('protect_segments', '?')} interleaved segments "
             f"(alternating which goes first). Every request is `{m('protect_body', 'bench/data/protect_chat.json')}` "
             f"({m('protect_body_bytes', '?')} bytes, `stream: true`): one user message of ~300 bytes of prose "
             "holding one e-mail address and one phone number, sent with `x-mock-echo: 1` so that the mock's answer "
             "streams the user text back. On `protect_on` every request is therefore screened (and passes), has two "
             "values encrypted into tokens before it leaves, and gets both tokens restored in the streamed answer; "
             "the answer text the client receives is the same as through `protect_off` (checked below), and so is the "
             "framing: the OpenAI-to-OpenAI restoring tap passes the upstream's events on and rewrites only the content "
             "strings that hold a piece of a token. In the same segments both Sluices are also loaded with "
             f"`{m('protect_clean_body', 'bench/data/protect_chat_clean.json')}` "
             f"({m('protect_clean_body_bytes', '?')} bytes): the same prose with the two values replaced by words, so "
             "`protect_on` screens and scans every request but has nothing to seal or restore (rows marked clean).")
    L.append("")
    if off and on and off.cpu_per_10k and on.cpu_per_10k:
        extra_us = (on.cpu_per_10k - off.cpu_per_10k) / 10000 * 1e6
        cpu = (f"{on.cpu_per_10k / off.cpu_per_10k:.2f}x ({on.cpu_per_10k:.3f} vs {off.cpu_per_10k:.3f} CPU s / "
               f"10k req: {extra_us:+.1f} us per request)")
    else:
        cpu = "n/a"
    L.append(table(["target", "limit", "measured", "result"],
                   checks + ([clean_row] if clean_row else [])
                   + [("protect: Sluice CPU per request, on / off", "(reported)", cpu, "-")]))
    L.append("")
    rows = []
    for name, label, a, base in (("protect_off", "no protect sections", off, off),
                                 ("protect_on", "`redaction` + `screening: block`", on, off),
                                 ("protect_off (clean)", "no protect sections", offc, offc),
                                 ("protect_on (clean)", "`redaction` + `screening: block`", onc, offc)):
        if not a:
            continue
        t50, t99 = a.p("tail", 50), a.p("tail", 99)
        rows.append([
            name, label, a.requests, a.failed, fmt(a.rps, 0), ratio(a.rps, base.rps) if base else "n/a",
            fmt(a.p("ttfb", 50)), fmt(a.p("ttfb", 99)), fmt(a.p("close", 50)), fmt(a.p("close", 99)),
            fmt(t50), fmt(t99), fmt(t50 * 1000 / chunks if t50 is not None else None, 1),
            fmt(a.proxy_cpu, 2), fmt(a.cpu_per_10k, 3), ratio(a.cpu_per_10k, base.cpu_per_10k) if base else "n/a",
            fmt(a.hwm_kb / 1024 if a.hwm_kb else None, 1),
            fmt(a.mock_cpu, 2), fmt(a.client_cpu, 2), fmt(a.other_cpu, 2), fmt(a.bytes_per_req, 0),
        ])
    if rows:
        L.append(table(["run", "config", "requests", "failed", "req/s", "/ off", "TTFB p50", "TTFB p99", "close p50",
                        "close p99", "tail p50", "tail p99", "tail p50 / chunk (us)", "Sluice CPU s",
                        "Sluice CPU s / 10k req", "/ off", "peak RSS MB", "mock CPU s", "client CPU s",
                        "other CPU s", "body bytes / stream"], rows))
        L.append("")
        L.append("Latencies in ms; tail is close minus TTFB (the stream after its first byte), per chunk divided by "
                 f"the {chunks} content chunks. Peak RSS is each Sluice's VmHWM after its segments (its peak since "
                 "start). Other CPU s: what the machine spent busy outside Sluice, the mock and the client during the "
                 "segments (/proc/stat).")
        L.append("")
    else:
        L.append("(no throughput figures: the protect runs did not happen)\n")
    if sanity:
        bad = [c for c in sanity.get("checks", []) if not c.get("echo_equal") or c.get("status") != 200]
        L.append(f"Checked before the load: one streamed and one non-streamed request straight to the mock, through "
                 f"`protect_off` and through `protect_on` each came back with the {sanity.get('text_bytes', '?')}-byte "
                 "user text echoed exactly"
                 + (" (so `protect_on` restored what it encrypted)" if not bad else f" **except {bad}**")
                 + "; `protect_on`'s counters for those 2 requests: "
                 + ", ".join(f"`{k}` +{v}" for k, v in sanity.get("counters_for_2_requests", {}).items()) + ".")
        L.append("")
    if counters and on:
        sent = on.requests + 10 * len(on.runs) + 2  # + each segment's warm-up + the 2 sanity requests
        sentc = (onc.requests + 10 * len(onc.runs) + 1) if onc else 0
        red = {k: v for k, v in counters.items() if k.startswith("sluice_redactions_total")}
        flagged = sum(v for k, v in counters.items() if k.startswith("sluice_screen_flagged_total"))
        L.append(f"`protect_on`'s own count afterwards (`/metrics`), for {sent} requests with the personal data sent "
                 f"to it ({on.requests} measured, 10 warm-up per segment, 2 sanity) and {sentc} clean ones: "
                 f"{counters.get('sluice_screened_requests_total', '?')} screened, {flagged} flagged; "
                 + ", ".join(f"`{k[len('sluice_redactions_total'):]}` {v}" for k, v in sorted(red.items()))
                 + f" redacted; {counters.get('sluice_restored_tokens_total', '?')} tokens restored, "
                 f"{counters.get('sluice_tampered_tokens_total', '?')} tampered. (A request cut off by the end of a "
                 "segment is counted by the gateway but not by the load generator.)")
        L.append("")
    if micro and micro.get("benchmarks"):
        L.append(micro_protect(micro, m, on, off))
    errs = {k: a.errors for k, a in (("protect_off", off), ("protect_on", on), ("protect_off (clean)", offc),
                                     ("protect_on (clean)", onc)) if a and a.errors}
    if errs:
        L.append("Errors seen: " + "; ".join(f"{k}: " + ", ".join(f"{e} x{c}" for e, c in v.items())
                                              for k, v in errs.items()))
        L.append("")

    # --- 2. cache hit latency
    L.append("#### Cache hit latency vs nginx serving the same bytes as a static file\n")
    rounds, warm, count = m("cache_ping_rounds", "?"), m("cache_ping_warmup", "?"), m("cache_ping_count", "?")
    nw, nwn = m("nginx_workers", "auto"), m("nginx_workers_n")
    L.append(f"A third Sluice from the same config with `cache: {{enabled: true, ttl: 1h}}` (no redaction or "
             "screening). One non-streamed request fills the entry (`x-sluice-cache: miss`); the next non-streamed "
             "and streamed requests are hits, and their bytes are saved as `answer.json` "
             f"({fill.get('json_bytes', '?') if fill else '?'} bytes) and `answer.sse` "
             f"({fill.get('sse_bytes', '?') if fill else '?'} bytes) for nginx {m('nginx_version', '?')} "
             f"(`worker_processes {nw}`" + (f" = {nwn} workers" if nwn else "") + ", `sendfile on`, "
             "`access_log off`; its static module answers POST with 405, which `error_page 405 =200 $uri` turns "
             "into the file by an internal redirect, a few us more than a GET would take). Then, in "
             f"{rounds} rounds (targets rotated), {warm} warm-up + {count} sequential requests on one keep-alive "
             "connection (`sluice_loadgen --mode ping`, the same request body) to each of: Sluice (all hits), "
             "nginx's static file, the mock directly (what answering from upstream costs, without Sluice), and "
             "Sluice with `Cache-Control: no-store` (the cache skipped: relayed to the mock). Non-streamed "
             "(`stream: false`, a JSON answer) and streamed (`stream: true`, the SSE replay ending in "
             "`data: [DONE]`, which the load generator checks) are measured separately. Latency is close: request "
             "sent to the last byte of the answer, in ms.")
    L.append("")
    if cache_checks:
        sent = sum(c.get("sent", 0) for c in cache_checks)
        hits = sum(c.get("hits", 0) for c in cache_checks)
        misses = sum(c.get("misses", 0) for c in cache_checks)
        allhit = all(c.get("hits") == c.get("sent") and c.get("misses") == 0 for c in cache_checks)
        L.append(("Every request to the caching Sluice was a hit: " if allhit else "**Not every request was a hit:** ")
                 + f"its `sluice_cache_requests_total{{result=\"hit\"}}` rose by {hits} and `{{result=\"miss\"}}` by "
                 f"{misses} over the {len(cache_checks)} runs, for {sent} requests sent (warm-up included), read "
                 "from `/metrics` before and after each run.")
        L.append("")
    names = {"sluice_hit": "Sluice, cache hit", "nginx_static": "nginx, static file",
             "direct": "mock, direct (no Sluice)", "sluice_no_store": "Sluice, `Cache-Control: no-store`"}
    rows, summary = [], []
    for mode, scen in (("non-streamed", "protect_cache_whole"), ("streamed", "protect_cache_stream")):
        n = agg(scen, "nginx_static")
        h = agg(scen, "sluice_hit")
        for t in ("sluice_hit", "nginx_static", "direct", "sluice_no_store"):
            a = agg(scen, t)
            if not a:
                continue
            rows.append([
                mode, names[t], f"{a.ok}/{a.requests}", fmt(a.p("ttfb", 50)),
                fmt(a.p("close", 50)), fmt(a.p("close", 90)), fmt(a.p("close", 99)),
                delta(a.p("close", 50), n.p("close", 50)) if n else "n/a",
                delta(a.p("close", 90), n.p("close", 90)) if n else "n/a",
                delta(a.p("close", 99), n.p("close", 99)) if n else "n/a",
                ", ".join(fmt(pct(((r.get("result") or {}).get("samples") or {}).get("close_ms", []), 50))
                          for r in sorted(a.runs, key=lambda r: r.get("round", 0))),
                fmt(a.bytes_per_req, 0),
            ])
        if h and n and h.close and n.close:
            d = {t: agg(scen, t) for t in ("direct", "sluice_no_store")}
            extra = "".join(f"; {names[t]}: {d[t].p('close', 50):.3f} ms" for t in d if d[t] and d[t].close)
            summary.append(f"{mode}: a hit takes {h.p('close', 50):.3f} / {h.p('close', 90):.3f} / "
                           f"{h.p('close', 99):.3f} ms (p50 / p90 / p99), nginx's static file "
                           f"{n.p('close', 50):.3f} / {n.p('close', 90):.3f} / {n.p('close', 99):.3f} ms: "
                           f"{h.p('close', 50) - n.p('close', 50):+.3f} / {h.p('close', 90) - n.p('close', 90):+.3f} / "
                           f"{h.p('close', 99) - n.p('close', 99):+.3f} ms{extra}")
    if rows:
        L.append(table(["answer", "target", "ok", "TTFB p50", "close p50", "close p90", "close p99",
                        "p50 - nginx", "p90 - nginx", "p99 - nginx", "close p50 by round", "body bytes"], rows))
        L.append("")
        L.append("Body bytes: a hit is rendered from the stored answer, so it is smaller than what the mock sends "
                 "(no `service_tier`, `system_fingerprint`, `refusal`, `annotations` or zero token details; the "
                 "stream replayed as one content event instead of the mock's "
                 f"{chunks}); nginx serves exactly the bytes of a hit. The mock and `no-store` rows answer the same "
                 "request from upstream, so they show what a miss costs without and with Sluice.")
        L.append("")
        for line in summary:
            L.append(f"- {line[0].upper() + line[1:]}.")
        L.append("")
        cerrs = {f"{s[len('protect_cache_'):]}/{t}": a.errors for (s, t) in by if s.startswith("protect_cache_")
                 for a in [agg(s, t)] if a and a.errors}
        if cerrs:
            L.append("Errors seen: " + "; ".join(f"{k}: " + ", ".join(f"{e} x{c}" for e, c in v.items())
                                                  for k, v in cerrs.items()))
            L.append("")
    else:
        L.append("(no cache figures: the cache runs did not happen)\n")
    return "\n".join(L), checks


# ----------------------------------------------------------------- TLS (bench/tls.sh)

def is_tls(r):
    return str(r.get("scenario", "")).startswith("tls_")


TLS_TARGETS = ("nginx", "sluice", "nginx_tls", "sluice_tls")
TLS_LABELS = {"nginx": "nginx, plain HTTP", "sluice": "Sluice, plain HTTP",
              "nginx_tls": "nginx, TLS", "sluice_tls": "Sluice, TLS"}


def tls_levels(runs, kind):
    """The stream counts of scenario tls_<kind>_<n> present, ascending."""
    out = set()
    for r in runs:
        sc = str(r.get("scenario", ""))
        if sc.startswith(f"tls_{kind}_") and sc[len(f"tls_{kind}_"):].isdigit():
            out.add(int(sc[len(f"tls_{kind}_"):]))
    return sorted(out)


def rss_max_kb(a):
    v = [r.get("proxy_rss_max_kb") for r in a.runs if r.get("proxy_rss_max_kb")]
    return max(v) if v else None


def build_tls(runs, sanity, hwm, meta):
    m = meta.get
    _, agg = group_runs(runs)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    keep, conn = tls_levels(runs, "keepalive"), tls_levels(runs, "connect")
    negotiated = {}
    for r in sanity or []:
        if r.get("tls"):
            t = r["tls"]
            negotiated[r.get("label")] = f"{t.get('version')} {t.get('cipher')} {t.get('group')}"
    nwn = m("nginx_workers_n")
    sw = m("sluice_workers", "0")
    L = []
    L.append("### TLS: Sluice terminating TLS vs nginx terminating TLS\n")
    L.append(f"- Run: {now}, `{m('command', 'BENCH_ONLY=tls bash bench/run.sh')}` (runs `bash bench/tls.sh`); "
             f"{machine()}")
    L.append(f"- Load average (1/5/15 min) at the start: {m('loadavg_tls_start', '?')}, at the end: "
             f"{m('loadavg_tls_end', '?')} (anything else running on the machine distorts the figures)")
    L.append(f"- Four proxies on the same mock (`{m('mock_cmd', 'sluice mock')}`), started together and loaded in "
             "turn: `nginx` and `nginx_tls` from bench/nginx_tls.conf.template (nginx "
             f"{m('nginx_version', '?')}, `worker_processes {m('nginx_workers', 'auto')}`"
             + (f" = {nwn} workers" if nwn else "")
             + f", upstream `keepalive {m('tls_nginx_keepalive', '?')}`, `proxy_buffering off`; the two differ only "
             "in `listen ... ssl`), `sluice` and `sluice_tls` from bench/run.sh's config (one openai channel, "
             f"`server.workers: {sw}`" + (" = one per core" if sw == "0" else "")
             + f", `store.request_logs: {m('sluice_request_logs', 'false')}`; the second with `server.tls: "
             "{cert, key}`). Sluice's `server.header_timeout` and nginx's `client_header_timeout` (both cover the "
             f"handshake) are {m('tls_header_timeout', '?')}. Both TLS proxies serve the same certificate, made for the run: "
             f"{m('tls_key', '?')}, for 127.0.0.1, signed by a throwaway CA; the load generator verified the chain "
             "against that CA in the sanity requests and skips verification in the measured runs (a client-side "
             f"cost on the same cores). {m('openssl_version', 'OpenSSL')} everywhere; the client offers TLS 1.2 and "
             "1.3 and resumes no session. Sluice writes its per-request access log to stdout (a file here); nginx "
             "has `access_log off`, as in section 2.")
    if negotiated:
        L.append("- Negotiated (first handshake of each TLS target): "
                 + "; ".join(f"`{k}`: {v}" for k, v in sorted(negotiated.items())))
    L.append(f"- Every request: model `{m('model', '?')}`, `stream: true`, `x-mock-chunks: {m('chunks', '?')}`, "
             "through the master key. Kept-alive runs: each connection first does one unrecorded request "
             "(connect, TLS handshake, the proxy's upstream connection), then "
             f"{m('tls_seconds', '?')} s per target and stream count in {m('tls_segments', '?')} interleaved "
             "segments (the target order rotated each segment). CPU seconds are the proxy's (nginx: master + "
             "workers) and the mock's, read from /proc by the load generator where its measured requests start "
             "and end; RSS is the proxy's VmRSS sampled every 200 ms during the segments (max), and its VmHWM "
             f"after the whole run. Open-file limit {m('tls_nofile', '?')}. Latencies in milliseconds.")
    L.append("")

    def cpu_ratio(a, b):
        if not a or not b or not a.cpu_per_10k or not b.cpu_per_10k:
            return None
        return a.cpu_per_10k / b.cpu_per_10k

    checks, reported = [], []
    for n in keep:
        s_t, n_t = agg(f"tls_keepalive_{n}", "sluice_tls"), agg(f"tls_keepalive_{n}", "nginx_tls")
        name = f"TLS, {n} streams: throughput vs nginx-TLS"
        if s_t and n_t and s_t.rps and n_t.rps:
            r = s_t.rps / n_t.rps
            checks.append((name, f">= {TLS_RPS_TARGET:.2f}x", f"{r:.2f}x ({s_t.rps:.0f} vs {n_t.rps:.0f} req/s)",
                           "**met**" if r >= TLS_RPS_TARGET else "**missed**"))
        else:
            checks.append((name, f">= {TLS_RPS_TARGET:.2f}x", "n/a", "n/a (not run)"))
        name = f"TLS, {n} streams: proxy CPU per request vs nginx-TLS"
        r = cpu_ratio(s_t, n_t)
        if r is not None:
            checks.append((name, f"<= {TLS_CPU_TARGET:.1f}x",
                           f"{r:.2f}x ({s_t.cpu_per_10k:.3f} vs {n_t.cpu_per_10k:.3f} CPU s / 10k req)",
                           "**met**" if r <= TLS_CPU_TARGET else "**missed**"))
        else:
            checks.append((name, f"<= {TLS_CPU_TARGET:.1f}x", "n/a", "n/a (not run)"))
        # what TLS itself adds to each proxy's CPU per request
        s_p, n_p = agg(f"tls_keepalive_{n}", "sluice"), agg(f"tls_keepalive_{n}", "nginx")
        parts = []
        for label, tls_a, plain_a in (("Sluice", s_t, s_p), ("nginx", n_t, n_p)):
            r = cpu_ratio(tls_a, plain_a)
            if r is not None:
                parts.append(f"{label} {r:.2f}x ({(tls_a.cpu_per_10k - plain_a.cpu_per_10k) * 100:+.1f} us / req)")
        reported.append((f"TLS, {n} streams: CPU per request, TLS / plain, same proxy", "(reported)",
                         ", ".join(parts) or "n/a", "-"))
        sr, nr = (rss_max_kb(s_t) if s_t else None), (rss_max_kb(n_t) if n_t else None)
        reported.append((f"TLS, {n} streams: proxy RSS (max) vs nginx-TLS", "(reported)",
                         f"{sr / nr:.2f}x ({sr / 1024:.1f} vs {nr / 1024:.1f} MB)" if sr and nr else "n/a", "-"))
    for n in conn:
        s_t, n_t = agg(f"tls_connect_{n}", "sluice_tls"), agg(f"tls_connect_{n}", "nginx_tls")
        if s_t and n_t and s_t.rps and n_t.rps:
            reported.append((f"TLS, a handshake per request ({n} at once): throughput vs nginx-TLS", "(reported)",
                             f"{s_t.rps / n_t.rps:.2f}x ({s_t.rps:.0f} vs {n_t.rps:.0f} req/s)", "-"))
        r = cpu_ratio(s_t, n_t)
        if r is not None:
            reported.append((f"TLS, a handshake per request ({n} at once): proxy CPU per request vs nginx-TLS",
                             "(reported)", f"{r:.2f}x ({s_t.cpu_per_10k:.3f} vs {n_t.cpu_per_10k:.3f} CPU s / 10k req)",
                             "-"))
    L.append(table(["target", "limit", "measured", "result"], checks + reported))
    L.append("")

    def rows_for(scenario, with_rss):
        rows = []
        for t in TLS_TARGETS:
            a = agg(scenario, t)
            if not a:
                continue
            same = "nginx_tls" if t.endswith("_tls") else "nginx"
            plain = t[:-4] if t.endswith("_tls") else None
            b, p = agg(scenario, same), agg(scenario, plain) if plain else None
            row = [TLS_LABELS[t], a.requests, a.failed, fmt(a.rps, 0), ratio(a.rps, b.rps) if b else "n/a",
                   ratio(a.rps, p.rps) if p else "", fmt(a.p("ttfb", 50)), fmt(a.p("ttfb", 99)),
                   fmt(a.p("close", 50)), fmt(a.p("close", 99)), fmt(a.proxy_cpu, 2), fmt(a.cpu_per_10k, 3),
                   ratio(a.cpu_per_10k, b.cpu_per_10k) if b else "n/a",
                   ratio(a.cpu_per_10k, p.cpu_per_10k) if p else "", fmt(a.mock_cpu, 2), fmt(a.client_cpu, 2)]
            if with_rss:
                rk = rss_max_kb(a)
                row.append(fmt(rk / 1024 if rk else None, 1))
            rows.append(row)
        head = ["target", "requests", "failed", "req/s", "/ nginx (same transport)", "/ plain (same proxy)",
                "TTFB p50", "TTFB p99", "close p50", "close p99", "proxy CPU s", "proxy CPU s / 10k req",
                "/ nginx (same transport)", "/ plain (same proxy)", "mock CPU s", "client CPU s"]
        if with_rss:
            head.append("proxy RSS MB (max)")
        return head, rows

    for n in keep:
        L.append(f"#### {n} concurrent kept-alive streams, {m('chunks', '?')} chunks each\n")
        head, rows = rows_for(f"tls_keepalive_{n}", True)
        L.append(table(head, rows))
        L.append("")
    for n in conn:
        L.append(f"#### A new connection per request ({n} at once, `Connection: close`; TLS: a full handshake, "
                 "nothing resumed)\n")
        L.append(f"{m('tls_connect_seconds', '?')} s per target in {m('tls_connect_segments', '?')} interleaved "
                 "segments; TTFB and close include the TCP connect and the handshake.\n")
        head, rows = rows_for(f"tls_connect_{n}", False)
        L.append(table(head, rows))
        L.append("")
    if hwm:
        L.append("#### Memory\n")
        rows = []
        for h in hwm:
            t = h.get("target")
            if t not in TLS_LABELS:
                continue
            row = [TLS_LABELS[t], h.get("processes", "?")]
            for n in keep:
                a = agg(f"tls_keepalive_{n}", t)
                rk = rss_max_kb(a) if a else None
                row.append(fmt(rk / 1024 if rk else None, 1))
            row.append(fmt(h["hwm_kb"] / 1024 if h.get("hwm_kb") else None, 1))
            rows.append(row)
        L.append(table(["proxy", "processes"] + [f"RSS MB, max during {n} streams" for n in keep]
                       + ["VmHWM MB after the run"], rows))
        L.append("")
        L.append("Summed over the proxy's processes (nginx: master + workers). The segments run from the smallest "
                 "stream count up, so each column's maximum is reached with that many streams (or fewer).")
        L.append("")
    errs = {}
    for sc in [f"tls_keepalive_{n}" for n in keep] + [f"tls_connect_{n}" for n in conn]:
        for t in TLS_TARGETS:
            a = agg(sc, t)
            if a and a.errors:
                errs[f"{sc[4:]}/{t}"] = a.errors
            for r in (a.runs if a else []):
                for e, c in ((r.get("result") or {}).get("prime_errors") or {}).items():
                    d = errs.setdefault(f"{sc[4:]}/{t}", {})
                    d[f"priming request: {e}"] = d.get(f"priming request: {e}", 0) + c
    if errs:
        L.append("Errors seen: " + "; ".join(f"{k}: " + ", ".join(f"{e} x{c}" for e, c in v.items())
                                              for k, v in errs.items()))
        L.append("")
        L.append("(A connection whose priming request failed connects again in the measured run: its connects "
                 "and handshakes then count in that segment's figures.)")
        L.append("")
    return "\n".join(L), checks


def write_block(out, section, begin, end, after=None):
    """Replaces the text between begin/end in `out` (or inserts the block after the `after`
    marker, or at the end of the file)."""
    block = begin + "\n" + section.rstrip() + "\n" + end + "\n"
    text = ""
    if os.path.exists(out):
        with open(out) as fh:
            text = fh.read()
    b, e = text.find(begin), text.find(end)
    if b != -1 and e != -1 and e > b:
        text = text[:b] + block + text[e + len(end):].lstrip("\n")
    elif after and text.find(after) != -1:
        i = text.find(after) + len(after)
        text = text[:i].rstrip("\n") + "\n\n" + block + text[i:].lstrip("\n")
    elif text:
        text = text.rstrip("\n") + "\n\n" + block
    else:
        text = HEADER + block
    tmp = out + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, out)


def write(out, section):
    block = BEGIN + "\n" + section.rstrip() + "\n" + END + "\n"
    if os.path.exists(out):
        with open(out) as fh:
            text = fh.read()
        b, e = text.find(BEGIN), text.find(END)
        if b != -1 and e != -1 and e > b:
            text = text[:b] + block + text[e + len(END):].lstrip("\n")
        else:
            text = text.rstrip("\n") + "\n\n" + block
    else:
        text = HEADER + block
    tmp = out + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, help="run.sh work directory (holds runs/*.json)")
    ap.add_argument("--out", required=True, help="markdown file to write or update")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="run metadata")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    a = ap.parse_args()
    meta = dict(kv.split("=", 1) for kv in a.set if "=" in kv)
    runs = load(a.work)
    micro = load_micro(a.work)
    store_runs = load_store_bench(a.work)
    counters = load_json(a.work, "logs_rows.json")
    screen_eval = load_json(a.work, "screen_eval.json")
    screen_cli = load_json(a.work, "screen_cli_eval.json")
    screen_micro = load_json(a.work, "screen_bench.json")
    screen_everyday = load_json(a.work, "screen_everyday.json")
    main_runs = [r for r in runs if r.get("scenario") not in ("translation", "logs") and not is_protect(r)
                 and not is_tls(r)]
    protect_runs = [r for r in runs if is_protect(r)]
    tls_runs = [r for r in runs if is_tls(r)]
    tr_runs = [r for r in runs if r.get("scenario") == "translation"]
    logs_runs = [r for r in runs if r.get("scenario") == "logs"]
    screen_present = bool(screen_eval or screen_micro)
    if (not main_runs and not tr_runs and not micro and not logs_runs and not store_runs and not screen_present
            and not protect_runs and not tls_runs):
        print("report.py: no runs found", file=sys.stderr)
        return 1
    checks = []
    if main_runs:
        section, checks = build(main_runs, meta)
        write(a.out, section)
    if tr_runs or micro:
        tr_section, tr_checks = build_translation(tr_runs, micro, meta)
        write_block(a.out, tr_section, TR_BEGIN, TR_END, after=END)
        checks += tr_checks
    if logs_runs or store_runs:
        logs_section, logs_checks = build_logs(logs_runs, store_runs, counters, meta)
        write_block(a.out, logs_section, LOGS_BEGIN, LOGS_END, after=TR_END)
        checks += logs_checks
    if screen_present:
        screen_section, screen_checks = build_screen(screen_eval, screen_cli, screen_micro, meta, screen_everyday)
        write_block(a.out, screen_section, SCREEN_BEGIN, SCREEN_END, after=LOGS_END)
        checks += screen_checks
    if protect_runs:
        protect_section, protect_checks = build_protect(
            protect_runs, load_json(a.work, "protect_sanity.json"), load_json(a.work, "protect_counters.json"),
            load_json(a.work, "cache_fill.json"), load_jsonl(a.work, "cache_checks.jsonl"), meta,
            load_json(a.work, "protect_micro.json"))
        write_block(a.out, protect_section, PROTECT_BEGIN, PROTECT_END, after=SCREEN_END)
        checks += protect_checks
    if tls_runs:
        tls_section, tls_checks = build_tls(tls_runs, load_jsonl(a.work, "tls_sanity.jsonl"),
                                            load_jsonl(a.work, "tls_hwm.jsonl"), meta)
        write_block(a.out, tls_section, TLS_BEGIN, TLS_END, after=PROTECT_END)
        checks += tls_checks
    parts = [n for n, present in (("main", main_runs), ("5", tr_runs or micro), ("6", logs_runs or store_runs),
                                  ("screen", screen_present), ("7", protect_runs), ("tls", tls_runs)) if present]
    print(f"wrote {a.out} (sections: {', '.join(parts)})", file=sys.stderr)
    for name, limit, measured, res in checks:
        print(f"  {res.replace('**', ''):14s} {name}: {measured} (limit {limit})", file=sys.stderr)
    if a.strict and any("missed" in c[3] for c in checks):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
