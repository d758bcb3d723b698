import { useState } from 'preact/hooks';
import { atLeast, useMe } from '../role';
import { api, ApiError } from '../api';
import { fmtCompact, fmtInt, fmtRelative, fmtTime, fmtUsd, fromLocalInput, splitList, toLocalInput } from '../format';
import { PROTECT_PARAMS, ProtectFields, protectBody, protectForm, ProtectProps, type ProtectForm } from '../protect';
import type { Channel, McpServer, Team, UsagePage, VirtualKey } from '../types';
import {
  ActionButton, Badge, CopyButton, describedBy, Empty, ErrorBox, Field, fieldError, InlineError, Loading, PageHeader,
  useAsync,
} from '../ui';

interface Data {
  keys: VirtualKey[];
  channels: string[];
  tools: string[];  // the MCP tools the gateway offers now (SERVER__TOOL)
  teams: Team[];    // those the caller may put keys in (a member: their own)
  usage: Map<number, { requests: number; tokens: number }>;
}

const LIMITS = [
  ['rpm', 'Requests per minute'],
  ['tpm', 'Tokens per minute'],
  ['max_concurrent', 'Max concurrent'],
] as const;
const BUDGETS = [
  ['budget_daily_usd', 'Daily budget (USD)', 'day_usd'],
  ['budget_monthly_usd', 'Monthly budget (USD)', 'month_usd'],
  ['budget_total_usd', 'Total budget (USD)', 'total_usd'],
] as const;

// Operators manage every key; a member, their teams' keys (the gateway lists only those to them).
function useCanEdit(): boolean {
  const me = useMe();
  return atLeast(me, 'operator') || me.role === 'member';
}

export function Keys() {
  const canEdit = useCanEdit();
  const [status, setStatus] = useState('');
  const state = useAsync<Data>(async (signal) => {
    const [keys, channels, usage, mcp, teams] = await Promise.all([
      api<{ data: VirtualKey[] }>('/keys', { signal, query: { status } }),
      api<{ data: Channel[] }>('/channels', { signal }).catch(() => ({ data: [] as Channel[] })),
      api<UsagePage>('/usage', { signal, query: { by: 'key' } }).catch(() => ({ data: [], from_ms: 0, to_ms: 0 })),
      api<{ data: McpServer[] }>('/mcp-servers', { signal }).catch(() => ({ data: [] as McpServer[] })),
      api<{ data: Team[] }>('/teams', { signal }).catch(() => ({ data: [] as Team[] })),
    ]);
    const u = new Map<number, { requests: number; tokens: number }>();
    for (const r of usage.data) if (r.virtual_key_id) u.set(r.virtual_key_id, { requests: r.requests, tokens: r.input_tokens + r.output_tokens });
    const tools = mcp.data.flatMap((m) => m.tools.map((t) => t.name)).sort();
    return { keys: keys.data, channels: channels.data.map((c) => c.name), tools, usage: u, teams: teams.data };
  }, [status]);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);

  const d = state.data;
  return (
    <>
      <PageHeader title="Virtual keys">
        <label class="inline-label" for="key-status">Show</label>
        <select id="key-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          <option value="">all keys</option>
          <option value="active">active</option>
          <option value="revoked">revoked</option>
          <option value="expired">expired</option>
        </select>
        {canEdit && (
          <button type="button" class="btn btn-primary" onClick={() => { setCreating(!creating); setSecret(null); }}
            aria-expanded={creating} aria-controls="new-key">
            {creating ? 'Close form' : 'New key'}
          </button>
        )}
      </PageHeader>
      <p class="lead">Give each application or team its own key, with its own limits, budgets and model list. The store keeps only a hash: the secret is shown once.</p>
      {secret && <SecretReveal {...secret} onDismiss={() => setSecret(null)} />}
      {creating && (
        <div id="new-key">
          <KeyForm channels={d?.channels ?? []} tools={d?.tools ?? []} teams={d?.teams ?? []}
            onCancel={() => setCreating(false)}
            onSaved={async (r) => {
              setCreating(false);
              if (r) setSecret(r);
              await state.reload();
            }} />
        </div>
      )}
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load the keys" />
      {!d && state.loading && <Loading label="Loading keys…" />}
      {d && d.keys.length === 0 && <Empty>{status ? `No ${status} keys.` : 'No virtual keys yet. Create one for each application.'}</Empty>}
      {d && d.keys.length > 0 && (
        <ul class="stack keylist" aria-label="Virtual keys">
          {d.keys.map((k) => <KeyCard key={k.id} k={k} channels={d.channels} tools={d.tools} teams={d.teams} usage={d.usage.get(k.id)} onChange={() => state.reload()} />)}
        </ul>
      )}
    </>
  );
}

