// The audit log: every admin write, who made it, from where, and the object before and after.
import { useState } from 'preact/hooks';
import { api } from '../api';
import { fmtTime } from '../format';
import type { AuditEntry } from '../types';
import { Badge, Empty, ErrorBox, InlineError, Loading, PageHeader, TableWrap, useAsync } from '../ui';

const ACTIONS = ['', 'create', 'update', 'delete', 'revoke', 'enable', 'disable', 'probe', 'reload', 'settings'];

function Change({ e }: { e: AuditEntry }) {
  const show = (v: unknown) => (v === null || v === undefined ? '—' : JSON.stringify(v, null, 2));
  return (
    <details class="audit-change">
      <summary>before / after</summary>
      <div class="audit-diff">
        <div><h4>Before</h4><pre class="break">{show(e.before)}</pre></div>
        <div><h4>After</h4><pre class="break">{show(e.after)}</pre></div>
      </div>
    </details>
  );
}

export function Audit() {
  const [actor, setActor] = useState('');
  const [action, setAction] = useState('');
  const [applied, setApplied] = useState({ actor: '', action: '' });
  const [more, setMore] = useState<{ rows: AuditEntry[]; cursor: string | null }>({ rows: [], cursor: null });
  const [moreError, setMoreError] = useState<unknown>(undefined);
  const state = useAsync(async (signal) => {
    const page = await api<{ data: AuditEntry[]; next_cursor: string | null }>('/audit', {
      signal, query: { actor: applied.actor.trim() || undefined, action: applied.action || undefined, limit: 50 } });
    setMore({ rows: [], cursor: page.next_cursor });
    return page.data;
  }, [applied]);
  const rows = [...(state.data ?? []), ...more.rows];
  const loadMore = async () => {
    setMoreError(undefined);
    try {
      const page = await api<{ data: AuditEntry[]; next_cursor: string | null }>('/audit', {
        query: { actor: applied.actor.trim() || undefined, action: applied.action || undefined, limit: 50, cursor: more.cursor } });
      setMore({ rows: [...more.rows, ...page.data], cursor: page.next_cursor });
    } catch (e) {
      setMoreError(e);
    }
  };
  return (
    <>
      <PageHeader title="Audit log" />
      <p class="lead">Every change made through the admin API or this console, newest first. Secrets are masked; nothing here can be edited.</p>
      <form class="filters" onSubmit={(e) => { e.preventDefault(); setApplied({ actor, action }); }} aria-label="Audit filters">
        <label for="audit-actor">Who</label>
        <input id="audit-actor" value={actor} placeholder="master key, token:ci-deploy" onInput={(e) => setActor(e.currentTarget.value)} />
        <label for="audit-action">Action</label>
        <select id="audit-action" value={action} onChange={(e) => setAction(e.currentTarget.value)}>
          {ACTIONS.map((a) => <option key={a} value={a}>{a || 'any'}</option>)}
        </select>
        <button type="submit" class="btn">Apply filters</button>
      </form>
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load the audit log" />
      {!state.data && state.loading && <Loading label="Loading the audit log…" />}
      {state.data && rows.length === 0 && <Empty>No admin changes recorded{applied.actor || applied.action ? ' for these filters' : ''}.</Empty>}
      {rows.length > 0 && (
        <TableWrap label="Audit log">
          <table class="table stack-sm" aria-label="Audit log" data-testid="audit-table">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">From</th>
                <th scope="col">Change</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((e) => (
                <tr key={e.id} data-testid="audit-row" data-action={e.action} data-actor={e.actor}>
                  <th scope="row">{fmtTime(e.time_ms)}</th>
                  <td data-label="Who">{e.actor} <Badge kind="neutral">{e.role}</Badge></td>
                  <td data-label="Action"><code>{e.action}</code> <span class="muted">{e.method} {e.status}</span></td>
                  <td data-label="Target"><code class="break">{e.target}</code></td>
                  <td data-label="From">{e.address}</td>
                  <td data-label="Change"><Change e={e} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {more.cursor && <button type="button" class="btn" onClick={() => void loadMore()}>Load more</button>}
      <InlineError error={moreError} />
    </>
  );
}
