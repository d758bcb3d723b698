import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { fmtInt, fmtMs, fmtTime, fmtUsd, fromLocalInput, toLocalInput } from '../format';
import { replaceQuery } from '../router';
import type { Channel, LogEntry, LogPage, VirtualKey } from '../types';
import { Badge, Empty, ErrorBox, InlineError, Loading, PageHeader, TableWrap, useAsync } from '../ui';

// Rows seen in the list, for the detail view of a gateway without GET /admin/api/logs/{id}.
export const seenLogs = new Map<number, LogEntry>();

export interface LogFilters {
  from: string; // datetime-local
  to: string;
  key: string; // virtual key id, "master", or ""
  model: string;
  channel: string;
  status: string;
}

const FILTER_NAMES: Array<keyof LogFilters> = ['from', 'to', 'key', 'model', 'channel', 'status'];

function filtersFrom(q: URLSearchParams): LogFilters {
  const f = Object.fromEntries(FILTER_NAMES.map((n) => [n, q.get(n) ?? ''])) as unknown as LogFilters;
  if (f.from && /^\d+$/.test(f.from)) f.from = toLocalInput(Number(f.from));
  if (f.to && /^\d+$/.test(f.to)) f.to = toLocalInput(Number(f.to));
  return f;
}

export function statusKind(s: number): string {
  if (s >= 500) return 'bad';
  if (s >= 400) return 'warn';
  if (s >= 200 && s < 300) return 'ok';
  return 'neutral';
}