function SecretReveal({ name, secret, onDismiss }: { name: string; secret: string; onDismiss: () => void }) {
  return (
    <section class="card secret" role="region" aria-labelledby="secret-title" data-testid="secret-reveal">
      <h2 id="secret-title">Key “{name}” created</h2>
      <p>Copy the secret now: it is not stored and will not be shown again.</p>
      <div class="secret-row">
        <code class="secret-value break" data-testid="new-key-secret" data-copy-source>{secret}</code>
        <CopyButton text={secret} label="Copy secret" />
      </div>
      <button type="button" class="btn btn-small btn-ghost" onClick={onDismiss}>I have stored it</button>
    </section>
  );
}

function statusBadge(k: VirtualKey) {
  if (k.status === 'active') return <Badge kind="ok">active</Badge>;
  if (k.status === 'revoked') return <Badge kind="bad" title={fmtTime(k.revoked_at_ms)}>revoked</Badge>;
  return <Badge kind="warn">expired</Badge>;
}

function Meter({ label, spent, budget }: { label: string; spent: number; budget: number | null }) {
  if (budget === null) return (
    <div class="meter-row"><span>{label}</span><span class="num">{fmtUsd(spent)}</span></div>
  );
  const pct = budget > 0 ? Math.min(100, (spent / budget) * 100) : 100;
  return (
    <div class="meter-row">
      <span>{label}</span>
      <meter min={0} max={budget || 1} value={Math.min(spent, budget || 1)} high={(budget || 1) * 0.8} optimum={0}
        aria-label={`${label}: ${fmtUsd(spent)} of ${fmtUsd(budget)}`} />
      <span class={`num${pct >= 100 ? ' text-bad' : ''}`}>{fmtUsd(spent)} / {fmtUsd(budget)}</span>
    </div>
  );
}

