// Dashboard data: GET /admin/api/stats, or — on a gateway without that endpoint — the same shape
// computed in the browser from the newest request logs of the range.
import { api, ApiError } from './api';
import type { LogEntry, LogPage, Percentiles, Stats, StatsGroup, StatsPoint } from './types';

export interface RangeOption {
  id: string;
  label: string;
  ms: number;
  step_s: number;
}

export const RANGES: RangeOption[] = [
  { id: '15m', label: '15 min', ms: 15 * 60_000, step_s: 15 },
  { id: '1h', label: '1 h', ms: 3_600_000, step_s: 60 },
  { id: '24h', label: '24 h', ms: 86_400_000, step_s: 900 },
  { id: '7d', label: '7 d', ms: 7 * 86_400_000, step_s: 7200 },
];

export interface StatsResult {
  stats: Stats;
  // Set when the numbers were computed from logs: how many rows they cover, and whether more existed.
  fromLogs?: { rows: number; truncated: boolean };
}

const MAX_LOG_ROWS = 5000;

export async function loadStats(range: RangeOption, signal: AbortSignal): Promise<StatsResult> {
  const until = Date.now();
  const since = until - range.ms;
  try {
    const stats = await api<Stats>('/stats', {
      signal, query: { since_ms: since, until_ms: until, step_s: range.step_s },
    });
    return { stats: normalise(stats) };
  } catch (e) {
    if (!(e instanceof ApiError && e.missingEndpoint)) throw e;
  }
  const rows: LogEntry[] = [];
  let cursor: string | null = null;
  let truncated = false;
  do {
    const page: LogPage = await api<LogPage>('/logs', {
      signal, query: { from: since, to: until, limit: 1000, cursor: cursor ?? undefined },
    });
    rows.push(...page.data);
    cursor = page.next_cursor;
    if (rows.length >= MAX_LOG_ROWS && cursor) {
      truncated = true;
      break;
    }
  } while (cursor);
  return { stats: statsFromLogs(rows, since, until, range.step_s), fromLogs: { rows: rows.length, truncated } };
}

// Fills what an older or partial answer leaves out, so the page never reads undefined.
function normalise(s: Stats): Stats {
  const pct = (p?: Percentiles | null): Percentiles => ({ p50: p?.p50 ?? null, p95: p?.p95 ?? null, p99: p?.p99 ?? null });
  return {
    ...s,
    series: (s.series ?? []).map((p) => ({ ...p, ttfb_ms: pct(p.ttfb_ms), latency_ms: pct(p.latency_ms) })),
    totals: { ...s.totals, ttfb_ms: pct(s.totals?.ttfb_ms), latency_ms: pct(s.totals?.latency_ms) },
    by_channel: s.by_channel ?? [],
    by_model: s.by_model ?? [],
    by_key: s.by_key ?? [],
  };
}

export function percentile(sorted: number[], p: number): number | null {
  if (!sorted.length) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

function pcts(values: number[]): Percentiles {
  const s = [...values].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99) };
}

export function statsFromLogs(rows: LogEntry[], since: number, until: number, step_s: number): Stats {
  const step = step_s * 1000;
  const start = Math.floor(since / step) * step;
  const n = Math.max(1, Math.ceil((until - start) / step));
  const buckets = Array.from({ length: n }, () => [] as LogEntry[]);
  for (const r of rows) {
    const i = Math.floor((r.time_ms - start) / step);
    if (i >= 0 && i < n) buckets[i].push(r);
  }
  const sum = (rs: LogEntry[], f: (r: LogEntry) => number) => rs.reduce((a, r) => a + f(r), 0);
  const series: StatsPoint[] = buckets.map((rs, i) => ({
    t_ms: start + i * step,
    requests: rs.length,
    errors: rs.filter((r) => r.status >= 400).length,
    input_tokens: sum(rs, (r) => r.input_tokens),
    output_tokens: sum(rs, (r) => r.output_tokens),
    cost_usd: sum(rs, (r) => r.cost_usd),
    ttfb_ms: pcts(rs.filter((r) => r.status < 400).map((r) => r.ttfb_ms)),
    latency_ms: pcts(rs.map((r) => r.duration_ms)),
  }));
  const group = (key: (r: LogEntry) => string): StatsGroup[] => {
    const m = new Map<string, LogEntry[]>();
    for (const r of rows) {
      const k = key(r);
      m.set(k, [...(m.get(k) ?? []), r]);
    }
    return [...m.entries()].map(([name, rs]) => ({
      name,
      id: rs[0].virtual_key_id ?? null,
      requests: rs.length,
      errors: rs.filter((r) => r.status >= 400).length,
      input_tokens: sum(rs, (r) => r.input_tokens),
      output_tokens: sum(rs, (r) => r.output_tokens),
      cost_usd: sum(rs, (r) => r.cost_usd),
      latency_ms: pcts(rs.map((r) => r.duration_ms)),
    })).sort((a, b) => b.requests - a.requests);
  };
  const errors = rows.filter((r) => r.status >= 400).length;
  return {
    since_ms: since,
    until_ms: until,
    step_s,
    series,
    totals: {
      requests: rows.length,
      errors,
      error_rate: rows.length ? errors / rows.length : 0,
      requests_per_s: rows.length / Math.max(1, (until - since) / 1000),
      input_tokens: sum(rows, (r) => r.input_tokens),
      output_tokens: sum(rows, (r) => r.output_tokens),
      cost_usd: sum(rows, (r) => r.cost_usd),
      ttfb_ms: pcts(rows.filter((r) => r.status < 400).map((r) => r.ttfb_ms)),
      latency_ms: pcts(rows.map((r) => r.duration_ms)),
    },
    by_channel: group((r) => r.channel || '(none)'),
    by_model: group((r) => r.model || '(none)'),
    by_key: 'virtual_key_id' in (rows[0] ?? {})
      ? group((r) => (r.virtual_key_id ? `key ${r.virtual_key_id}` : 'master key'))
      : [],
  };
}
