import { useMemo, useState } from 'preact/hooks';
import { PALETTE, TimeChart, type ChartSeries } from '../chart';
import { fmtCompact, fmtInt, fmtMs, fmtPct, fmtRate, fmtTick, fmtUsd } from '../format';
import { loadStats, RANGES, type StatsResult } from '../stats';
import { api } from '../api';
import type { Stats, StatsGroup, UsagePage } from '../types';
import { Card, Empty, ErrorBox, Loading, PageHeader, TableWrap, useAsync, usePoll } from '../ui';

const POLL_MS = 5000;

export function Dashboard() {
  const [rangeId, setRangeId] = useState(() => sessionStorage.getItem('sluice.range') ?? '1h');
  const range = RANGES.find((r) => r.id === rangeId) ?? RANGES[1];
  const [updated, setUpdated] = useState<number | null>(null);
  const state = useAsync<StatsResult>(async (signal) => {
    const r = await loadStats(range, signal);
    setUpdated(Date.now());
    return r;
  }, [range.id]);
  const live = usePoll(() => { if (!state.loading) void state.reload(); }, POLL_MS);

  const pick = (id: string) => {
    setRangeId(id);
    sessionStorage.setItem('sluice.range', id);
  };

  const stats = state.data?.stats;
  return (
    <>
      <PageHeader title="Dashboard">
        <fieldset class="segmented">
          <legend class="sr-only">Time range</legend>
          {RANGES.map((r) => (
            <label key={r.id} class={r.id === range.id ? 'on' : ''}>
              <input type="radio" name="range" value={r.id} checked={r.id === range.id} onChange={() => pick(r.id)} />
              {r.label}
            </label>
          ))}
        </fieldset>
        <span class="live" role="status" aria-live="off" data-testid="live-status">
          <span class={`dot ${live ? 'dot-on' : ''}`} aria-hidden="true" />
          {live ? 'Live' : 'Paused (tab hidden)'}
          {updated && ` · updated ${new Date(updated).toLocaleTimeString()}`}
        </span>
        <button type="button" class="btn btn-small" onClick={() => void state.reload()} disabled={state.loading}>
          Refresh
        </button>
      </PageHeader>
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load the dashboard" />
      {!stats && state.loading && <Loading label="Loading statistics…" />}
      {state.data?.fromLogs && (
        <p class="note" role="note">
          This gateway has no <code>/admin/api/stats</code> endpoint: these figures are computed in the browser
          from the {fmtInt(state.data.fromLogs.rows)} request logs of the range
          {state.data.fromLogs.truncated ? ' (the newest ones only)' : ''}.
        </p>
      )}
      {stats?.sampled && (
        <p class="note" role="note">This range holds many requests: the percentiles are computed from a sample of them; counts and sums are exact.</p>
      )}
      {stats && <StatsView stats={stats} />}
      {stats && <TeamBreakdown stats={stats} />}
    </>
  );
}

function Kpi({ label, value, sub, testid, raw }: { label: string; value: string; sub?: string; testid: string; raw?: number }) {
  return (
    <div class="kpi" data-testid={testid} data-value={raw}>
      <div class="kpi-label">{label}</div>
      <div class="kpi-value">{value}</div>
      {sub && <div class="kpi-sub">{sub}</div>}
    </div>
  );
}

