import { useState } from 'preact/hooks';
import { atLeast, useMe } from '../role';
import { api, ApiError } from '../api';
import { fmtBytes, fmtMs, fmtNum } from '../format';
import type { Feature, Price, Settings as SettingsT } from '../types';
import { Badge, Card, Empty, ErrorBox, InlineError, isMissing, Loading, NotAvailable, PageHeader, TableWrap, useAsync } from '../ui';

const SWITCHES = [
  ['cache', 'Response cache', 'Answer repeated identical requests from the cache.'],
  ['redaction', 'PII redaction', 'Mask or encrypt matching text before it leaves, and restore it in answers.'],
  ['screening', 'Prompt-injection screening', 'Score prompts with the local detector.'],
  ['guardrail', 'Guardrail review', 'Send requests to the external review webhook.'],
] as const;
type SwitchName = (typeof SWITCHES)[number][0];

export function Settings() {
  return (
    <>
      <PageHeader title="Settings" />
      <div class="stack">
        <Switches />
        <ConfigCard />
        <Pricing />
      </div>
    </>
  );
}

function ConfigCard() {
  const canEdit = atLeast(useMe(), 'operator');
  const state = useAsync((signal) => api<{ yaml: string; source: string }>('/config', { signal }), []);
  const [result, setResult] = useState<{ ok: boolean; message: string } | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const reload = async () => {
    setBusy(true);
    setResult(null);
    setError(undefined);
    try {
      setResult(await api<{ ok: boolean; message: string }>('/reload', { method: 'POST' }));
      await state.reload();
    } catch (e) {
      // A config that fails validation answers 400 with {ok:false,message}: show it as the result.
      if (e instanceof ApiError && e.status === 400) setResult({ ok: false, message: e.message });
      else setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card title="Running config" id="config" actions={canEdit ? (
      <button type="button" class="btn btn-small" onClick={reload} disabled={busy} aria-busy={busy} data-testid="reload">
        {busy ? 'Reloading…' : 'Reload config'}
      </button>
    ) : undefined}>
      <div aria-live="polite">
        {result && (
          <p class={`state ${result.ok ? 'state-ok' : 'state-error'}`} role={result.ok ? 'status' : 'alert'} data-testid="reload-result">
            {result.ok ? 'Reloaded: ' : 'Not reloaded: '}{result.message}
          </p>
        )}
        <InlineError error={error} />
      </div>
      <ErrorBox error={state.error} onRetry={() => void state.reload()} />
      {state.loading && !state.data && <Loading label="Loading the config…" />}
      {state.data && (
        <>
          <p class="muted">Source: <code>{state.data.source}</code>. Secrets are masked.</p>
          <pre class="code config-yaml" tabIndex={0} aria-label="Effective config (YAML)" data-testid="config-yaml">{state.data.yaml}</pre>
        </>
      )}
    </Card>
  );
}

// What else the gateway says about a feature, as short "name: value" pairs.
function details(f: Feature): string[] {
  const out: string[] = [];
  const show = (k: string, v: unknown) => {
    if (v === null || v === undefined || v === '') return;
    if (Array.isArray(v)) out.push(`${k.replace(/_/g, ' ')}: ${v.length}`);
    else if (typeof v === 'object') for (const [k2, v2] of Object.entries(v as Record<string, unknown>)) show(k2, v2);
    else if (typeof v === 'number') {
      const s = k.endsWith('_ms') ? fmtMs(v) : /(^|_)bytes$/.test(k) ? fmtBytes(v) : fmtNum(v, 3);
      out.push(`${k.replace(/_ms$/, '').replace(/_/g, ' ')}: ${s}`);
    }
    else out.push(`${k.replace(/_/g, ' ')}: ${String(v)}`);
  };
  for (const [k, v] of Object.entries(f)) if (k !== 'enabled') show(k, v);
  return out;
}

function Switches() {
  const canEdit = atLeast(useMe(), 'operator');
  const state = useAsync((signal) => api<SettingsT>('/settings', { signal }), []);
  const [errors, setErrors] = useState<Partial<Record<SwitchName, unknown>>>({});
  const [busy, setBusy] = useState<SwitchName | null>(null);
  // Set when the gateway shows the settings but does not take changes (405): why, in its words.
  const [readOnly, setReadOnly] = useState('');
  const flip = async (name: SwitchName, enabled: boolean) => {
    setBusy(name);
    setErrors({ ...errors, [name]: undefined });
    try {
      state.setData(await api<SettingsT>('/settings', { method: 'PATCH', body: { [name]: { enabled } } }));
    } catch (e) {
      if (e instanceof ApiError && e.status === 405) setReadOnly(e.message);
      else setErrors({ ...errors, [name]: e });
    } finally {
      setBusy(null);
    }
  };
  return (
    <Card title="Features" id="features">
      {isMissing(state.error) ? (
        <NotAvailable what="Switching features at runtime" />
      ) : (
        <>
          <ErrorBox error={state.error} onRetry={() => void state.reload()} />
          {state.loading && !state.data && <Loading label="Loading settings…" />}
          {readOnly && (
            <p class="note" role="alert" data-testid="settings-read-only">
              This gateway shows these settings but does not change them at runtime: {readOnly}
            </p>
          )}
          {state.data && (
            <ul class="switches">
              {SWITCHES.map(([name, label, help]) => {
                const s = state.data?.[name];
                const id = `sw-${name}`;
                return (
                  <li key={name}>
                    <div class="switch-row">
                      <input id={id} type="checkbox" role="switch" class="switch" checked={!!s?.enabled}
                        disabled={!s || busy === name || !!readOnly || !canEdit} aria-describedby={`${id}-help`}
                        onChange={(e) => void flip(name, e.currentTarget.checked)} />
                      <label for={id}>{label}</label>
                      {!s && <Badge kind="neutral">not in this gateway</Badge>}
                    </div>
                    <small id={`${id}-help`} class="hint">{help}</small>
                    {s && details(s).length > 0 && (
                      <p class="feature-details">{details(s).map((d) => <span key={d} class="chip">{d}</span>)}</p>
                    )}
                    <InlineError error={errors[name]} />
                  </li>
                );
              })}
            </ul>
          )}
        </>
      )}
    </Card>
  );
}

function Pricing() {
  const state = useAsync((signal) => api<{ models: Price[] }>('/pricing', { signal }), []);
  const [filter, setFilter] = useState('');
  const models = (state.data?.models ?? [])
    .filter((m) => m.model.toLowerCase().includes(filter.trim().toLowerCase()))
    .sort((a, b) => a.model.localeCompare(b.model));
  return (
    <Card title="Pricing (USD per million tokens)" id="pricing">
      {isMissing(state.error) ? (
        <NotAvailable what="The price table" />
      ) : (
        <>
          <ErrorBox error={state.error} onRetry={() => void state.reload()} />
          {state.loading && !state.data && <Loading label="Loading prices…" />}
          {state.data && (
            <>
              <div class="field field-narrow">
                <label for="price-filter">Filter models</label>
                <input id="price-filter" type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
              </div>
              {models.length === 0 ? (
                <Empty>{filter ? 'No model matches.' : 'No prices.'}</Empty>
              ) : (
                <TableWrap label="Prices">
                  <table class="table stack-sm" data-testid="pricing-table">
                    <thead>
                      <tr>
                        <th scope="col">Model</th>
                        <th scope="col" class="num">Input</th>
                        <th scope="col" class="num">Cached input</th>
                        <th scope="col" class="num">Output</th>
                        <th scope="col">Source</th>
                      </tr>
                    </thead>
                    <tbody>
                      {models.map((m) => (
                        <tr key={m.model}>
                          <th scope="row"><code>{m.model}</code></th>
                          <td class="num" data-label="Input">{fmtNum(m.input_per_mtok, 4)}</td>
                          <td class="num" data-label="Cached input">{m.cached_input_per_mtok == null ? '—' : fmtNum(m.cached_input_per_mtok, 4)}</td>
                          <td class="num" data-label="Output">{fmtNum(m.output_per_mtok, 4)}</td>
                          <td data-label="Source">{m.source === 'config' ? <Badge kind="info">config</Badge> : <Badge kind="neutral">shipped</Badge>}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </TableWrap>
              )}
            </>
          )}
        </>
      )}
    </Card>
  );
}
