import { api, ApiError } from '../api';
import { fmtInt, fmtMs, fmtTime, fmtUsd } from '../format';
import type { Attempt, LogEntry, LogPage, ScreeningVerdict, VirtualKey } from '../types';
import { Badge, Card, Empty, ErrorBox, Loading, PageHeader, TableWrap, useAsync } from '../ui';
import { seenLogs, statusKind } from './Logs';

interface Detail {
  entry: LogEntry;
  fromList: boolean; // the gateway has no detail endpoint: this is the list's row
  keyName?: string;
}

async function findInList(id: number, signal: AbortSignal): Promise<LogEntry | undefined> {
  const seen = seenLogs.get(id);
  if (seen) return seen;
  let cursor: string | null = null;
  for (let pages = 0; pages < 5; pages++) {
    const page: LogPage = await api<LogPage>('/logs', { signal, query: { limit: 1000, cursor: cursor ?? undefined } });
    const hit = page.data.find((r) => r.id === id);
    if (hit) return hit;
    cursor = page.next_cursor;
    if (!cursor || page.data.every((r) => r.id < id)) break;
  }
  return undefined;
}

function pretty(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

export function LogDetail({ id }: { id: string }) {
  const state = useAsync<Detail>(async (signal) => {
    const n = Number(id);
    let entry: LogEntry | undefined;
    let fromList = false;
    try {
      entry = await api<LogEntry>(`/logs/${encodeURIComponent(id)}`, { signal });
    } catch (e) {
      if (!(e instanceof ApiError && e.missingEndpoint)) throw e;
      fromList = true;
      entry = Number.isInteger(n) ? await findInList(n, signal) : undefined;
      if (!entry) throw new ApiError(404, `no logged request with id ${id} among the newest ones`);
    }
    let keyName: string | undefined = entry.virtual_key_name ?? undefined;
    if (entry.virtual_key_id && !keyName) {
      keyName = await api<VirtualKey>(`/keys/${entry.virtual_key_id}`, { signal }).then((k) => k.name).catch(() => undefined);
    }
    return { entry, fromList, keyName };
  }, [id]);

  const e = state.data?.entry;
  return (
    <>
      <PageHeader title={`Request ${e?.request_id || id}`}>
        <a class="btn btn-small" href="#/logs">Back to the logs</a>
      </PageHeader>
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load this request" />
      {state.loading && !e && <Loading label="Loading the request…" />}
      {state.data?.fromList && (
        <p class="note" role="note">This gateway has no per-request endpoint; shown from the log list (no stored bodies).</p>
      )}
      {e && (
        <div class="detail" data-testid="log-detail">
          <Card title="Summary" id="summary">
            <dl class="props props-grid">
              <div><dt>Status</dt><dd><Badge kind={statusKind(e.status)}>{e.status}</Badge></dd></div>
              <div><dt>Time</dt><dd>{fmtTime(e.time_ms)}</dd></div>
              <div><dt>Request id</dt><dd><code class="break" data-testid="detail-request-id">{e.request_id}</code></dd></div>
              <div><dt>Model</dt><dd><code>{e.model || '—'}</code></dd></div>
              <div><dt>Channel</dt><dd>{e.channel || '—'}</dd></div>
              <div><dt>Upstream key</dt><dd><code>{e.upstream_key || '—'}</code></dd></div>
              <div><dt>Virtual key</dt><dd>{e.virtual_key_id ? `${state.data?.keyName ?? 'key'} (id ${e.virtual_key_id})` : 'virtual_key_id' in e ? 'master key' : '—'}</dd></div>
              <div><dt>Stream</dt><dd>{e.stream ? 'yes' : 'no'}</dd></div>
              <div><dt>TTFB</dt><dd>{fmtMs(e.ttfb_ms)}</dd></div>
              <div><dt>Total time</dt><dd>{fmtMs(e.duration_ms)}</dd></div>
              <div><dt>Tokens</dt><dd>{fmtInt(e.input_tokens)} in · {fmtInt(e.output_tokens)} out{e.cached_tokens ? ` · ${fmtInt(e.cached_tokens)} cached` : ''}{e.cache_write_tokens ? ` · ${fmtInt(e.cache_write_tokens)} cache writes` : ''}{e.reasoning_tokens ? ` · ${fmtInt(e.reasoning_tokens)} reasoning` : ''}</dd></div>
              <div><dt>Cost</dt><dd>{fmtUsd(e.cost_usd)}</dd></div>
              <div><dt>Client</dt><dd>{e.client_addr || '—'}</dd></div>
              <div><dt>User agent</dt><dd class="break">{e.user_agent || '—'}</dd></div>
            </dl>
          </Card>
          <Card title={`Attempts (${e.attempts?.length ?? 0})`} id="attempts">
            {!e.attempts?.length ? (
              <Empty>No upstream attempt: the gateway answered by itself (auth, limits, cache or a bad request).</Empty>
            ) : (
              <AttemptsTable attempts={e.attempts} />
            )}
          </Card>
          <Card title="Prompt screening" id="screening">
            {!e.screening?.length ? (
              <Empty>Not screened: screening was off for this request, or it had no user turn or tool result in scope.</Empty>
            ) : (
              <ScreeningTable verdicts={e.screening} />
            )}
          </Card>
          <Card title="Bodies" id="bodies">
            {e.request_body == null && e.response_body == null ? (
              <Empty>Bodies are not kept for this request (turn on <code>store.log_bodies</code> to keep them).</Empty>
            ) : (
              <div class="bodies" data-testid="log-bodies">
                <div>
                  <h3>Request</h3>
                  {e.request_body != null ? <pre class="code" tabIndex={0}>{pretty(e.request_body)}</pre> : <p class="muted">Not kept.</p>}
                </div>
                <div>
                  <h3>Response</h3>
                  {e.response_body != null ? <pre class="code" tabIndex={0}>{pretty(e.response_body)}</pre> : <p class="muted">Not kept.</p>}
                </div>
              </div>
            )}
          </Card>
        </div>
      )}
    </>
  );
}

function AttemptsTable({ attempts }: { attempts: Attempt[] }) {
  // Known columns first, then whatever else the gateway records per attempt (timings...).
  const known = ['channel', 'key', 'status', 'error'];
  const extra = [...new Set(attempts.flatMap((a) => Object.keys(a)).filter((k) => !known.includes(k)))];
  const show = (v: unknown, k: string) => {
    if (v === null || v === undefined || v === '') return '—';
    if (typeof v === 'number' && k.endsWith('_ms')) return fmtMs(v);
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  };
  return (
    <TableWrap label="Attempts">
      <table class="table stack-sm" data-testid="attempts-table">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Channel</th>
            <th scope="col">Key</th>
            <th scope="col">Status</th>
            {extra.map((k) => <th key={k} scope="col">{k.replace(/_/g, ' ')}</th>)}
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {attempts.map((a, i) => (
            <tr key={i}>
              <th scope="row"><span class="sm-only">Attempt </span>{i + 1}</th>
              <td data-label="Channel">{a.channel ?? '—'}</td>
              <td data-label="Key"><code>{a.key ?? '—'}</code></td>
              <td data-label="Status">{a.status ? <Badge kind={statusKind(a.status)}>{a.status}</Badge> : '—'}</td>
              {extra.map((k) => <td key={k} data-label={k.replace(/_/g, ' ')}>{show(a[k], k)}</td>)}
              <td class="break full" data-label="Error">{a.error ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

function ScreeningTable({ verdicts }: { verdicts: ScreeningVerdict[] }) {
  return (
    <TableWrap label="Screening verdicts">
      <table class="table stack-sm" data-testid="screening-table">
        <thead>
          <tr>
            <th scope="col">Part</th>
            <th scope="col">Where</th>
            <th scope="col">Score</th>
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {verdicts.map((v, i) => (
            <tr key={i}>
              <th scope="row">{v.part === 'tool' ? 'tool result' : 'user turn'}</th>
              <td data-label="Where"><code>{v.path ?? 'last user turn'}</code></td>
              <td data-label="Score">{typeof v.score === 'number' ? v.score.toFixed(4) : '—'}</td>
              <td data-label="Verdict">{v.flagged ? <Badge kind="bad">flagged</Badge> : <Badge kind="ok">clean</Badge>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