function StatsView({ stats }: { stats: Stats }) {
  const t = stats.totals;
  const charts = useMemo(() => {
    const x = stats.series.map((p) => p.t_ms / 1000);
    const s = stats.series;
    const perSec = (n: number) => n / stats.step_s;
    const requests: ChartSeries[] = [
      { label: 'requests/s', color: PALETTE[0], values: s.map((p) => perSec(p.requests)), fill: true },
      { label: 'errors/s', color: PALETTE[1], values: s.map((p) => perSec(p.errors)) },
    ];
    const latency: ChartSeries[] = [
      { label: 'latency p50', color: PALETTE[0], values: s.map((p) => p.latency_ms.p50), points: true },
      { label: 'latency p95', color: PALETTE[4], values: s.map((p) => p.latency_ms.p95), points: true },
      { label: 'latency p99', color: PALETTE[1], values: s.map((p) => p.latency_ms.p99 ?? null), points: true },
      { label: 'TTFB p50', color: PALETTE[2], values: s.map((p) => p.ttfb_ms.p50), dash: true, points: true },
      { label: 'TTFB p95', color: PALETTE[3], values: s.map((p) => p.ttfb_ms.p95), dash: true, points: true },
    ];
    const tokens: ChartSeries[] = [
      { label: 'input', color: PALETTE[5], values: s.map((p) => p.input_tokens), fill: true },
      { label: 'output', color: PALETTE[6], values: s.map((p) => p.output_tokens), fill: true },
    ];
    const cost: ChartSeries[] = [{ label: 'cost', color: PALETTE[2], values: s.map((p) => p.cost_usd), fill: true }];
    return { x, requests, latency, tokens, cost };
  }, [stats]);
  const empty = t.requests === 0;

  return (
    <>
      <div class="kpis" aria-label="Totals for the range" role="group">
        <Kpi label="Requests/s" value={fmtRate(t.requests_per_s)} testid="kpi-rps" raw={t.requests_per_s} />
        <Kpi label="Requests" value={fmtCompact(t.requests)} sub={`${fmtInt(t.errors)} errors`} testid="kpi-requests" raw={t.requests} />
        <Kpi label="Error rate" value={fmtPct(t.error_rate)} testid="kpi-error-rate" raw={t.error_rate} />
        <Kpi label="TTFB p50 / p95" value={`${fmtMs(t.ttfb_ms.p50)}`} sub={`p95 ${fmtMs(t.ttfb_ms.p95)} · p99 ${fmtMs(t.ttfb_ms.p99)}`} testid="kpi-ttfb" />
        <Kpi label="Latency p50 / p95" value={`${fmtMs(t.latency_ms.p50)}`} sub={`p95 ${fmtMs(t.latency_ms.p95)} · p99 ${fmtMs(t.latency_ms.p99)}`} testid="kpi-latency" />
        <Kpi label="Tokens" value={fmtCompact(t.input_tokens + t.output_tokens)} sub={`${fmtCompact(t.input_tokens)} in · ${fmtCompact(t.output_tokens)} out`} testid="kpi-tokens" raw={t.input_tokens + t.output_tokens} />
        <Kpi label="Cost" value={fmtUsd(t.cost_usd)} testid="kpi-cost" raw={t.cost_usd} />
      </div>
      <div class="charts">
        <Card><TimeChart title="Requests and errors per second" x={charts.x} series={charts.requests} format={(v) => fmtRate(v)} axis={fmtTick} empty={empty} /></Card>
        <Card><TimeChart title="Latency and time to first byte" x={charts.x} series={charts.latency} format={(v) => fmtMs(v)} axis={(v) => `${fmtTick(v)} ms`} empty={empty} /></Card>
        <Card><TimeChart title="Tokens" x={charts.x} series={charts.tokens} format={(v) => fmtCompact(v)} axis={fmtTick} empty={empty} /></Card>
        <Card><TimeChart title="Cost (USD)" x={charts.x} series={charts.cost} format={(v) => fmtUsd(v)} axis={(v) => `$${fmtTick(v)}`} empty={empty} /></Card>
      </div>
      <div class="breakdowns">
        <Breakdown id="by-channel" title="By channel" rows={stats.by_channel} />
        <Breakdown id="by-model" title="By model" rows={stats.by_model} />
        <Breakdown id="by-key" title="By key" rows={stats.by_key} keyLinks />
      </div>
    </>
  );
}

// The window's requests by team (from the usage endpoint: a key counts for the team it is in now);
// shown once some key is in a team.
function TeamBreakdown({ stats }: { stats: Stats }) {
  const teams = useAsync<StatsGroup[]>(async (signal) => {
    const page = await api<UsagePage>('/usage', { signal, query: { group_by: 'team', from: String(stats.since_ms), to: String(stats.until_ms) } })
      .catch(() => ({ data: [], from_ms: 0, to_ms: 0 }));
    return page.data.filter((r) => r.requests > 0).sort((a, b) => b.requests - a.requests).map((r) => ({
      id: r.team_id ?? null, name: r.team_id === null || r.team_id === undefined ? '(no team)' : r.team_name ?? `team ${r.team_id}`,
      requests: r.requests, errors: r.errors, input_tokens: r.input_tokens, output_tokens: r.output_tokens, cost_usd: r.cost_usd,
      latency_ms: { p50: null, p95: null },
    }));
  }, [stats.since_ms, stats.until_ms, stats.totals.requests]);
  if (!teams.data || !teams.data.some((r) => r.id !== null)) return null;
  return <div class="breakdowns"><Breakdown id="by-team" title="By team" rows={teams.data} /></div>;
}

function groupName(r: StatsGroup, isKey?: boolean): string {
  if (!isKey) return r.name || '(none)';
  if (r.id === null || r.id === undefined) return 'master key';
  return r.name ?? `key ${r.id} (deleted)`;
}

function Breakdown({ id, title, rows, keyLinks }: { id: string; title: string; rows: StatsGroup[]; keyLinks?: boolean }) {
  const total = rows.reduce((a, r) => a + r.requests, 0) || 1;
  return (
    <Card title={title} id={id}>
      {rows.length === 0 ? (
        <Empty>No requests in this range.</Empty>
      ) : (
        <TableWrap label={title}>
          <table class="table stack-sm" data-testid={id}>
            <thead>
              <tr>
                <th scope="col">{keyLinks ? 'Key' : title.replace('By ', '').replace(/^./, (c) => c.toUpperCase())}</th>
                <th scope="col" class="num">Requests</th>
                <th scope="col" class="num">Errors</th>
                <th scope="col" class="num">Tokens</th>
                <th scope="col" class="num">Cost</th>
                <th scope="col" class="num">p50 / p95</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={`${r.id ?? ''}:${r.name}`}>
                  <th scope="row">
                    <span class="bar" style={{ '--w': `${Math.round((r.requests / total) * 100)}%` }} aria-hidden="true" />
                    {groupName(r, keyLinks)}
                  </th>
                  <td class="num" data-label="Requests">{fmtInt(r.requests)}</td>
                  <td class="num" data-label="Errors">{r.errors ? <span class="text-bad">{fmtInt(r.errors)}</span> : '0'}</td>
                  <td class="num" data-label="Tokens">{fmtCompact(r.input_tokens + r.output_tokens)}</td>
                  <td class="num" data-label="Cost">{fmtUsd(r.cost_usd)}</td>
                  <td class="num" data-label="p50 / p95">{fmtMs(r.latency_ms?.p50)} / {fmtMs(r.latency_ms?.p95)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </Card>
  );
}