export function Logs({ query }: { query: URLSearchParams }) {
  const [draft, setDraft] = useState<LogFilters>(() => filtersFrom(query));
  const [applied, setApplied] = useState<LogFilters>(draft);
  const [rows, setRows] = useState<LogEntry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [moreError, setMoreError] = useState<unknown>(undefined);
  const [loadingMore, setLoadingMore] = useState(false);
  const [keyFilterIgnored, setKeyFilterIgnored] = useState(false);

  const lookups = useAsync(async (signal) => {
    const [keys, channels] = await Promise.all([
      api<{ data: VirtualKey[] }>('/keys', { signal }).catch(() => ({ data: [] as VirtualKey[] })),
      api<{ data: Channel[] }>('/channels', { signal }).catch(() => ({ data: [] as Channel[] })),
    ]);
    return { keys: keys.data, channels: channels.data.map((c) => c.name) };
  }, []);
  const keyName = (id: number | null | undefined) => {
    if (id === undefined) return '';
    if (id === null) return 'master key';
    return lookups.data?.keys.find((k) => k.id === id)?.name ?? `key ${id}`;
  };

  const params = (f: LogFilters, c?: string | null) => ({
    from: fromLocalInput(f.from) ?? undefined,
    to: fromLocalInput(f.to) ?? undefined,
    model: f.model.trim() || undefined,
    channel: f.channel || undefined,
    status: f.status.trim() || undefined,
    virtual_key_id: f.key && f.key !== 'master' ? f.key : undefined,
    limit: 50,
    cursor: c ?? undefined,
  });

  // The gateway may not filter by key yet: filter what it returns when the rows say which key they used.
  const byKey = (f: LogFilters, data: LogEntry[]) => {
    if (!f.key) return data;
    if (data.length && !('virtual_key_id' in data[0])) {
      setKeyFilterIgnored(true);
      return data;
    }
    setKeyFilterIgnored(false);
    return data.filter((r) => (f.key === 'master' ? !r.virtual_key_id : String(r.virtual_key_id) === f.key));
  };

  const state = useAsync(async (signal) => {
    const page = await api<LogPage>('/logs', { signal, query: params(applied) });
    page.data.forEach((r) => seenLogs.set(r.id, r));
    setRows(byKey(applied, page.data));
    setCursor(page.next_cursor);
    return page;
  }, [JSON.stringify(applied)]);

  useEffect(() => {
    const q: Record<string, string> = {};
    for (const n of FILTER_NAMES) if (applied[n]) q[n] = applied[n];
    if (q.from) q.from = String(fromLocalInput(q.from) ?? '');
    if (q.to) q.to = String(fromLocalInput(q.to) ?? '');
    replaceQuery(q);
  }, [JSON.stringify(applied)]);

  const more = async () => {
    setLoadingMore(true);
    setMoreError(undefined);
    try {
      const page = await api<LogPage>('/logs', { query: params(applied, cursor) });
      page.data.forEach((r) => seenLogs.set(r.id, r));
      setRows([...rows, ...byKey(applied, page.data)]);
      setCursor(page.next_cursor);
    } catch (e) {
      setMoreError(e);
    } finally {
      setLoadingMore(false);
    }
  };

  const set = (k: keyof LogFilters, v: string) => setDraft({ ...draft, [k]: v });
  const anyFilter = FILTER_NAMES.some((n) => applied[n]);

  return (
    <>
      <PageHeader title="Request logs">
        <button type="button" class="btn btn-small" onClick={() => void state.reload()} disabled={state.loading}>Refresh</button>
      </PageHeader>
      <form class="card filters" aria-label="Filter the logs" onSubmit={(e) => { e.preventDefault(); setApplied({ ...draft }); }}>
        <div class="filter-grid">
          <div class="field">
            <label for="f-from">From</label>
            <input id="f-from" type="datetime-local" value={draft.from} onInput={(e) => set('from', e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="f-to">To</label>
            <input id="f-to" type="datetime-local" value={draft.to} onInput={(e) => set('to', e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="f-key">Key</label>
            <select id="f-key" value={draft.key} onChange={(e) => set('key', e.currentTarget.value)}>
              <option value="">any key</option>
              <option value="master">master key</option>
              {lookups.data?.keys.map((k) => <option key={k.id} value={String(k.id)}>{k.name} ({k.key_prefix}…)</option>)}
            </select>
          </div>
          <div class="field">
            <label for="f-model">Model</label>
            <input id="f-model" value={draft.model} placeholder="exact name" onInput={(e) => set('model', e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="f-channel">Channel</label>
            <select id="f-channel" value={draft.channel} onChange={(e) => set('channel', e.currentTarget.value)}>
              <option value="">any channel</option>
              {lookups.data?.channels.map((c) => <option key={c} value={c}>{c}</option>)}
            </select>
          </div>
          <div class="field">
            <label for="f-status">Status</label>
            <input id="f-status" type="number" min={100} max={599} value={draft.status} placeholder="e.g. 429" list="statuses"
              onInput={(e) => set('status', e.currentTarget.value)} />
            <datalist id="statuses">
              {[200, 400, 401, 403, 404, 429, 500, 502, 503, 504].map((s) => <option key={s} value={s} />)}
            </datalist>
          </div>
        </div>
        <div class="form-actions">
          <button type="submit" class="btn btn-primary">Apply filters</button>
          <button type="button" class="btn btn-ghost" disabled={!anyFilter && !FILTER_NAMES.some((n) => draft[n])}
            onClick={() => { const empty = filtersFrom(new URLSearchParams()); setDraft(empty); setApplied(empty); }}>
            Clear
          </button>
        </div>
      </form>
      {keyFilterIgnored && (
        <p class="note" role="note">This gateway does not say which key each request used, so the key filter is not applied.</p>
      )}
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load the logs" />
      {state.loading && !state.data && <Loading label="Loading logs…" />}
      {state.data && rows.length === 0 && (
        <Empty>{anyFilter ? 'No requests match these filters.' : 'No requests logged yet. Send one through the gateway (the Playground does).'}</Empty>
      )}
      {rows.length > 0 && (
        <TableWrap label="Request logs">
          <table class="table logs stack-sm" data-testid="logs-table">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Status</th>
                <th scope="col">Model</th>
                <th scope="col">Channel</th>
                <th scope="col">Key</th>
                <th scope="col" class="num">Tries</th>
                <th scope="col" class="num">TTFB</th>
                <th scope="col" class="num">Total</th>
                <th scope="col" class="num">Tokens in/out</th>
                <th scope="col" class="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-testid="log-row" data-model={r.model}>
                  <th scope="row">
                    <a href={`#/logs/${r.id}`} aria-label={`Request ${r.request_id || r.id}, details`}>{fmtTime(r.time_ms)}</a>
                  </th>
                  <td data-label="Status"><Badge kind={statusKind(r.status)}>{r.status}</Badge>{r.stream && <span class="muted small"> stream</span>}</td>
                  <td data-label="Model"><code>{r.model || '—'}</code></td>
                  <td data-label="Channel">{r.channel || '—'}</td>
                  <td data-label="Key">{'virtual_key_id' in r ? keyName(r.virtual_key_id) : <span class="muted">—</span>}</td>
                  <td class="num" data-label="Tries">{r.attempts?.length ?? 0}</td>
                  <td class="num" data-label="TTFB">{fmtMs(r.ttfb_ms)}</td>
                  <td class="num" data-label="Total">{fmtMs(r.duration_ms)}</td>
                  <td class="num" data-label="Tokens in/out">{fmtInt(r.input_tokens)} / {fmtInt(r.output_tokens)}</td>
                  <td class="num" data-label="Cost">{fmtUsd(r.cost_usd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {cursor && (
        <div class="more">
          <button type="button" class="btn" onClick={more} disabled={loadingMore} aria-busy={loadingMore}>
            {loadingMore ? 'Loading…' : 'Load older requests'}
          </button>
          <InlineError error={moreError} />
        </div>
      )}
    </>
  );
}