function KeyCard({ k, channels, tools, teams, usage, onChange }: {
  k: VirtualKey; channels: string[]; tools: string[]; teams: Team[]; usage?: { requests: number; tokens: number }; onChange: () => Promise<void>;
}) {
  const [editing, setEditing] = useState(false);
  const canEdit = useCanEdit();
  const team = k.team_id === null || k.team_id === undefined ? null : teams.find((t) => t.id === k.team_id);
  const limits = LIMITS.filter(([f]) => k[f] !== null);
  return (
    <li class="card key" data-testid={`vkey-${k.name}`} aria-labelledby={`vk-${k.id}`}>
      <header class="card-head">
        <h2 id={`vk-${k.id}`}>{k.name}</h2>
        <div class="badges">
          <code title="The first characters of the secret">{k.key_prefix}…</code>
          {statusBadge(k)}
        </div>
        {canEdit && <div class="card-actions">
          {k.status !== 'revoked' && (
            <button type="button" class="btn btn-small" onClick={() => setEditing(!editing)} aria-expanded={editing}>
              {editing ? 'Cancel edit' : 'Edit'}
            </button>
          )}
          {k.status !== 'revoked' && (
            <ActionButton kind="btn-danger" label={`Revoke key ${k.name}`}
              confirm={`Revoke "${k.name}"? Applications using it get 401 within a second.`}
              onClick={async () => { await api(`/keys/${k.id}/revoke`, { method: 'POST' }); await onChange(); }}>
              Revoke
            </ActionButton>
          )}
          <ActionButton kind="btn-ghost" label={`Delete key ${k.name}`} confirm={`Delete "${k.name}"? Its request logs stay.`}
            onClick={async () => { await api(`/keys/${k.id}`, { method: 'DELETE' }); await onChange(); }}>
            Delete
          </ActionButton>
        </div>}
      </header>
      {editing ? (
        <KeyForm k={k} channels={channels} tools={tools} teams={teams} onCancel={() => setEditing(false)} onSaved={async () => { setEditing(false); await onChange(); }} />
      ) : (
        <div class="key-body">
          <dl class="props">
            <div><dt>Team</dt><dd data-testid="key-team">{k.team_id === null || k.team_id === undefined ? 'none' : team?.name ?? `team ${k.team_id}`}</dd></div>
            <div><dt>Models</dt><dd>{k.allowed_models.length ? k.allowed_models.map((m) => <code key={m} class="chip">{m}</code>) : 'every model'}</dd></div>
            <div><dt>Channels</dt><dd>{k.allowed_channels.length ? k.allowed_channels.map((m) => <code key={m} class="chip">{m}</code>) : 'every channel'}</dd></div>
            <div><dt>MCP tools</dt><dd data-testid="key-tools">{(k.allowed_tools ?? []).length ? k.allowed_tools.map((m) => <code key={m} class="chip">{m}</code>) : 'every tool'}</dd></div>
            <div><dt>Limits</dt><dd>{limits.length ? limits.map(([f, label]) => <span key={f} class="chip">{label}: {fmtInt(k[f])}</span>) : 'none'}</dd></div>
            <ProtectProps o={k} testid="key" />
            <div><dt>Expires</dt><dd>{k.expires_at_ms ? <span title={fmtTime(k.expires_at_ms)}>{fmtTime(k.expires_at_ms)} ({fmtRelative(k.expires_at_ms)})</span> : 'never'}</dd></div>
            <div><dt>Created</dt><dd>{fmtTime(k.created_at_ms)}</dd></div>
            <div><dt>Last 30 days</dt><dd data-testid="key-usage">{usage ? `${fmtInt(usage.requests)} requests · ${fmtCompact(usage.tokens)} tokens` : 'no requests'}</dd></div>
          </dl>
          <div class="meters" role="group" aria-label={`Spend of ${k.name}`}>
            <Meter label="Today" spent={k.spend.day_usd} budget={k.budget_daily_usd} />
            <Meter label="This month" spent={k.spend.month_usd} budget={k.budget_monthly_usd} />
            <Meter label="In total" spent={k.spend.total_usd} budget={k.budget_total_usd} />
          </div>
        </div>
      )}
    </li>
  );
}

interface FormState {
  name: string;
  allowed_models: string;
  allowed_channels: string[];
  allowed_tools: string;
  rpm: string;
  tpm: string;
  max_concurrent: string;
  budget_daily_usd: string;
  budget_monthly_usd: string;
  budget_total_usd: string;
  expires: string;
  team: string;  // the team's id; '' for none
  protect: ProtectForm;
}

function toForm(k?: VirtualKey): FormState {
  const s = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  return {
    name: k?.name ?? '',
    allowed_models: (k?.allowed_models ?? []).join(', '),
    allowed_channels: k?.allowed_channels ?? [],
    allowed_tools: (k?.allowed_tools ?? []).join(', '),
    rpm: s(k?.rpm), tpm: s(k?.tpm), max_concurrent: s(k?.max_concurrent),
    budget_daily_usd: s(k?.budget_daily_usd), budget_monthly_usd: s(k?.budget_monthly_usd), budget_total_usd: s(k?.budget_total_usd),
    expires: toLocalInput(k?.expires_at_ms),
    team: k?.team_id === null || k?.team_id === undefined ? '' : String(k.team_id),
    protect: protectForm(k),
  };
}

function num(s: string, param: string, integer: boolean): number | null {
  if (!s.trim()) return null;
  const n = Number(s);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n)))
    throw new ApiError(0, `${param} must be ${integer ? 'a whole number' : 'a number'}`, param);
  return n;
}

