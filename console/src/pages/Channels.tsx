import { useState } from 'preact/hooks';
import { atLeast, useMe } from '../role';
import { api, ApiError, errorText } from '../api';
import { fmtInt, fmtMs, fmtRelative, fmtTime, splitList } from '../format';
import { PROTECT_PARAMS, ProtectFields, protectBody, protectForm, ProtectProps, type ProtectForm } from '../protect';
import type { Channel, Discovery, KeyHealth, ProbeResult, UpstreamKey } from '../types';
import {
  ActionButton, Badge, describedBy, Empty, ErrorBox, Field, fieldError, InlineError, Loading, PageHeader,
  TableWrap, useAsync, usePoll,
} from '../ui';

const TYPES = ['openai', 'anthropic', 'gemini', 'azure', 'openai-compatible', 'mock', 'bedrock', 'vertex'];
// The text fields of the cloud providers: vertex's project and location, an azure channel's Entra ID.
const CLOUD_TEXT = ['project', 'location', 'tenant_id', 'client_id', 'client_secret', 'token_url'] as const;
type CloudText = (typeof CLOUD_TEXT)[number];
const LIMITS = [
  ['rpm', 'Requests per minute'],
  ['tpm', 'Tokens per minute'],
  ['max_concurrent', 'Max concurrent'],
  ['key_rpm', 'Per-key RPM'],
  ['key_tpm', 'Per-key TPM'],
] as const;
type LimitName = (typeof LIMITS)[number][0];

interface Data {
  channels: Channel[];
  health: KeyHealth[];
  discovery: Discovery[];
}

export function Channels() {
  const state = useAsync<Data>(async (signal) => {
    const [channels, health, discovery] = await Promise.all([
      api<{ data: Channel[] }>('/channels', { signal }),
      api<{ data: KeyHealth[] }>('/upstream-keys', { signal }),
      api<{ data: Discovery[] }>('/model-discovery', { signal }),
    ]);
    return { channels: channels.data, health: health.data, discovery: discovery.data };
  }, []);
  // Key health changes on its own (cool-downs end, probes run): keep it fresh.
  usePoll(() => { if (!state.loading) void state.reload(); }, 5000);
  const [creating, setCreating] = useState(false);
  const canEdit = atLeast(useMe(), 'operator');

  // After a change the gateway picks up store channels within a second: reload now and once more then.
  const changed = async () => {
    await state.reload();
    window.setTimeout(() => void state.reload(), 1200);
  };

  const d = state.data;
  return (
    <>
      <PageHeader title="Channels">
        {canEdit && (
          <button type="button" class="btn btn-primary" onClick={() => setCreating(!creating)} aria-expanded={creating}
            aria-controls="new-channel">
            {creating ? 'Close form' : 'New channel'}
          </button>
        )}
      </PageHeader>
      <p class="lead">
        A channel is one provider endpoint with a pool of API keys and the models it serves. Channels from the config
        file are shown read-only; edit the file and reload to change them.
      </p>
      {creating && (
        <div id="new-channel">
          <ChannelForm onDone={async () => { setCreating(false); await changed(); }} onCancel={() => setCreating(false)} />
        </div>
      )}
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load the channels" />
      {!d && state.loading && <Loading label="Loading channels…" />}
      {d && d.channels.length === 0 && (
        <Empty>No channels yet. Create one to send requests to a provider.</Empty>
      )}
      {d && (
        <div class="stack">
          {d.channels.map((ch) => (
            <ChannelCard key={`${ch.source}:${ch.id ?? ch.name}`} channel={ch}
              health={d.health.filter((h) => h.channel === ch.name)}
              discovery={d.discovery.find((x) => x.channel === ch.name)} onChange={changed} />
          ))}
        </div>
      )}
    </>
  );
}

// A moving average of time to first byte and of failed attempts, as one short phrase.
function latencyText(ttfb: number | null | undefined, errors: number | undefined): string {
  if (ttfb === null || ttfb === undefined) return errors ? `${Math.round(errors * 100)}% failed` : 'not measured yet';
  return `${fmtMs(ttfb)} to first byte, ${Math.round((errors ?? 0) * 100)}% failed`;
}

function slug(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, '-');
}

