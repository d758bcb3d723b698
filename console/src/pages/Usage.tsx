import { useMemo, useState } from 'preact/hooks';
import { api, errorFrom, rawRequest, withQuery } from '../api';
import { PALETTE, TimeChart } from '../chart';
import { fmtCompact, fmtDay, fmtInt, fmtUsd } from '../format';
import type { UsagePage, UsageRow, VirtualKey } from '../types';
import { Card, Empty, ErrorBox, InlineError, Loading, PageHeader, TableWrap, useAsync } from '../ui';

const DIMS = [
  ['day', 'Day'],
  ['model', 'Model'],
  ['channel', 'Channel'],
  ['key', 'Key'],
  ['team', 'Team'],
] as const;
type Dim = (typeof DIMS)[number][0];

const DAY = 86_400_000;

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

interface Query {
  from: string; // YYYY-MM-DD, UTC
  to: string; // inclusive
  by: Dim[];
}

function toParams(q: Query): Record<string, string> {
  const from = Date.parse(`${q.from}T00:00:00Z`);
  const to = Date.parse(`${q.to}T00:00:00Z`) + DAY;
  return { from: String(from), to: String(to), by: q.by.join(',') };
}

function csvCell(v: unknown): string {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function Usage() {
  const today = Date.now();
  const [draft, setDraft] = useState<Query>({ from: isoDay(today - 29 * DAY), to: isoDay(today), by: ['day'] });
  const [q, setQ] = useState<Query>(draft);
  const [exportError, setExportError] = useState<unknown>(undefined);
  const [exportNote, setExportNote] = useState('');
  const [exporting, setExporting] = useState(false);

  const keys = useAsync(async (signal) => (await api<{ data: VirtualKey[] }>('/keys', { signal }).catch(() => ({ data: [] as VirtualKey[] }))).data, []);
  const state = useAsync(async (signal) => api<UsagePage>('/usage', { signal, query: toParams(q) }), [JSON.stringify(q)]);
  const keyName = (id: number | null | undefined) =>
    id === null || id === undefined ? 'master key' : keys.data?.find((k) => k.id === id)?.name ?? `key ${id}`;

  const rows = state.data?.data ?? [];
  const total = rows.reduce<Omit<UsageRow, 'day_ms'>>((a, r) => ({
    requests: a.requests + r.requests, errors: a.errors + r.errors, input_tokens: a.input_tokens + r.input_tokens,
    output_tokens: a.output_tokens + r.output_tokens, cached_tokens: a.cached_tokens + r.cached_tokens, cost_usd: a.cost_usd + r.cost_usd,
  }), { requests: 0, errors: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, cost_usd: 0 });

  const chart = useMemo(() => {
    if (q.by.length !== 1 || q.by[0] !== 'day' || rows.length === 0) return null;
    const sorted = [...rows].sort((a, b) => (a.day_ms ?? 0) - (b.day_ms ?? 0));
    return {
      x: sorted.map((r) => (r.day_ms ?? 0) / 1000),
      req: [{ label: 'requests', color: PALETTE[0], values: sorted.map((r) => r.requests), fill: true }],
      cost: [{ label: 'cost', color: PALETTE[2], values: sorted.map((r) => r.cost_usd), fill: true }],
    };
  }, [state.data, q]);

  const label = (r: UsageRow, d: Dim) => {
    if (d === 'day') return r.day_ms !== undefined ? fmtDay(r.day_ms) : '—';
    if (d === 'key') return keyName(r.virtual_key_id);
    if (d === 'team') return r.team_id === null || r.team_id === undefined ? '(no team)' : r.team_name ?? `team ${r.team_id}`;
    return (d === 'model' ? r.model : r.channel) || '(none)';
  };

  const exportCsv = async () => {
    setExporting(true);
    setExportError(undefined);
    setExportNote('');
    try {
      const params = { ...toParams(q), format: 'csv' };
      const res = await rawRequest(withQuery('/admin/api/usage', params));
      if (!res.ok) throw await errorFrom(res);
      let blob: Blob;
      if ((res.headers.get('content-type') ?? '').includes('json')) {
        // A gateway without CSV export answers JSON: write the same rows as CSV here.
        const page = (await res.json()) as UsagePage;
        const cols = [...q.by.map((d) => (d === 'day' ? 'day' : d === 'key' ? 'virtual_key_id' : d === 'team' ? 'team_name' : d)),
          'requests', 'errors', 'input_tokens', 'output_tokens', 'cached_tokens', 'cost_usd'];
        const lines = [cols.join(',')];
        for (const r of page.data) {
          lines.push(cols.map((c) => csvCell(c === 'day' ? (r.day_ms !== undefined ? isoDay(r.day_ms) : '') : (r as unknown as Record<string, unknown>)[c])).join(','));
        }
        blob = new Blob([`${lines.join('\n')}\n`], { type: 'text/csv' });
        setExportNote('This gateway has no CSV export: the file was written in the browser from the same data.');
      } else {
        blob = await res.blob();
      }
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `sluice-usage-${q.from}-to-${q.to}${q.by.length ? `-by-${q.by.join('-')}` : ''}.csv`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      setExportError(e);
    } finally {
      setExporting(false);
    }
  };

  const toggle = (d: Dim, on: boolean) =>
    setDraft({ ...draft, by: DIMS.map(([x]) => x).filter((x) => (x === d ? on : draft.by.includes(x))) });

  return (
    <>
      <PageHeader title="Usage" />
      <form class="card filters" aria-label="Usage range and grouping" onSubmit={(e) => { e.preventDefault(); setQ({ ...draft }); }}>
        <div class="filter-grid">
          <div class="field">
            <label for="u-from">From (UTC day)</label>
            <input id="u-from" type="date" value={draft.from} required onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })} />
          </div>
          <div class="field">
            <label for="u-to">To (UTC day, included)</label>
            <input id="u-to" type="date" value={draft.to} required onInput={(e) => setDraft({ ...draft, to: e.currentTarget.value })} />
          </div>
          <fieldset class="field checks">
            <legend>Group by</legend>
            {DIMS.map(([d, l]) => (
              <label key={d} class="check">
                <input type="checkbox" checked={draft.by.includes(d)} onChange={(e) => toggle(d, e.currentTarget.checked)} />
                {l}
              </label>
            ))}
          </fieldset>
        </div>
        <div class="form-actions">
          <button type="submit" class="btn btn-primary">Show</button>
          <button type="button" class="btn" onClick={exportCsv} disabled={exporting} aria-busy={exporting} data-testid="export-csv">
            {exporting ? 'Exporting…' : 'Export CSV'}
          </button>
          <InlineError error={exportError} />
          {exportNote && <span class="hint" role="status">{exportNote}</span>}
        </div>
      </form>
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load usage" />
      {state.loading && !state.data && <Loading label="Loading usage…" />}
      {chart && (
        <div class="charts">
          <Card><TimeChart title="Requests per day" x={chart.x} series={chart.req} format={(v) => fmtCompact(v)} /></Card>
          <Card><TimeChart title="Cost per day (USD)" x={chart.x} series={chart.cost} format={(v) => fmtUsd(v)} /></Card>
        </div>
      )}
      {state.data && rows.length === 0 && <Empty>No requests in this range.</Empty>}
      {rows.length > 0 && (
        <TableWrap label="Usage">
          <table class="table stack-sm" data-testid="usage-table">
            <thead>
              <tr>
                {q.by.length === 0 && <th scope="col">Range</th>}
                {q.by.map((d) => <th key={d} scope="col">{DIMS.find(([x]) => x === d)![1]}</th>)}
                <th scope="col" class="num">Requests</th>
                <th scope="col" class="num">Errors</th>
                <th scope="col" class="num">Input tokens</th>
                <th scope="col" class="num">Output tokens</th>
                <th scope="col" class="num">Cached</th>
                <th scope="col" class="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r, i) => (
                <tr key={i}>
                  {q.by.length === 0 && <th scope="row">{q.from} – {q.to}</th>}
                  {q.by.map((d, j) => (j === 0 ? <th key={d} scope="row">{label(r, d)}</th> : <td key={d} data-label={DIMS.find(([x]) => x === d)![1]}>{label(r, d)}</td>))}
                  <td class="num" data-label="Requests">{fmtInt(r.requests)}</td>
                  <td class="num" data-label="Errors">{fmtInt(r.errors)}</td>
                  <td class="num" data-label="Input tokens">{fmtInt(r.input_tokens)}</td>
                  <td class="num" data-label="Output tokens">{fmtInt(r.output_tokens)}</td>
                  <td class="num" data-label="Cached">{fmtInt(r.cached_tokens)}</td>
                  <td class="num" data-label="Cost">{fmtUsd(r.cost_usd)}</td>
                </tr>
              ))}
            </tbody>
            <tfoot>
              <tr>
                <th scope="row" colSpan={Math.max(1, q.by.length)}>Total</th>
                <td class="num" data-label="Requests">{fmtInt(total.requests)}</td>
                <td class="num" data-label="Errors">{fmtInt(total.errors)}</td>
                <td class="num" data-label="Input tokens">{fmtInt(total.input_tokens)}</td>
                <td class="num" data-label="Output tokens">{fmtInt(total.output_tokens)}</td>
                <td class="num" data-label="Cached">{fmtInt(total.cached_tokens)}</td>
                <td class="num" data-label="Cost">{fmtUsd(total.cost_usd)}</td>
              </tr>
            </tfoot>
          </table>
        </TableWrap>
      )}
    </>
  );
}