function KeyForm({ k, channels, tools, teams, onSaved, onCancel }: {
  k?: VirtualKey; channels: string[]; tools: string[]; teams: Team[]; onSaved: (created?: { name: string; secret: string }) => Promise<void>; onCancel: () => void;
}) {
  const me = useMe();
  // A member's keys stay in one of their teams: no "no team" choice, and their first team by default.
  const member = me.role === 'member';
  const [f, setF] = useState<FormState>(() => {
    const s = toForm(k);
    if (!k && member && teams.length > 0) s.team = String(teams[0].id);
    return s;
  });
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const base = k ? `edit-key-${k.id}` : 'new-key';
  const set = <K extends keyof FormState>(key: K, v: FormState[K]) => setF({ ...f, [key]: v });
  const allChannels = [...new Set([...channels, ...f.allowed_channels])];

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: Record<string, unknown> = {
        name: f.name.trim(),
        allowed_models: splitList(f.allowed_models),
        allowed_channels: f.allowed_channels,
        allowed_tools: splitList(f.allowed_tools),
      };
      for (const [p] of LIMITS) body[p] = num(f[p], p, true);
      for (const [p] of BUDGETS) body[p] = num(f[p], p, false);
      const exp = fromLocalInput(f.expires);
      if (f.expires && exp === null) throw new ApiError(0, 'expiry is not a valid date', 'expires_at_ms');
      body.expires_at_ms = exp;
      body.team_id = f.team ? Number(f.team) : null;
      Object.assign(body, protectBody(f.protect));
      if (k) {
        const before = toForm(k);
        if (f.name === before.name) delete body.name;
        if (f.allowed_models === before.allowed_models) delete body.allowed_models;
        if (JSON.stringify(f.allowed_channels) === JSON.stringify(before.allowed_channels)) delete body.allowed_channels;
        if (f.allowed_tools === before.allowed_tools) delete body.allowed_tools;
        for (const [p] of [...LIMITS, ...BUDGETS]) if (f[p] === before[p]) delete body[p];
        if (f.expires === before.expires) delete body.expires_at_ms;
        if (f.team === before.team) delete body.team_id;
        for (const p of PROTECT_PARAMS) if (f.protect[p] === before.protect[p]) delete body[p];
        await api(`/keys/${k.id}`, { method: 'PATCH', body });
        await onSaved();
      } else {
        for (const key of Object.keys(body)) if (body[key] === null) delete body[key];
        if ((body.allowed_tools as string[]).length === 0) delete body.allowed_tools;
        const r = await api<{ key: VirtualKey; secret: string }>('/keys', { method: 'POST', body });
        await onSaved({ name: r.key.name, secret: r.secret });
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const fe = (p: string) => fieldError(error, p);
  const known = ['name', 'team_id', 'allowed_models', 'allowed_channels', 'allowed_tools', 'expires_at_ms', 'expires_at', ...PROTECT_PARAMS, ...LIMITS.map(([p]) => p), ...BUDGETS.map(([p]) => p)];
  const numField = (p: keyof FormState & string, label: string, integer: boolean, hint: string) => (
    <Field key={p} id={`${base}-${p}`} label={label} hint={hint} error={fe(p)}>
      <input id={`${base}-${p}`} name={p} type="number" min={integer ? 1 : 0} step={integer ? 1 : 'any'} value={f[p] as string}
        onInput={(e) => set(p, e.currentTarget.value as never)} aria-describedby={describedBy(`${base}-${p}`, hint, fe(p))} aria-invalid={!!fe(p)} />
    </Field>
  );
  return (
    <form class="form card" onSubmit={submit} aria-label={k ? `Edit key ${k.name}` : 'New virtual key'} data-testid="key-form">
      {!k && <h2>New virtual key</h2>}
      <div class="form-grid">
        <Field id={`${base}-name`} label="Name" error={fe('name')} hint="Who uses it: an app, a team">
          <input id={`${base}-name`} name="name" value={f.name} required maxLength={128} onInput={(e) => set('name', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-name`, 'h', fe('name'))} aria-invalid={!!fe('name')} />
        </Field>
        <Field id={`${base}-team`} label="Team" error={fe('team_id')} hint="Its limits and budgets also bound this key">
          <select id={`${base}-team`} name="team" value={f.team} onChange={(e) => set('team', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-team`, 'h', fe('team_id'))} aria-invalid={!!fe('team_id')}>
            {!member && <option value="">no team</option>}
            {teams.map((t) => <option key={t.id} value={String(t.id)}>{t.name}</option>)}
            {f.team && !teams.some((t) => String(t.id) === f.team) && <option value={f.team}>team {f.team}</option>}
          </select>
        </Field>
        <Field id={`${base}-allowed_models`} label="Allowed models" error={fe('allowed_models')} hint="Names or globs, comma separated; blank: every model">
          <input id={`${base}-allowed_models`} name="allowed_models" value={f.allowed_models} placeholder="gpt-4o*, mock-*"
            onInput={(e) => set('allowed_models', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-allowed_models`, 'h', fe('allowed_models'))} aria-invalid={!!fe('allowed_models')} />
        </Field>
        <ToolsField base={base} value={f.allowed_tools} tools={tools} error={fe('allowed_tools')}
          onChange={(v) => set('allowed_tools', v)} />
        {LIMITS.map(([p, label]) => numField(p, label, true, 'Blank: no limit'))}
        {BUDGETS.map(([p, label]) => numField(p, label, false, 'Blank: no budget'))}
        <Field id={`${base}-expires`} label="Expires" error={fe('expires_at_ms') ?? fe('expires_at')} hint="Local time; blank: never">
          <input id={`${base}-expires`} name="expires" type="datetime-local" value={f.expires}
            onInput={(e) => set('expires', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-expires`, 'h', fe('expires_at_ms') ?? fe('expires_at'))} />
        </Field>
        <ProtectFields base={base} value={f.protect} onChange={(v) => set('protect', v)} error={fe} what="this key" />
        <fieldset class="field field-wide checks">
          <legend>Allowed channels <small class="hint">(none ticked: every channel)</small></legend>
          {allChannels.length === 0 && <span class="muted">No channels to choose from.</span>}
          {allChannels.map((c) => (
            <label key={c} class="check">
              <input type="checkbox" checked={f.allowed_channels.includes(c)}
                onChange={(e) => set('allowed_channels', e.currentTarget.checked ? [...f.allowed_channels, c] : f.allowed_channels.filter((x) => x !== c))} />
              {c}
            </label>
          ))}
          {fe('allowed_channels') && <small class="field-error" role="alert">{fe('allowed_channels')}</small>}
        </fieldset>
      </div>
      {error && !known.some((p) => fe(p)) ? <InlineError error={error} /> : null}
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={busy} aria-busy={busy}>{k ? 'Save changes' : 'Create key'}</button>
        <button type="button" class="btn btn-ghost" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

// A key's allowed MCP tools: names or globs over SERVER__TOOL, typed or picked from the tools the
// gateway's MCP servers offer now.
function ToolsField({ base, value, tools, error, onChange }: {
  base: string; value: string; tools: string[]; error?: string; onChange: (v: string) => void;
}) {
  const id = `${base}-allowed_tools`;
  const chosen = splitList(value);
  const servers = [...new Set(tools.map((t) => t.split('__')[0]))];
  const offers = [...servers.map((s) => `${s}__*`), ...tools].filter((t) => !chosen.includes(t));
  return (
    <div class={`field field-wide${error ? ' field-invalid' : ''}`}>
      <label for={id}>Allowed MCP tools</label>
      <input id={id} name="allowed_tools" value={value} placeholder="github__*, files__read_file"
        onInput={(e) => onChange(e.currentTarget.value)}
        aria-describedby={describedBy(id, 'h', error)} aria-invalid={!!error} />
      <small id={`${id}-hint`} class="hint">Names or globs over SERVER__TOOL, comma separated; blank: every tool</small>
      {offers.length > 0 && (
        <div class="chips-pick" role="group" aria-label="Add a tool">
          {offers.slice(0, 40).map((t) => (
            <button key={t} type="button" class="btn btn-small btn-ghost chip" aria-label={`Allow ${t}`}
              onClick={() => onChange([...chosen, t].join(', '))}>+ {t}</button>
          ))}
        </div>
      )}
      {error && <small id={`${id}-error`} class="field-error" role="alert">{error}</small>}
    </div>
  );
}
