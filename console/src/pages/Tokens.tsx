// Admin tokens: credentials for automation (CI, scripts, other tools) that reach the admin API
// within one role. The secret is shown once; the gateway keeps only its hash.
import { useState } from 'preact/hooks';
import { api } from '../api';
import { fmtRelative, fmtTime } from '../format';
import type { AdminToken, Role, Team } from '../types';
import {
  ActionButton, Badge, CopyButton, describedBy, Empty, ErrorBox, Field, fieldError, InlineError, Loading, PageHeader,
  TableWrap, useAsync,
} from '../ui';

const ROLES: Array<[Role, string]> = [
  ['member', "member: one team's keys and usage"],
  ['viewer', 'viewer: dashboards, usage, logs without bodies'],
  ['operator', 'operator: channels, keys, MCP servers, settings, reload'],
  ['admin', 'admin: everything, tokens and the audit log included'],
];
const EXPIRY = [['', 'never'], ['30d', 'in 30 days'], ['90d', 'in 90 days'], ['365d', 'in a year']] as const;

export function Tokens() {
  const state = useAsync(async (signal) => (await api<{ data: AdminToken[] }>('/tokens', { signal })).data, []);
  const teams = useAsync(async (signal) => (await api<{ data: Team[] }>('/teams', { signal }).catch(() => ({ data: [] as Team[] }))).data, []);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  const tokens = state.data;
  return (
    <>
      <PageHeader title="Admin tokens">
        <button type="button" class="btn btn-primary" onClick={() => { setCreating(!creating); setSecret(null); }}
          aria-expanded={creating} aria-controls="new-token">
          {creating ? 'Close form' : 'New token'}
        </button>
      </PageHeader>
      <p class="lead">
        A token reaches the admin API (and this console) within its role, for scripts and CI that should not hold the
        master key. Every change made with it is in the audit log under its name.
      </p>
      {secret && (
        <section class="card secret" role="region" aria-labelledby="token-secret-title" data-testid="token-reveal">
          <h2 id="token-secret-title">Token “{secret.name}” created</h2>
          <p>Copy the secret now: it is not stored and will not be shown again.</p>
          <div class="secret-row">
            <code class="secret-value break" data-testid="new-token-secret" data-copy-source>{secret.secret}</code>
            <CopyButton text={secret.secret} label="Copy secret" />
          </div>
          <button type="button" class="btn btn-small btn-ghost" onClick={() => setSecret(null)}>I have stored it</button>
        </section>
      )}
      {creating && (
        <div id="new-token">
          <TokenForm teams={teams.data ?? []} onCancel={() => setCreating(false)}
            onCreated={async (r) => { setCreating(false); setSecret(r); await state.reload(); }} />
        </div>
      )}
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load the tokens" />
      {!tokens && state.loading && <Loading label="Loading tokens…" />}
      {tokens && tokens.length === 0 && <Empty>No admin tokens yet.</Empty>}
      {tokens && tokens.length > 0 && (
        <TableWrap label="Admin tokens">
          <table class="table stack-sm" aria-label="Admin tokens" data-testid="tokens-table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Expires</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {tokens.map((t) => (
                <tr key={t.id} data-testid={`token-${t.name}`} data-status={t.status}>
                  <th scope="row">{t.name} <code class="muted">{t.token_prefix}…</code></th>
                  <td data-label="Role">
                    <Badge kind="neutral">{t.role}</Badge>
                    {t.role === 'member' && <span class="muted"> {teams.data?.find((x) => x.id === t.team_id)?.name ?? (t.team_id ? `team ${t.team_id}` : 'no team')}</span>}
                  </td>
                  <td data-label="Status">
                    <Badge kind={t.status === 'active' ? 'ok' : t.status === 'revoked' ? 'bad' : 'warn'}>{t.status}</Badge>
                  </td>
                  <td data-label="Expires">{t.expires_at_ms ? <span title={fmtTime(t.expires_at_ms)}>{fmtRelative(t.expires_at_ms)}</span> : 'never'}</td>
                  <td data-label="Created">{fmtTime(t.created_at_ms)} <span class="muted">by {t.created_by}</span></td>
                  <td data-label="Actions">
                    <div class="row-actions">
                      {t.status === 'active' && (
                        <ActionButton kind="btn-danger" label={`Revoke token ${t.name}`}
                          confirm={`Revoke "${t.name}"? Whatever uses it gets 401 at once.`}
                          onClick={async () => { await api(`/tokens/${t.id}/revoke`, { method: 'POST' }); await state.reload(); }}>
                          Revoke
                        </ActionButton>
                      )}
                      <ActionButton kind="btn-ghost" label={`Delete token ${t.name}`} confirm={`Delete "${t.name}"?`}
                        onClick={async () => { await api(`/tokens/${t.id}`, { method: 'DELETE' }); await state.reload(); }}>
                        Delete
                      </ActionButton>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </>
  );
}

function TokenForm({ teams, onCreated, onCancel }: {
  teams: Team[]; onCreated: (r: { name: string; secret: string }) => Promise<void>; onCancel: () => void;
}) {
  const [team, setTeam] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const [expires, setExpires] = useState('90d');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: Record<string, unknown> = { name: name.trim(), role };
      if (expires) body.expires_in = expires;
      if (role === 'member') body.team = team ? Number(team) : (teams[0]?.id ?? null);
      const r = await api<{ token: AdminToken; secret: string }>('/tokens', { method: 'POST', body });
      await onCreated({ name: r.token.name, secret: r.secret });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const fe = (p: string) => fieldError(error, p);
  return (
    <form class="form card" onSubmit={submit} aria-label="New admin token" data-testid="token-form">
      <h2>New admin token</h2>
      <div class="form-grid">
        <Field id="token-name" label="Name" error={fe('name')} hint="What uses it: ci-deploy, grafana">
          <input id="token-name" value={name} required maxLength={128} onInput={(e) => setName(e.currentTarget.value)}
            aria-describedby={describedBy('token-name', 'h', fe('name'))} aria-invalid={!!fe('name')} />
        </Field>
        <Field id="token-role" label="Role" error={fe('role')}>
          <select id="token-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            {ROLES.map(([r, label]) => <option key={r} value={r}>{label}</option>)}
          </select>
        </Field>
        {role === 'member' && (
          <Field id="token-team" label="Team" error={fe('team') ?? fe('team_id')} hint="The team whose keys and usage it reaches">
            <select id="token-team" value={team || String(teams[0]?.id ?? '')} onChange={(e) => setTeam(e.currentTarget.value)}
              aria-describedby={describedBy('token-team', 'h', fe('team') ?? fe('team_id'))}>
              {teams.length === 0 && <option value="">no teams yet: create one on the Teams page</option>}
              {teams.map((t) => <option key={t.id} value={String(t.id)}>{t.name}</option>)}
            </select>
          </Field>
        )}
        <Field id="token-expires" label="Expires" error={fe('expires_in')}>
          <select id="token-expires" value={expires} onChange={(e) => setExpires(e.currentTarget.value)}>
            {EXPIRY.map(([v, label]) => <option key={v} value={v}>{label}</option>)}
          </select>
        </Field>
      </div>
      {error && !fe('name') && !fe('role') && !fe('expires_in') && !fe('team') && !fe('team_id') ? <InlineError error={error} /> : null}
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={busy} aria-busy={busy}>Create token</button>
        <button type="button" class="btn btn-ghost" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}
