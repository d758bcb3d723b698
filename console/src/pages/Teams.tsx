// Teams: limits and budgets over the sum of their keys, and the people (by OIDC subject or
// e-mail) who manage those keys. Operators and admins create, edit and delete; a member sees
// their own teams, read-only.
import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { fmtInt, fmtUsd } from '../format';
import { atLeast, useMe } from '../role';
import type { Team, TeamMember } from '../types';
import {
  ActionButton, describedBy, Empty, ErrorBox, Field, fieldError, InlineError, Loading, PageHeader, TableWrap, useAsync,
} from '../ui';

const LIMITS = [['rpm', 'Requests per minute'], ['tpm', 'Tokens per minute']] as const;
const BUDGETS = [
  ['budget_daily_usd', 'Daily budget (USD)'],
  ['budget_monthly_usd', 'Monthly budget (USD)'],
  ['budget_total_usd', 'Total budget (USD)'],
] as const;
type NumParam = (typeof LIMITS)[number][0] | (typeof BUDGETS)[number][0];

const memberText = (m: TeamMember) => ('email' in m ? m.email : m.subject);

export function Teams() {
  const canEdit = atLeast(useMe(), 'operator');
  const state = useAsync(async (signal) => (await api<{ data: Team[] }>('/teams', { signal })).data, []);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<number | null>(null);
  const teams = state.data;
  return (
    <>
      <PageHeader title="Teams">
        {canEdit && (
          <button type="button" class="btn btn-primary" onClick={() => setCreating(!creating)}
            aria-expanded={creating} aria-controls="new-team">
            {creating ? 'Close form' : 'New team'}
          </button>
        )}
      </PageHeader>
      <p class="lead">
        A team's limits and budgets bound the sum of its keys: once they are reached, every key of the team gets a 429
        naming the team. Its members (by e-mail or OIDC subject) manage the team's keys and see its usage.
      </p>
      {creating && (
        <div id="new-team">
          <TeamForm onCancel={() => setCreating(false)} onSaved={async () => { setCreating(false); await state.reload(); }} />
        </div>
      )}
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load the teams" />
      {!teams && state.loading && <Loading label="Loading teams…" />}
      {teams && teams.length === 0 && <Empty>{canEdit ? 'No teams yet.' : 'You are not a member of any team.'}</Empty>}
      {teams && teams.length > 0 && (
        <TableWrap label="Teams">
          <table class="table stack-sm" aria-label="Teams" data-testid="teams-table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Limits</th>
                <th scope="col">Budgets</th>
                <th scope="col">Spend</th>
                <th scope="col">Members</th>
                <th scope="col">Keys</th>
                {canEdit && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {teams.map((t) => (
                editing === t.id ? (
                  <tr key={t.id} data-testid={`team-${t.name}`}>
                    <td colSpan={canEdit ? 7 : 6}>
                      <TeamForm t={t} onCancel={() => setEditing(null)}
                        onSaved={async () => { setEditing(null); await state.reload(); }} />
                    </td>
                  </tr>
                ) : (
                  <tr key={t.id} data-testid={`team-${t.name}`}>
                    <th scope="row">{t.name}</th>
                    <td data-label="Limits" data-testid="team-limits">
                      {LIMITS.filter(([p]) => t[p] !== null).map(([p, label]) => <span key={p} class="chip">{label}: {fmtInt(t[p])}</span>)}
                      {LIMITS.every(([p]) => t[p] === null) && 'none'}
                    </td>
                    <td data-label="Budgets" data-testid="team-budgets">
                      {t.budget_daily_usd !== null && <span class="chip">day {fmtUsd(t.budget_daily_usd)}</span>}
                      {t.budget_monthly_usd !== null && <span class="chip">month {fmtUsd(t.budget_monthly_usd)}</span>}
                      {t.budget_total_usd !== null && <span class="chip">total {fmtUsd(t.budget_total_usd)}</span>}
                      {BUDGETS.every(([p]) => t[p] === null) && 'none'}
                    </td>
                    <td data-label="Spend">{fmtUsd(t.spend.day_usd)} today · {fmtUsd(t.spend.month_usd)} this month</td>
                    <td data-label="Members" data-testid="team-members">
                      {t.members.length ? t.members.map((m) => <code key={memberText(m)} class="chip">{memberText(m)}</code>) : 'none'}
                    </td>
                    <td data-label="Keys"><a href="#/keys">{fmtInt(t.keys)}</a></td>
                    {canEdit && (
                      <td data-label="Actions">
                        <div class="row-actions">
                          <button type="button" class="btn btn-small" onClick={() => setEditing(t.id)}>Edit</button>
                          <ActionButton kind="btn-danger" label={`Delete team ${t.name}`}
                            confirm={`Delete "${t.name}"? Its keys stay, without a team; its member tokens stop working.`}
                            onClick={async () => { await api(`/teams/${t.id}`, { method: 'DELETE' }); await state.reload(); }}>
                            Delete
                          </ActionButton>
                        </div>
                      </td>
                    )}
                  </tr>
                )
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </>
  );
}

interface FormState {
  name: string;
  emails: string;    // one per line
  subjects: string;  // one per line
  nums: Record<NumParam, string>;
}

function toForm(t?: Team): FormState {
  const s = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  return {
    name: t?.name ?? '',
    emails: (t?.members ?? []).flatMap((m) => ('email' in m ? [m.email] : [])).join('\n'),
    subjects: (t?.members ?? []).flatMap((m) => ('subject' in m ? [m.subject] : [])).join('\n'),
    nums: {
      rpm: s(t?.rpm), tpm: s(t?.tpm), budget_daily_usd: s(t?.budget_daily_usd),
      budget_monthly_usd: s(t?.budget_monthly_usd), budget_total_usd: s(t?.budget_total_usd),
    },
  };
}

const lines = (s: string) => s.split('\n').map((x) => x.trim()).filter(Boolean);

function TeamForm({ t, onSaved, onCancel }: { t?: Team; onSaved: () => Promise<void>; onCancel: () => void }) {
  const [f, setF] = useState<FormState>(() => toForm(t));
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const base = t ? `edit-team-${t.id}` : 'new-team';

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: Record<string, unknown> = {
        name: f.name.trim(),
        members: [...lines(f.emails).map((email) => ({ email })), ...lines(f.subjects).map((subject) => ({ subject }))],
      };
      for (const [p] of [...LIMITS, ...BUDGETS]) {
        const v = f.nums[p].trim();
        const n = v ? Number(v) : null;
        if (n !== null && !Number.isFinite(n)) throw new ApiError(0, `${p} must be a number`, p);
        if (t || n !== null) body[p] = n;
      }
      if (t && body.name === t.name) delete body.name;
      await api(t ? `/teams/${t.id}` : '/teams', { method: t ? 'PATCH' : 'POST', body });
      await onSaved();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const fe = (p: string) => fieldError(error, p);
  const membersError = fe('members');
  const known = ['name', ...LIMITS.map(([p]) => p), ...BUDGETS.map(([p]) => p)];
  return (
    <form class="form card" onSubmit={submit} aria-label={t ? `Edit team ${t.name}` : 'New team'} data-testid="team-form">
      {!t && <h2>New team</h2>}
      <div class="form-grid">
        <Field id={`${base}-name`} label="Name" error={fe('name')} hint="Letters, digits, . _ -: search-team">
          <input id={`${base}-name`} name="name" value={f.name} required maxLength={64}
            onInput={(e) => setF({ ...f, name: e.currentTarget.value })}
            aria-describedby={describedBy(`${base}-name`, 'h', fe('name'))} aria-invalid={!!fe('name')} />
        </Field>
        {[...LIMITS, ...BUDGETS].map(([p, label]) => {
          const integer = p === 'rpm' || p === 'tpm';
          const hint = integer ? 'Blank: no limit' : 'Blank: no budget';
          return (
            <Field key={p} id={`${base}-${p}`} label={label} hint={hint} error={fe(p)}>
              <input id={`${base}-${p}`} name={p} type="number" min={integer ? 1 : 0} step={integer ? 1 : 'any'}
                value={f.nums[p]} onInput={(e) => setF({ ...f, nums: { ...f.nums, [p]: e.currentTarget.value } })}
                aria-describedby={describedBy(`${base}-${p}`, hint, fe(p))} aria-invalid={!!fe(p)} />
            </Field>
          );
        })}
        <Field id={`${base}-emails`} label="Members by e-mail" hint="One per line" wide error={membersError}>
          <textarea id={`${base}-emails`} name="emails" rows={3} value={f.emails}
            onInput={(e) => setF({ ...f, emails: e.currentTarget.value })}
            aria-describedby={describedBy(`${base}-emails`, 'h', membersError)} />
        </Field>
        <Field id={`${base}-subjects`} label="Members by OIDC subject" hint="One per line: the sign-in's sub claim" wide>
          <textarea id={`${base}-subjects`} name="subjects" rows={2} value={f.subjects}
            onInput={(e) => setF({ ...f, subjects: e.currentTarget.value })}
            aria-describedby={describedBy(`${base}-subjects`, 'h')} />
        </Field>
      </div>
      {error && !known.some((p) => fe(p)) && !membersError ? <InlineError error={error} /> : null}
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={busy} aria-busy={busy}>{t ? 'Save changes' : 'Create team'}</button>
        <button type="button" class="btn btn-ghost" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}