function ChannelCard({ channel: ch, health, discovery, onChange }: {
  channel: Channel; health: KeyHealth[]; discovery?: Discovery; onChange: () => Promise<void>;
}) {
  const [editing, setEditing] = useState(false);
  const canEdit = atLeast(useMe(), 'operator');
  const fromConfig = ch.source === 'config';
  const id = `ch-${slug(ch.name)}`;
  const limits = LIMITS.filter(([k]) => ch[k] !== null && ch[k] !== undefined);
  return (
    <section class="card channel" aria-labelledby={`${id}-title`} data-testid={`channel-${ch.name}`}>
      <header class="card-head">
        <h2 id={`${id}-title`}>{ch.name}</h2>
        <div class="badges">
          <Badge kind="neutral">{ch.type}</Badge>
          {fromConfig
            ? <Badge kind="info" title="Defined in the config file; read-only here">config file{ch.line ? `, line ${ch.line}` : ''}</Badge>
            : <Badge kind="neutral">store</Badge>}
          {ch.enabled ? <Badge kind="ok">enabled</Badge> : <Badge kind="bad">disabled</Badge>}
        </div>
        {canEdit && !fromConfig && ch.id !== null && (
          <div class="card-actions">
            <button type="button" class="btn btn-small" onClick={() => setEditing(!editing)} aria-expanded={editing}>
              {editing ? 'Cancel edit' : 'Edit'}
            </button>
            <ActionButton
              label={`${ch.enabled ? 'Disable' : 'Enable'} channel ${ch.name}`}
              onClick={async () => { await api(`/channels/${ch.id}`, { method: 'PATCH', body: { enabled: !ch.enabled } }); await onChange(); }}>
              {ch.enabled ? 'Disable' : 'Enable'}
            </ActionButton>
            <ActionButton kind="btn-danger" label={`Delete channel ${ch.name}`}
              confirm={`Delete channel "${ch.name}" and its upstream keys? This cannot be undone.`}
              onClick={async () => { await api(`/channels/${ch.id}`, { method: 'DELETE' }); await onChange(); }}>
              Delete
            </ActionButton>
          </div>
        )}
      </header>
      {editing ? (
        <ChannelForm channel={ch} onDone={async () => { setEditing(false); await onChange(); }} onCancel={() => setEditing(false)} />
      ) : (
        <dl class="props">
          <div><dt>Base URL</dt><dd><code class="break">{ch.base_url}</code></dd></div>
          <div><dt>Models</dt><dd>{ch.models.map((m) => <code key={m} class="chip">{m}</code>)}</dd></div>
          {discovery && (
            <div>
              <dt>Discovered models</dt>
              <dd data-testid="channel-discovered">
                {discovery.models.map((m) => <code key={m} class="chip">{m}</code>)}
                {discovery.models.length === 0 && !discovery.error && (
                  <span class="muted">
                    {discovery.refreshed_at_ms === null ? 'not asked yet' : 'the provider lists none they match'}
                  </span>
                )}
                {discovery.refreshed_at_ms !== null && (
                  <span class="muted"> listed by the provider {fmtRelative(discovery.refreshed_at_ms)}</span>
                )}
                {discovery.error && <span class="text-bad" role="status"> last refresh failed: {discovery.error}</span>}
              </dd>
            </div>
          )}
          {ch.type === 'vertex' && ch.project && (
            <div><dt>Project / location</dt><dd><code>{ch.project}</code> / <code>{ch.location}</code></dd></div>
          )}
          {ch.subscription && <div><dt>Subscription</dt><dd>{ch.subscription}</dd></div>}
          {ch.client_id && (
            <div>
              <dt>Entra ID</dt>
              <dd data-testid="channel-entra">
                application <code>{ch.client_id}</code>{ch.tenant_id ? <> in tenant <code>{ch.tenant_id}</code></> : null}
              </dd>
            </div>
          )}
          <div><dt>Priority / weight</dt><dd>{ch.priority} / {ch.weight}</dd></div>
          <div><dt>Recent latency</dt><dd data-testid="channel-latency">{latencyText(health[0]?.channel_ttfb_ewma_ms, health[0]?.channel_error_ewma)}</dd></div>
          {limits.length > 0 && (
            <div><dt>Limits</dt><dd>{limits.map(([k, label]) => <span key={k} class="chip">{label}: {fmtInt(ch[k] as number)}</span>)}</dd></div>
          )}
          {ch.model_map && Object.keys(ch.model_map).length > 0 && (
            <div><dt>Model map</dt><dd>{Object.entries(ch.model_map).map(([a, b]) => <code key={a} class="chip">{a} → {b}</code>)}</dd></div>
          )}
          <ProtectProps o={ch} testid="channel" />
          {ch.headers && Object.keys(ch.headers).length > 0 && (
            <div><dt>Headers</dt><dd>{Object.entries(ch.headers).map(([a, b]) => <code key={a} class="chip">{a}: {b}</code>)}</dd></div>
          )}
        </dl>
      )}
      <KeyPool channel={ch} health={health} onChange={onChange} />
    </section>
  );
}

// ---- key pool ----

function KeyState({ h }: { h: KeyHealth }) {
  if (h.state === 'active') return <Badge kind="ok">active</Badge>;
  if (h.state === 'cooling')
    return (
      <span>
        <Badge kind="warn">cooling</Badge>{' '}
        {h.cooldown_until_ms ? <span class="muted" title={fmtTime(h.cooldown_until_ms)}>until {fmtTime(h.cooldown_until_ms)} ({fmtRelative(h.cooldown_until_ms)})</span> : null}
        {h.reason && <span class="muted"> — {h.reason}</span>}
      </span>
    );
  return (
    <span>
      <Badge kind="bad">disabled</Badge> {h.manual && <Badge kind="neutral" title="Disabled by hand: probes leave it disabled">by hand</Badge>}
      {h.reason && <span class="muted"> — {h.reason}</span>}
    </span>
  );
}

function KeyPool({ channel: ch, health, onChange }: { channel: Channel; health: KeyHealth[]; onChange: () => Promise<void> }) {
  const [adding, setAdding] = useState(false);
  const canEdit = atLeast(useMe(), 'operator');
  const store = canEdit && ch.source === 'store' && ch.id !== null;
  const storeKeys = (ch.keys ?? []) as UpstreamKey[];
  // Store keys the router does not list yet (just added, or the channel is disabled).
  const pending = store ? storeKeys.filter((k) => !health.some((h) => h.store_id === k.id)) : [];
  const title = `Key pool of ${ch.name}`;
  return (
    <div class="keypool">
      <div class="keypool-head">
        <h3>Key pool <span class="muted">({health.length + pending.length})</span></h3>
        {store && (
          <button type="button" class="btn btn-small" onClick={() => setAdding(!adding)} aria-expanded={adding}>
            {adding ? 'Cancel' : 'Add key'}
          </button>
        )}
      </div>
      {adding && store && <AddKeyForm channel={ch} onDone={async () => { setAdding(false); await onChange(); }} />}
      {health.length + pending.length === 0 ? (
        <Empty>{ch.type === 'mock' ? 'No keys: the mock provider needs none.' : 'No keys in this pool.'}</Empty>
      ) : (
        <TableWrap label={title}>
          <table class="table stack-sm" aria-label={title}>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">State</th>
                <th scope="col" class="num">OK / failed</th>
                <th scope="col" class="num">Recent latency</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {health.map((h) => (
                <KeyRow key={h.ref} h={h} label={storeKeys.find((k) => k.id === h.store_id)?.label} channel={ch} onChange={onChange} />
              ))}
              {pending.map((k) => (
                <tr key={`p${k.id}`}>
                  <th scope="row"><code>{k.masked ?? '(cannot decrypt)'}</code> {k.label && <span class="muted">{k.label}</span>}</th>
                  <td data-label="State">{k.state === 'disabled' ? <><Badge kind="bad">disabled</Badge> <span class="muted">{k.disabled_reason}</span></> : <Badge kind="neutral">{ch.enabled ? 'being picked up…' : 'channel disabled'}</Badge>}</td>
                  <td class="num" data-label="OK / failed">—</td>
                  <td class="num" data-label="Recent latency">—</td>
                  <td data-label="Actions">
                    <ActionButton kind="btn-danger" label={`Remove key ${k.masked ?? k.id}`} confirm="Remove this key from the pool?"
                      onClick={async () => { await api(`/channels/${ch.id}/keys/${k.id}`, { method: 'DELETE' }); await onChange(); }}>
                      Remove
                    </ActionButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </div>
  );
}

function KeyRow({ h, label, channel: ch, onChange }: { h: KeyHealth; label?: string; channel: Channel; onChange: () => Promise<void> }) {
  const [probe, setProbe] = useState<ProbeResult | null>(null);
  const canEdit = atLeast(useMe(), 'operator');
  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const ref = encodeURIComponent(h.ref);
  const reasonId = `reason-${slug(h.ref)}`;

  const disable = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api(`/upstream-keys/${ref}/disable`, { method: 'POST', body: { reason: reason.trim() || 'disabled from the console' } });
      setConfirming(false);
      setReason('');
      await onChange();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <tr data-testid={`key-${h.ref}`} data-state={h.state}>
      <th scope="row">
        <code>{h.masked}</code> {label && <span class="muted">{label}</span>}
      </th>
      <td data-label="State"><KeyState h={h} /></td>
      <td class="num" data-label="OK / failed">{fmtInt(h.successes ?? 0)} / {fmtInt(h.failures ?? 0)}</td>
      <td class="num" data-label="Recent latency">{latencyText(h.ttfb_ewma_ms, h.error_ewma)}</td>
      <td data-label="Actions">
        {canEdit && <div class="row-actions">
          <ActionButton label={`Test key ${h.masked}`} testid="probe"
            onClick={async () => { setProbe(null); const r = await api<ProbeResult>(`/upstream-keys/${ref}/probe`, { method: 'POST' }); setProbe(r); await onChange(); }}>
            Test
          </ActionButton>
          {h.state === 'disabled' || h.state === 'cooling' ? (
            <ActionButton label={`Enable key ${h.masked}`} testid="enable"
              onClick={async () => { await api(`/upstream-keys/${ref}/enable`, { method: 'POST' }); await onChange(); }}>
              Enable
            </ActionButton>
          ) : null}
          {h.state !== 'disabled' && !confirming && (
            <button type="button" class="btn btn-small" aria-label={`Disable key ${h.masked}`} data-testid="disable"
              onClick={() => setConfirming(true)}>
              Disable
            </button>
          )}
          {ch.source === 'store' && ch.id !== null && h.store_id ? (
            <ActionButton kind="btn-danger" label={`Remove key ${h.masked}`} confirm="Remove this key from the pool?"
              onClick={async () => { await api(`/channels/${ch.id}/keys/${h.store_id}`, { method: 'DELETE' }); await onChange(); }}>
              Remove
            </ActionButton>
          ) : null}
        </div>}
        {confirming && (
          <form class="inline-form" onSubmit={disable}>
            <label for={reasonId}>Reason</label>
            <input id={reasonId} value={reason} placeholder="rotating" maxLength={500}
              onInput={(e) => setReason(e.currentTarget.value)} autoFocus />
            <button type="submit" class="btn btn-small btn-danger" disabled={busy} data-testid="confirm-disable">Disable key</button>
            <button type="button" class="btn btn-small btn-ghost" onClick={() => setConfirming(false)}>Cancel</button>
          </form>
        )}
        <InlineError error={error} />
        {probe && (
          <p class={`probe ${probe.ok ? 'text-ok' : 'text-bad'}`} role="status" data-testid="probe-result">
            {probe.ok ? 'Works' : 'Failed'}: HTTP {probe.status || '—'} in {fmtMs(probe.latency_ms)}{probe.message ? ` — ${probe.message}` : ''}
          </p>
        )}
      </td>
    </tr>
  );
}

function AddKeyForm({ channel: ch, onDone }: { channel: Channel; onDone: () => Promise<void> }) {
  const [secret, setSecret] = useState('');
  const [label, setLabel] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const base = `add-key-${slug(ch.name)}`;
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api(`/channels/${ch.id}/keys`, { method: 'POST', body: { secret, label } });
      setSecret('');
      setLabel('');
      await onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const se = fieldError(error, 'secret');
  const le = fieldError(error, 'label');
  return (
    <form class="form form-inline-grid" onSubmit={submit} aria-label={`Add a key to ${ch.name}`}>
      {ch.subscription ? (
        <Field id={`${base}-secret`} label="Credential file" error={se}
          hint={`Paste ${ch.subscription === 'claude' ? '~/.claude/.credentials.json (after claude /login)' : '~/.codex/auth.json (after codex login)'}. Sealed before it is stored; never shown again.`}>
          <textarea id={`${base}-secret`} rows={3} autoComplete="off" spellcheck={false} value={secret} required
            class="secret-paste" onInput={(e) => setSecret(e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-secret`, 'h', se)} aria-invalid={!!se} />
        </Field>
      ) : (
        <Field id={`${base}-secret`} label="Provider API key" error={se} hint="Encrypted before it is stored; shown masked afterwards.">
          <input id={`${base}-secret`} type="password" autoComplete="off" value={secret} required
            onInput={(e) => setSecret(e.currentTarget.value)} aria-describedby={describedBy(`${base}-secret`, 'h', se)} aria-invalid={!!se} />
        </Field>
      )}
      <Field id={`${base}-label`} label="Label (optional)" error={le}>
        <input id={`${base}-label`} value={label} maxLength={128} onInput={(e) => setLabel(e.currentTarget.value)}
          aria-describedby={describedBy(`${base}-label`, undefined, le)} />
      </Field>
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={busy || !secret}>Add key</button>
      </div>
      {error && !se && !le ? <InlineError error={error} /> : null}
    </form>
  );
}

// ---- create / edit ----

interface FormState {
  name: string;
  type: string;
  base_url: string;
  models: string;
  priority: string;
  weight: string;
  enabled: boolean;
  api_version: string;
  region: string;
  subscription: string;
  project: string;
  location: string;
  tenant_id: string;
  client_id: string;
  client_secret: string;
  token_url: string;
  model_map: string;
  headers: string;
  limits: Record<LimitName, string>;
  protect: ProtectForm;
  first_key: string;
}

function toForm(ch?: Channel): FormState {
  return {
    name: ch?.name ?? '',
    type: ch?.type ?? 'openai-compatible',
    base_url: ch?.base_url ?? '',
    models: (ch?.models ?? []).join(', '),
    priority: String(ch?.priority ?? 1),
    weight: String(ch?.weight ?? 1),
    enabled: ch?.enabled ?? true,
    api_version: ch?.api_version ?? '',
    region: ch?.region ?? '',
    subscription: ch?.subscription ?? '',
    project: ch?.project ?? '',
    location: ch?.location ?? '',
    tenant_id: ch?.tenant_id ?? '',
    client_id: ch?.client_id ?? '',
    client_secret: ch?.client_secret ?? '',
    token_url: ch?.token_url ?? '',
    model_map: Object.entries(ch?.model_map ?? {}).map(([a, b]) => `${a}=${b}`).join('\n'),
    headers: Object.entries(ch?.headers ?? {}).map(([a, b]) => `${a}: ${b}`).join('\n'),
    limits: Object.fromEntries(LIMITS.map(([k]) => [k, ch?.[k] != null ? String(ch[k]) : ''])) as Record<LimitName, string>,
    protect: protectForm(ch),
    first_key: '',
  };
}

function parsePairs(text: string, sep: string, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const i = line.indexOf(sep);
    if (i <= 0) throw new ApiError(0, `${what}: each line is "name${sep === ':' ? ': ' : sep}value"; got "${line}"`, what === 'Headers' ? 'headers' : 'model_map');
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

function intOrNull(s: string, param: string): number | null {
  if (!s.trim()) return null;
  const n = Number(s);
  if (!Number.isInteger(n)) throw new ApiError(0, `${param} must be a whole number`, param);
  return n;
}

function ChannelForm({ channel, onDone, onCancel }: { channel?: Channel; onDone: () => Promise<void>; onCancel: () => void }) {
  const [f, setF] = useState<FormState>(() => toForm(channel));
  const [error, setError] = useState<unknown>(undefined);
  const [keyError, setKeyError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const base = channel ? `edit-${slug(channel.name)}` : 'new-ch';
  const set = <K extends keyof FormState>(k: K, v: FormState[K]) => setF({ ...f, [k]: v });

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setKeyError(undefined);
    try {
      const body: Record<string, unknown> = {
        name: f.name.trim(),
        type: f.type,
        base_url: f.base_url.trim(),
        models: splitList(f.models),
        priority: intOrNull(f.priority, 'priority') ?? 1,
        weight: intOrNull(f.weight, 'weight') ?? 1,
        enabled: f.enabled,
      };
      for (const [k] of LIMITS) body[k] = intOrNull(f.limits[k], k);
      Object.assign(body, protectBody(f.protect));
      if (f.type === 'azure' || f.api_version) body.api_version = f.api_version.trim() || null;
      if (f.type === 'bedrock' || f.region) body.region = f.region.trim() || null;
      if (f.type === 'vertex') {
        body.project = f.project.trim() || null;
        body.location = f.location.trim() || null;
      }
      const sub = (f.type === 'anthropic' || f.type === 'openai') && f.subscription ? f.subscription : '';
      if (sub || channel?.subscription) body.subscription = sub || null;
      if (f.type === 'azure') {
        // Entra ID: all or none; a masked secret sent back keeps the stored one.
        const entra = !!(f.tenant_id.trim() || f.client_id.trim() || f.client_secret || f.token_url.trim());
        body.tenant_id = entra && f.tenant_id.trim() ? f.tenant_id.trim() : null;
        body.client_id = entra ? f.client_id.trim() || null : null;
        body.client_secret = entra ? f.client_secret || null : null;
        body.token_url = entra && f.token_url.trim() ? f.token_url.trim() : null;
      } else if (sub) {
        body.token_url = f.token_url.trim() || null;
      }
      const mm = parsePairs(f.model_map, '=', 'Model map');
      body.model_map = Object.keys(mm).length ? mm : null;
      const orig = toForm(channel);
      if (!channel || f.headers !== orig.headers) body.headers = parsePairs(f.headers, ':', 'Headers');
      if (channel) {
        // Send only what changed: a PATCH of untouched fields would be a no-op anyway.
        const before: Record<string, unknown> = {
          name: channel.name, type: channel.type, base_url: channel.base_url, models: channel.models,
          priority: channel.priority, weight: channel.weight, enabled: channel.enabled,
          api_version: channel.api_version ?? null, region: channel.region || null,
          project: channel.project || null, location: channel.location || null, subscription: channel.subscription ?? null,
          tenant_id: channel.tenant_id || null, client_id: channel.client_id || null,
          client_secret: channel.client_secret || null, token_url: channel.token_url ?? null, model_map: channel.model_map && Object.keys(channel.model_map).length ? channel.model_map : null,
          ...Object.fromEntries(LIMITS.map(([k]) => [k, channel[k] ?? null])),
          ...protectBody(protectForm(channel)),
        };
        for (const k of Object.keys(body)) {
          if (k !== 'headers' && JSON.stringify(body[k]) === JSON.stringify(before[k])) delete body[k];
        }
        await api(`/channels/${channel.id}`, { method: 'PATCH', body });
      } else {
        if (body.api_version === null) delete body.api_version;
        if (body.region === null) delete body.region;
        for (const k of [...CLOUD_TEXT, 'subscription']) if (body[k] === null) delete body[k];
        if (body.model_map === null) delete body.model_map;
        for (const k of [...LIMITS.map(([l]) => l), ...PROTECT_PARAMS]) if (body[k] === null) delete body[k];
        const created = await api<Channel>('/channels', { method: 'POST', body });
        if (f.first_key.trim()) {
          try {
            await api(`/channels/${created.id}/keys`, { method: 'POST', body: { secret: f.first_key.trim(), label: 'first key' } });
          } catch (err) {
            setKeyError(err);
            setBusy(false);
            return;
          }
        }
      }
      await onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const fe = (p: string) => fieldError(error, p);
  const text = (k: 'name' | 'base_url' | 'api_version' | 'region' | CloudText, label: string, hint?: string, extra: Record<string, unknown> = {}) => (
    <Field id={`${base}-${k}`} label={label} hint={hint} error={fe(k)}>
      <input id={`${base}-${k}`} name={k} value={f[k]} onInput={(e) => set(k, e.currentTarget.value)}
        aria-describedby={describedBy(`${base}-${k}`, hint, fe(k))} aria-invalid={!!fe(k)} {...extra} />
    </Field>
  );
  const unmatched = error && !['name', 'type', 'base_url', 'models', 'priority', 'weight', 'enabled', 'api_version', 'region', 'subscription', ...CLOUD_TEXT, 'model_map', 'headers', ...LIMITS.map(([k]) => k), ...PROTECT_PARAMS].some((p) => fe(p));

  return (
    <form class="form card" onSubmit={submit} aria-label={channel ? `Edit channel ${channel.name}` : 'New channel'} data-testid="channel-form">
      {!channel && <h2>New channel</h2>}
      <div class="form-grid">
        {text('name', 'Name', 'Letters, digits, _ . - ; also the prefix that pins it: NAME/model', { required: true, maxLength: 64, pattern: '[A-Za-z0-9_.\\-]{1,64}' })}
        <Field id={`${base}-type`} label="Type" error={fe('type')}>
          <select id={`${base}-type`} name="type" value={f.type} onChange={(e) => set('type', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-type`, undefined, fe('type'))}>
            {TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </Field>
        {text('base_url', 'Base URL', 'The API root as the provider\'s SDK takes it, e.g. https://api.openai.com/v1', { required: true, type: 'url', inputMode: 'url', placeholder: 'https://…' })}
        <Field id={`${base}-models`} label="Models" hint="Names or globs, separated by commas: gpt-4o*, llama-3*" error={fe('models')}>
          <input id={`${base}-models`} name="models" value={f.models} required onInput={(e) => set('models', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-models`, 'h', fe('models'))} aria-invalid={!!fe('models')} />
        </Field>
        <Field id={`${base}-priority`} label="Priority" hint="Lower is tried first" error={fe('priority')}>
          <input id={`${base}-priority`} type="number" step={1} value={f.priority} onInput={(e) => set('priority', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-priority`, 'h', fe('priority'))} />
        </Field>
        <Field id={`${base}-weight`} label="Weight" hint="Share among equal priorities; 0 = standby" error={fe('weight')}>
          <input id={`${base}-weight`} type="number" min={0} step={1} value={f.weight} onInput={(e) => set('weight', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-weight`, 'h', fe('weight'))} />
        </Field>
        {LIMITS.map(([k, label]) => (
          <Field key={k} id={`${base}-${k}`} label={label} hint="Blank: no limit" error={fe(k)}>
            <input id={`${base}-${k}`} type="number" min={1} step={1} value={f.limits[k]}
              onInput={(e) => set('limits', { ...f.limits, [k]: e.currentTarget.value })}
              aria-describedby={describedBy(`${base}-${k}`, 'h', fe(k))} />
          </Field>
        ))}
        <ProtectFields base={base} value={f.protect} onChange={(v) => set('protect', v)} error={fe} what="this channel" />
        {(f.type === 'azure' || f.api_version) && text('api_version', 'API version', 'Azure api-version, e.g. 2024-10-21')}
        {f.type === 'vertex' && text('project', 'Google Cloud project', 'The project id in the model URLs, e.g. my-project', { required: true })}
        {f.type === 'vertex' && text('location', 'Location', 'e.g. us-central1, or global', { required: true })}
        {(f.type === 'anthropic' || f.type === 'openai') && (
          <Field id={`${base}-subscription`} label="Subscription" error={fe('subscription')}
            hint="Sign in with a Claude (anthropic) or ChatGPT (openai) subscription: keys are the CLI's credential file">
            <select id={`${base}-subscription`} name="subscription" value={f.subscription}
              onChange={(e) => set('subscription', e.currentTarget.value)}
              aria-describedby={describedBy(`${base}-subscription`, 'h', fe('subscription'))}>
              <option value="">none (API keys)</option>
              {f.type === 'anthropic' && <option value="claude">claude</option>}
              {f.type === 'openai' && <option value="chatgpt">chatgpt</option>}
            </select>
          </Field>
        )}
        {f.type === 'azure' && (
          <fieldset class="field field-wide" aria-describedby={`${base}-entra-hint`}>
            <legend>Entra ID (optional)</legend>
            <small id={`${base}-entra-hint`} class="hint">
              Instead of, or besides, API keys: an application's client credentials. Leave blank to use keys only.
            </small>
            <div class="form-grid">
              {text('tenant_id', 'Tenant', 'A GUID or a domain such as contoso.onmicrosoft.com')}
              {text('client_id', 'Client (application) id')}
              <Field id={`${base}-client_secret`} label="Client secret" error={fe('client_secret')}
                hint={channel?.client_secret ? 'Stored encrypted; leave the masked value to keep it.' : 'Encrypted before it is stored.'}>
                <input id={`${base}-client_secret`} name="client_secret" type="password" autoComplete="off"
                  value={f.client_secret} onInput={(e) => set('client_secret', e.currentTarget.value)}
                  aria-describedby={describedBy(`${base}-client_secret`, 'h', fe('client_secret'))} aria-invalid={!!fe('client_secret')} />
              </Field>
              {text('token_url', 'Token URL (optional)', 'Default: https://login.microsoftonline.com/TENANT/oauth2/v2.0/token', { type: 'url', inputMode: 'url' })}
            </div>
          </fieldset>
        )}
        {(f.type === 'bedrock' || f.region) && text('region', 'AWS region', 'Bedrock: the region requests are signed for, e.g. us-east-1; keys are ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]')}
        <Field id={`${base}-model_map`} label="Model map" hint="One per line: client-name=upstream-name" error={fe('model_map')} wide>
          <textarea id={`${base}-model_map`} rows={2} value={f.model_map} onInput={(e) => set('model_map', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-model_map`, 'h', fe('model_map'))} />
        </Field>
        <Field id={`${base}-headers`} label="Extra headers" hint="One per line: Name: value. Masked values sent back unchanged keep what is stored." error={fe('headers')} wide>
          <textarea id={`${base}-headers`} rows={2} value={f.headers} onInput={(e) => set('headers', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-headers`, 'h', fe('headers'))} />
        </Field>
        {!channel && (f.type === 'vertex' || ((f.type === 'anthropic' || f.type === 'openai') && f.subscription)) && (
          <Field id={`${base}-first_key`} wide
            label={f.type === 'vertex' ? 'Service account JSON key (optional)' : 'Credential file (optional)'}
            hint={f.type === 'vertex'
              ? 'Paste the key file\'s content. Sealed before it is stored; shown by its client_email.'
              : `Paste ${f.subscription === 'claude' ? '~/.claude/.credentials.json (after claude /login)' : '~/.codex/auth.json (after codex login)'}. Sealed before it is stored; never shown again.`}>
            <textarea id={`${base}-first_key`} rows={4} autoComplete="off" spellcheck={false} value={f.first_key}
              class="secret-paste" onInput={(e) => set('first_key', e.currentTarget.value)} aria-describedby={`${base}-first_key-hint`} />
          </Field>
        )}
        {!channel && !(f.type === 'vertex' || ((f.type === 'anthropic' || f.type === 'openai') && f.subscription)) && (
          <Field id={`${base}-first_key`} label="Provider API key (optional)" hint="Added to the new channel's key pool, encrypted." wide>
            <input id={`${base}-first_key`} type="password" autoComplete="off" value={f.first_key}
              onInput={(e) => set('first_key', e.currentTarget.value)} aria-describedby={`${base}-first_key-hint`} />
          </Field>
        )}
        <div class="field field-check">
          <input id={`${base}-enabled`} type="checkbox" checked={f.enabled} onChange={(e) => set('enabled', e.currentTarget.checked)} />
          <label for={`${base}-enabled`}>Enabled</label>
        </div>
      </div>
      {unmatched ? <InlineError error={error} /> : null}
      {keyError ? (
        <p class="inline-error" role="alert">
          The channel was created, but its key was refused: {errorText(keyError)}
          {' '}<button type="button" class="btn btn-small" onClick={() => void onDone()}>Continue</button>
        </p>
      ) : null}
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={busy} aria-busy={busy}>
          {channel ? 'Save changes' : 'Create channel'}
        </button>
        <button type="button" class="btn btn-ghost" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}
