// Roles on the admin API: scoped admin tokens (their secret shown once and stored as a hash),
// the role table called with every role on every endpoint (2xx/4xx within the role, 403 naming
// the role beyond it), and the audit log: every admin write that succeeded leaves exactly one
// append-only row with the right actor, address and before/after, secrets masked or left out.
// Teams: member tokens see and manage their own team's keys and usage only (others' answer as
// missing ones do), teams are made and changed by operators, and hostile team fields are refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startMock, startGateway, gatewayYaml, tempDir, chat, sleep, waitFor, MASTER } from '../lib/harness.mjs';

delete process.env.SLUICE_SECRET_KEY;
const UPSTREAM_SECRET = 'sk-upstream-roles-0123456789abcdef';

let mock, gw, db;
const tokens = {};  // role -> secret

async function call(key, method, path, body) {
  const init = { method, headers: { authorization: `Bearer ${key}` } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`${gw.url}/admin/api${path}`, init);
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* CSV and the like */ }
  return { status: res.status, text, json };
}

async function newToken(name, role, extra = {}) {
  const r = await call(MASTER, 'POST', '/tokens', { name, role, ...extra });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

async function auditRows(query = '') {
  const r = await call(MASTER, 'GET', `/audit?limit=1000${query}`);
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

before(async () => {
  mock = await startMock();
  const dir = tempDir();
  db = `${dir}/sluice.db`;
  const store = `store:\n  url: "sqlite://${db}"\n  secret_key: "roles-test-secret-key-0123456789abcdef"\n  log_bodies: true\n`;
  gw = await startGateway(gatewayYaml({ channels: [{ name: 'file-ch', url: mock.url, models: ['m-*'] }], extra: '' })
    .replace(/^/, store));
  for (const role of ['admin', 'operator', 'viewer']) tokens[role] = (await newToken(`t-${role}`, role)).secret;
  const lone = await call(MASTER, 'POST', '/teams', { name: 'lone' });
  assert.equal(lone.status, 201, lone.text);
  tokens.member = (await newToken('t-member', 'member', { team: 'lone' })).secret;
});
after(async () => {
  await gw?.stop();
  await mock?.stop();
});

test('an admin token is shown once, stored as a hash, and says who it is', async () => {
  const made = await newToken('ci-deploy', 'operator', { expires_in: '90d' });
  assert.match(made.secret, /^sk-sla-[0-9A-Za-z]{40}$/);
  assert.equal(made.token.role, 'operator');
  assert.equal(made.token.status, 'active');
  assert.equal(made.token.created_by, 'master key');
  assert.ok(made.token.expires_at_ms > Date.now() + 89 * 86400e3);
  assert.equal(made.secret.slice(0, made.token.token_prefix.length), made.token.token_prefix);
  const list = await call(MASTER, 'GET', '/tokens');
  assert.ok(!list.text.includes(made.secret), 'the list never shows a secret');
  assert.ok(!/hash/.test(list.text));
  let bytes = readFileSync(db).toString('latin1');
  try { bytes += readFileSync(`${db}-wal`).toString('latin1'); } catch {}
  assert.ok(!bytes.includes(made.secret), 'the database keeps only the hash');

  for (const [role, secret] of Object.entries(tokens)) {
    const me = await call(secret, 'GET', '/me');
    assert.equal(me.status, 200);
    const team = role === 'member' ? { team_id: (await call(MASTER, 'GET', '/teams/lone')).json.id } : {};
    assert.deepEqual(me.json, { actor: `token:t-${role}`, role, kind: 'token', ...team });
  }
  assert.deepEqual((await call(MASTER, 'GET', '/me')).json, { actor: 'master key', role: 'admin', kind: 'master_key' });
});

test('refused: unknown, revoked, expired tokens, virtual keys, and bad token fields', async () => {
  const unknown = await call('sk-sla-' + 'x'.repeat(40), 'GET', '/me');
  assert.equal(unknown.status, 401);
  assert.match(unknown.json.error.message, /unknown admin token/);
  const vk = await call(MASTER, 'POST', '/keys', { name: 'app' });
  assert.equal((await call(vk.json.secret, 'GET', '/keys')).status, 401, 'a virtual key is not an admin credential');
  assert.equal((await call('', 'GET', '/keys')).status, 401);

  const doomed = await newToken('doomed', 'admin');
  assert.equal((await call(doomed.secret, 'GET', '/tokens')).status, 200);
  const revoked = await call(MASTER, 'POST', `/tokens/${doomed.token.id}/revoke`);
  assert.equal(revoked.json.status, 'revoked');
  const after = await call(doomed.secret, 'GET', '/tokens');
  assert.equal(after.status, 401);
  assert.match(after.json.error.message, /"doomed" was revoked/);

  const brief = await newToken('brief', 'viewer', { expires_in: 1 });
  assert.equal((await call(brief.secret, 'GET', '/keys')).status, 200);
  await sleep(1100);
  const expired = await call(brief.secret, 'GET', '/keys');
  assert.equal(expired.status, 401);
  assert.match(expired.json.error.message, /"brief" has expired/);

  for (const [body, param] of [
    [{ role: 'viewer' }, 'name'],
    [{ name: 'x1' }, 'role'],
    [{ name: 'x2', role: 'root' }, 'role'],
    [{ name: 'x3', role: 'member' }, 'team'],
    [{ name: 'x3b', role: 'member', team: 'no-such-team' }, 'team_id'],
    [{ name: 'x3c', role: 'member', team: null }, 'team'],
    [{ name: 'x4', role: 'viewer', team: 3 }, 'team'],
    [{ name: 'x5', role: 'viewer', expires_in: 'soon' }, 'expires_in'],
    [{ name: 'x6', role: 'viewer', expires_in: -5 }, 'expires_in'],
    [{ name: 'x7', role: 'viewer', secret: 'mine' }, 'secret'],
    [{ name: 't-admin', role: 'viewer' }, 'name'],
    [{ name: 'bad\nname', role: 'viewer' }, 'name'],
  ]) {
    const r = await call(MASTER, 'POST', '/tokens', body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.error.param, param, JSON.stringify(body));
  }
  // An operator may not mint tokens (no way up from a lower role).
  const up = await call(tokens.operator, 'POST', '/tokens', { name: 'escalate', role: 'admin' });
  assert.equal(up.status, 403);
  assert.match(up.json.error.message, /needs the admin role; token:t-operator has the operator role/);
});

// The expected role of every endpoint, written here apart from the gateway's table.
const ROLE_TABLE = [
  ['GET', '/me', 'member'], ['GET', '/openapi.json', 'member'],
  ['GET', '/logs', 'viewer'], ['GET', '/logs/{id}', 'viewer'], ['GET', '/usage', 'viewer'], ['GET', '/stats', 'viewer'],
  ['GET', '/keys', 'viewer'], ['GET', '/keys/{id}', 'viewer'],
  ['POST', '/keys', 'operator'], ['PATCH', '/keys/{id}', 'operator'], ['DELETE', '/keys/{id}', 'operator'],
  ['POST', '/keys/{id}/revoke', 'operator'],
  ['GET', '/channels', 'viewer'], ['GET', '/channels/{id}', 'viewer'],
  ['POST', '/channels', 'operator'], ['PATCH', '/channels/{id}', 'operator'], ['DELETE', '/channels/{id}', 'operator'],
  ['GET', '/channels/{id}/keys', 'viewer'], ['GET', '/channels/{id}/keys/{key_id}', 'viewer'],
  ['POST', '/channels/{id}/keys', 'operator'], ['PATCH', '/channels/{id}/keys/{key_id}', 'operator'],
  ['DELETE', '/channels/{id}/keys/{key_id}', 'operator'],
  ['GET', '/mcp-servers', 'viewer'], ['POST', '/mcp-servers', 'operator'], ['GET', '/mcp-servers/{id}', 'viewer'],
  ['PATCH', '/mcp-servers/{id}', 'operator'], ['DELETE', '/mcp-servers/{id}', 'operator'],
  ['GET', '/upstream-keys', 'viewer'], ['POST', '/upstream-keys/{ref}/enable', 'operator'],
  ['POST', '/upstream-keys/{ref}/disable', 'operator'], ['POST', '/upstream-keys/{ref}/probe', 'operator'],
  ['GET', '/config', 'viewer'], ['POST', '/reload', 'operator'], ['GET', '/model-discovery', 'viewer'],
  ['GET', '/pricing', 'viewer'], ['GET', '/settings', 'viewer'], ['PATCH', '/settings', 'operator'],
  ['GET', '/tokens', 'admin'], ['POST', '/tokens', 'admin'], ['GET', '/tokens/{id}', 'admin'],
  ['DELETE', '/tokens/{id}', 'admin'], ['POST', '/tokens/{id}/revoke', 'admin'], ['GET', '/audit', 'admin'],
  ['GET', '/teams', 'viewer'], ['POST', '/teams', 'operator'], ['GET', '/teams/{id}', 'viewer'],
  ['PATCH', '/teams/{id}', 'operator'], ['DELETE', '/teams/{id}', 'operator'],
];
// What a member reaches for their own teams (x-sluice-team-scoped); everything else is a 403.
const TEAM_SCOPED = new Set(['GET /usage', 'GET /keys', 'POST /keys', 'GET /keys/{id}', 'PATCH /keys/{id}',
  'DELETE /keys/{id}', 'POST /keys/{id}/revoke', 'GET /teams', 'GET /teams/{id}']);
const RANK = { member: 0, viewer: 1, operator: 2, admin: 3 };

test('the role table: every endpoint with every role, 403 naming the role beyond it', async () => {
  const doc = (await call(MASTER, 'GET', '/openapi.json')).json;
  const documented = Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.keys(item).filter((m) => m !== 'parameters').map((m) => `${m.toUpperCase()} ${p}`));
  const tabled = new Set(ROLE_TABLE.map(([m, p]) => `${m} ${p}`));
  assert.deepEqual(documented.filter((e) => !tabled.has(e)), [], 'every documented endpoint is in this table');
  for (const [m, p, need] of ROLE_TABLE) {
    assert.equal(doc.paths[p]?.[m.toLowerCase()]?.['x-sluice-role'] ?? need, need, `${m} ${p}: the document says the same role`);
    assert.equal(doc.paths[p]?.[m.toLowerCase()]?.['x-sluice-team-scoped'] ?? false, TEAM_SCOPED.has(`${m} ${p}`),
      `${m} ${p}: the document marks what members reach`);
    // Ids that exist nowhere: a write within the role answers 4xx, never a change (but /reload, /settings).
    const path = p.replace('{id}', '999999').replace('{key_id}', '999999').replace('{ref}', 'no-such-ref');
    const body = m === 'GET' || m === 'DELETE' ? undefined : p === '/settings' ? { cache: { enabled: null } } : {};
    for (const role of ['member', 'viewer', 'operator', 'admin']) {
      const r = await call(tokens[role], m, path, body);
      if (RANK[role] >= RANK[need] || (role === 'member' && TEAM_SCOPED.has(`${m} ${p}`))) {
        assert.ok(r.status !== 403 && r.status !== 401, `${role} ${m} ${path}: ${r.status} ${r.text.slice(0, 200)}`);
      } else {
        assert.equal(r.status, 403, `${role} ${m} ${path} must be refused: ${r.status}`);
        assert.equal(r.json.error.type, 'permission_error');
        assert.match(r.json.error.message, new RegExp(`needs the ${need} role; token:t-${role} has the ${role} role`));
      }
    }
  }
});

// The role table matches whole segments; a path with an empty segment ("/tokens/", "//tokens",
// "/keys//1") matches no entry of it. Such a path must reach no handler either, for any role:
// otherwise a viewer's POST /tokens/ mints an admin token with no role check at all.
test('attack table: an empty path segment walks around no role check', async () => {
  const tokensBefore = (await call(MASTER, 'GET', '/tokens')).json.data.length;
  const escalations = [
    ['viewer', 'POST', '/tokens/', { name: 'evil-1', role: 'admin' }],
    ['viewer', 'POST', '//tokens', { name: 'evil-2', role: 'admin' }],
    ['member', 'POST', '/tokens//', { name: 'evil-3', role: 'admin' }],
    ['operator', 'GET', '/audit/'],
    ['viewer', 'PATCH', '/settings/', { cache: { enabled: null } }],
    ['viewer', 'POST', '/reload/'],
    ['member', 'GET', '//logs'],
  ];
  for (const [role, m, path, body] of escalations) {
    const r = await call(tokens[role], m, path, body);
    assert.equal(r.status, 404, `${role} ${m} ${path}: ${r.status} ${r.text.slice(0, 200)}`);
  }
  // Every endpoint, every role (the master key too), the empty segment in each place.
  for (const [m, p] of ROLE_TABLE) {
    const path = p.replace('{id}', '999999').replace('{key_id}', '999999').replace('{ref}', 'no-such-ref');
    const at = path.indexOf('/', 1);
    const variants = [`${path}/`, `/${path}`, at > 0 ? `${path.slice(0, at)}/${path.slice(at)}` : `${path}//`];
    for (const v of variants) {
      for (const key of [MASTER, ...Object.values(tokens)]) {
        const r = await call(key, m, v, m === 'GET' || m === 'DELETE' ? undefined : {});
        assert.equal(r.status, 404, `${m} ${v}: ${r.status} ${r.text.slice(0, 200)}`);
      }
    }
  }
  assert.equal((await call(MASTER, 'GET', '/tokens')).json.data.length, tokensBefore, 'no token was made');
});

// Whatever the table does not know (a method an endpoint lacks, a path of no endpoint) reaches
// the handlers only for an admin, whose answer is theirs (404, 405); any other role is a 404 at
// the gate, so no spelling of a path that a handler serves but the table misses gets past it.
test('a method or path the role table does not know reaches the handlers only for an admin', async () => {
  const unknown = [['PUT', '/keys'], ['PUT', '/tokens'], ['PATCH', '/audit'], ['POST', '/no-such-endpoint'],
    ['GET', '/Tokens'], ['DELETE', '/settings']];
  for (const [m, p] of unknown) {
    for (const role of ['operator', 'viewer', 'member']) {
      const r = await call(tokens[role], m, p, m === 'GET' || m === 'DELETE' ? undefined : {});
      assert.equal(r.status, 404, `${role} ${m} ${p}: ${r.status} ${r.text.slice(0, 200)}`);
      assert.match(r.json.error.message, /no admin endpoint/);
    }
  }
  const asAdmin = await call(MASTER, 'PUT', '/keys', {});
  assert.equal(asAdmin.status, 405, 'an admin gets the handler\'s own answer');
});

test('viewers read request logs without their bodies; operators see them', async () => {
  const res = await chat(gw, { model: 'm-1', messages: [{ role: 'user', content: 'body-marker-4711' }] });
  assert.equal(res.status, 200);
  await res.text();
  let row;
  for (let i = 0; i < 100 && !row; i++) {
    row = (await call(MASTER, 'GET', '/logs?limit=5')).json.data.find((l) => l.model === 'm-1');
    if (!row) await sleep(50);
  }
  assert.ok(row, 'the request is logged');
  const asViewer = await call(tokens.viewer, 'GET', `/logs/${row.id}`);
  assert.equal(asViewer.status, 200);
  assert.equal(asViewer.json.request_body, null);
  assert.equal(asViewer.json.bodies_hidden, true);
  assert.ok(!asViewer.text.includes('body-marker-4711'));
  const asOperator = await call(tokens.operator, 'GET', `/logs/${row.id}`);
  assert.match(asOperator.json.request_body, /body-marker-4711/);
});

test('every admin write leaves exactly one audit row: who, from where, what, before and after', async () => {
  const ops = (await newToken('auditor-ops', 'operator')).secret;
  const actor = 'token:auditor-ops';
  const writes = [];
  const w = async (method, path, body, expect) => {
    const r = await call(ops, method, path, body);
    assert.equal(r.status, expect, `${method} ${path}: ${r.text}`);
    if (expect < 300) writes.push([method, path]);
    return r;
  };
  const key = (await w('POST', '/keys', { name: 'audited' }, 201)).json;
  await w('PATCH', `/keys/${key.key.id}`, { name: 'audited-2', rpm: 60 }, 200);
  await w('POST', `/keys/${key.key.id}/revoke`, undefined, 200);
  await w('PATCH', `/keys/${key.key.id}`, { rpm: 'fast' }, 400);  // refused: no row
  const ch = (await w('POST', '/channels', { name: 'audit-ch', type: 'openai-compatible', base_url: `${mock.url}/v1`, models: ['a-*'] }, 201)).json;
  await w('POST', `/channels/${ch.id}/keys`, { secret: UPSTREAM_SECRET, label: 'main' }, 201);
  await sleep(1200);  // the router picks the stored channel up
  const health = (await call(ops, 'GET', '/upstream-keys')).json.data.find((h) => h.channel === 'audit-ch');
  assert.ok(health, 'the stored key is live');
  await w('POST', `/upstream-keys/${encodeURIComponent(health.ref)}/disable`, { reason: 'rotating' }, 200);
  await w('PATCH', '/settings', { cache: { enabled: true } }, 200);
  await w('PATCH', '/settings', { cache: { enabled: false } }, 200);
  await w('POST', '/reload', undefined, 200);
  await w('DELETE', `/keys/${key.key.id}`, undefined, 204);

  const rows = (await auditRows(`&actor=${encodeURIComponent(actor)}`)).reverse();
  assert.deepEqual(rows.map((r) => `${r.method} ${r.path}`), writes.map(([m, p]) => `${m} ${p}`),
    'one row per successful write, in order, none for the refused one');
  for (const r of rows) {
    assert.equal(r.actor, actor);
    assert.equal(r.role, 'operator');
    assert.equal(r.address, '127.0.0.1');
    assert.ok(r.status >= 200 && r.status < 300);
  }
  const [create, patch, revoke] = rows;
  assert.equal(create.action, 'create');
  assert.equal(create.target, `/keys/${key.key.id}`);
  assert.equal(create.before, null);
  assert.equal(create.after.key.name, 'audited');
  assert.ok(!JSON.stringify(create).includes(key.secret), 'the new key secret is not in the audit log');
  assert.equal(patch.action, 'update');
  assert.equal(patch.before.name, 'audited');
  assert.equal(patch.after.name, 'audited-2');
  assert.equal(patch.after.rpm, 60);
  assert.equal(revoke.action, 'revoke');
  assert.equal(revoke.target, `/keys/${key.key.id}`);
  assert.equal(revoke.before.status, 'active');
  assert.equal(revoke.after.status, 'revoked');
  const upstream = rows.find((r) => r.path === `/channels/${ch.id}/keys`);
  assert.ok(!JSON.stringify(upstream).includes(UPSTREAM_SECRET), 'the upstream secret is masked in the audit log');
  assert.ok(upstream.after.masked, 'the row shows the key masked');
  const disable = rows.find((r) => r.action === 'disable');
  assert.equal(disable.after.state, 'disabled');
  assert.equal(disable.before?.ref, health.ref, 'an upstream key has no GET of its own: before is its list entry');
  assert.equal(disable.before.state, 'active');
  assert.ok(!JSON.stringify(disable.before).includes(UPSTREAM_SECRET));
  assert.equal(disable.target, `/upstream-keys/${encodeURIComponent(health.ref)}`);
  const settings = rows.filter((r) => r.action === 'settings').at(-1);
  assert.equal(settings.before.cache.enabled, true);
  assert.equal(settings.after.cache.enabled, false);
  assert.ok(rows.find((r) => r.action === 'reload'));
  const del = rows.at(-1);
  assert.equal(del.action, 'delete');
  assert.equal(del.before.name, 'audited-2');
  assert.equal(del.after, null);

  // A token made by the master key: its row has no secret either.
  const made = await newToken('audited-token', 'viewer');
  const tokenRow = (await auditRows('&actor=master%20key&action=create')).find((r) => r.target === `/tokens/${made.token.id}`);
  assert.ok(tokenRow, 'creating a token is audited');
  assert.ok(!JSON.stringify(tokenRow).includes(made.secret));

  // Reads are not audited; the log cannot be changed through the API.
  const count = (await auditRows()).length;
  await call(MASTER, 'GET', '/keys');
  await call(MASTER, 'GET', '/audit');
  assert.equal((await auditRows()).length, count);
  for (const m of ['DELETE', 'PATCH', 'POST']) assert.equal((await call(MASTER, m, '/audit', {})).status, 405);
  // Paging and filters, as the logs.
  const page = await call(MASTER, 'GET', '/audit?limit=2');
  assert.equal(page.json.data.length, 2);
  const next = await call(MASTER, 'GET', `/audit?limit=2&cursor=${page.json.next_cursor}`);
  assert.ok(next.json.data[0].id < page.json.data[1].id);
  assert.equal((await call(MASTER, 'GET', '/audit?cursor=nope')).status, 400);
});

// Every write endpoint of the role table, each made to succeed once on a real object: exactly
// one row each, in order, under the caller; an endpoint left out of this walk fails the test.
test('every write endpoint of the role table leaves exactly one audit row under its caller', async () => {
  const made = await newToken('audit-walker', 'admin');
  const key = made.secret;
  const done = [];  // [method, template, concrete path]
  const w = async (method, template, params, body) => {
    let path = template;
    for (const [k, v] of Object.entries(params ?? {})) path = path.replace(`{${k}}`, encodeURIComponent(String(v)));
    const r = await call(key, method, path, body);
    assert.ok(r.status >= 200 && r.status < 300, `${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
    done.push([method, template, path]);
    return r.json;
  };
  await w('POST', '/teams', {}, { name: 'walk-team' });
  await w('PATCH', '/teams/{id}', { id: 'walk-team' }, { rpm: 5 });
  const vk = (await w('POST', '/keys', {}, { name: 'walk-key', team_id: 'walk-team' })).key;
  await w('PATCH', '/keys/{id}', { id: vk.id }, { rpm: 7 });
  await w('POST', '/keys/{id}/revoke', { id: vk.id });
  await w('DELETE', '/keys/{id}', { id: vk.id });
  const ch = await w('POST', '/channels', {}, { name: 'walk-ch', type: 'openai-compatible', base_url: `${mock.url}/v1`, models: ['w-*'] });
  await w('PATCH', '/channels/{id}', { id: ch.id }, { priority: 3 });
  const uk = await w('POST', '/channels/{id}/keys', { id: ch.id }, { secret: 'sk-walk-secret-0123456789', label: 'a' });
  await w('PATCH', '/channels/{id}/keys/{key_id}', { id: ch.id, key_id: uk.id }, { label: 'b' });
  const live = await waitFor(async () =>
    (await call(key, 'GET', '/upstream-keys')).json.data.find((h) => h.channel === 'walk-ch'));
  assert.ok(live, 'the stored key is live');
  await w('POST', '/upstream-keys/{ref}/disable', { ref: live.ref }, { reason: 'walk' });
  await w('POST', '/upstream-keys/{ref}/enable', { ref: live.ref });
  await w('POST', '/upstream-keys/{ref}/probe', { ref: live.ref });
  await w('DELETE', '/channels/{id}/keys/{key_id}', { id: ch.id, key_id: uk.id });
  await w('DELETE', '/channels/{id}', { id: ch.id });
  const mcp = await w('POST', '/mcp-servers', {}, { name: 'walk-mcp', url: `${mock.url}/mcp` });
  await w('PATCH', '/mcp-servers/{id}', { id: mcp.id }, { timeout_ms: 15000 });
  await w('DELETE', '/mcp-servers/{id}', { id: mcp.id });
  await w('PATCH', '/settings', {}, { cache: { enabled: null } });
  await w('POST', '/reload');
  const tok = (await w('POST', '/tokens', {}, { name: 'walk-token', role: 'viewer' })).token;
  await w('POST', '/tokens/{id}/revoke', { id: tok.id });
  await w('DELETE', '/tokens/{id}', { id: tok.id });
  await w('DELETE', '/teams/{id}', { id: 'walk-team' });

  const writes = ROLE_TABLE.filter(([m]) => m !== 'GET').map(([m, p]) => `${m} ${p}`).sort();
  assert.deepEqual([...new Set(done.map(([m, t]) => `${m} ${t}`))].sort(), writes, 'the walk makes every write of the table');
  const rows = (await auditRows(`&actor=${encodeURIComponent('token:audit-walker')}`)).reverse();
  assert.deepEqual(rows.map((r) => `${r.method} ${r.path}`), done.map(([m, , p]) => `${m} ${p}`), 'one row per write, in order');
  for (const r of rows) {
    assert.equal(r.role, 'admin');
    assert.equal(r.address, '127.0.0.1');
  }
  assert.ok(!JSON.stringify(rows).includes('sk-walk-secret-0123456789'), 'the upstream secret is masked');
});

// ---- teams ----

async function makeTeam(body) {
  const r = await call(MASTER, 'POST', '/teams', body);
  assert.equal(r.status, 201, r.text);
  return r.json;
}
async function makeKey(body) {
  const r = await call(MASTER, 'POST', '/keys', body);
  assert.equal(r.status, 201, r.text);
  return r.json;
}

test('teams: operators make and change them, with members and limits; keys join by id or name', async () => {
  const ops = tokens.operator;
  const made = await call(ops, 'POST', '/teams', {
    name: 'search', rpm: 120, budget_monthly_usd: 50,
    members: [{ email: 'Ada@Example.com' }, { subject: 'auth0|42' }, { email: 'ada@example.com' }],
  });
  assert.equal(made.status, 201, made.text);
  const t = made.json;
  assert.deepEqual({ ...t, id: 0, created_at_ms: 0, updated_at_ms: 0 }, {
    id: 0, name: 'search', rpm: 120, tpm: null, budget_daily_usd: null, budget_monthly_usd: 50, budget_total_usd: null,
    members: [{ email: 'ada@example.com' }, { subject: 'auth0|42' }], keys: 0,
    spend: { day_usd: 0, month_usd: 0, total_usd: 0 }, created_at_ms: 0, updated_at_ms: 0,
  });
  assert.equal((await call(ops, 'POST', '/teams', { name: 'search' })).status, 400, 'names are unique');
  const patched = await call(ops, 'PATCH', `/teams/search`, {
    add_members: [{ email: 'bob@example.com' }], remove_members: [{ subject: 'auth0|42' }], rpm: null, tpm: 9000,
  });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(patched.json.members, [{ email: 'ada@example.com' }, { email: 'bob@example.com' }]);
  assert.equal(patched.json.rpm, null);
  assert.equal(patched.json.tpm, 9000);
  // A key joins by team id or name, shows it, and leaves with null.
  const k = await call(ops, 'POST', '/keys', { name: 'search-app', team_id: 'search' });
  assert.equal(k.status, 201, k.text);
  assert.equal(k.json.key.team_id, t.id);
  assert.equal((await call(ops, 'GET', `/keys?team_id=search`)).json.data.map((x) => x.id).join(), `${k.json.key.id}`);
  assert.equal((await call(ops, 'GET', '/teams/search')).json.keys, 1);
  assert.equal((await call(ops, 'PATCH', `/keys/${k.json.key.id}`, { team_id: 999999 })).json.error.param, 'team_id');
  assert.equal((await call(ops, 'PATCH', `/keys/${k.json.key.id}`, { team_id: null })).json.team_id, null);
  assert.equal((await call(ops, 'PATCH', `/keys/${k.json.key.id}`, { team_id: t.id })).json.team_id, t.id);
  // Viewers read teams, never change them; every team write is audited.
  assert.equal((await call(tokens.viewer, 'GET', '/teams/search')).status, 200);
  const refused = await call(tokens.viewer, 'PATCH', '/teams/search', { rpm: 1 });
  assert.equal(refused.status, 403);
  assert.match(refused.json.error.message, /PATCH \/admin\/api\/teams\/search needs the operator role/);
  const rows = await auditRows('&actor=token%3At-operator');
  const create = rows.find((r) => r.method === 'POST' && r.path === '/teams' && r.after?.name === 'search');
  assert.ok(create, 'creating a team is audited');
  assert.equal(create.target, `/teams/${t.id}`);
  const update = rows.find((r) => r.method === 'PATCH' && r.path === '/teams/search');
  assert.equal(update.before.rpm, 120);
  assert.equal(update.after.rpm, null);
  // Deleting a team leaves its keys, without a team.
  const gone = await makeTeam({ name: 'short-lived' });
  const orphan = await makeKey({ name: 'orphan', team_id: gone.id });
  assert.equal((await call(ops, 'DELETE', '/teams/short-lived')).status, 204);
  assert.equal((await call(ops, 'GET', '/teams/short-lived')).status, 404);
  assert.equal((await call(ops, 'GET', `/keys/${orphan.key.id}`)).json.team_id, null);
  const del = (await auditRows('&action=delete')).find((r) => r.target === '/teams/short-lived');
  assert.equal(del?.before?.name, 'short-lived');
});

test('a member token sees and manages only its own team\'s keys and usage; others answer as missing ones do', async () => {
  const alpha = await makeTeam({ name: 'alpha' });
  const beta = await makeTeam({ name: 'beta' });
  const ka = await makeKey({ name: 'alpha-app', team_id: alpha.id });
  const kb = await makeKey({ name: 'beta-app', team_id: 'beta' });
  const kn = await makeKey({ name: 'no-team-app' });
  for (const k of [ka, kb, kb, kn]) {
    const r = await chat(gw, { model: 'm-1', messages: [{ role: 'user', content: 'hi' }] }, { key: k.secret });
    assert.equal(r.status, 200, await r.clone().text());
    await r.text();
  }
  const member = (await newToken('alpha-member', 'member', { team: 'alpha' }));
  assert.equal(member.token.team_id, alpha.id);
  const m = member.secret;

  const list = await call(m, 'GET', '/keys');
  assert.equal(list.status, 200);
  assert.deepEqual(list.json.data.map((k) => k.name), ['alpha-app']);
  assert.equal((await call(m, 'GET', `/keys/${ka.key.id}`)).status, 200);
  // Another team's key, a key without a team and a key that does not exist: the same 404.
  const missing = await call(m, 'GET', '/keys/999999');
  assert.equal(missing.status, 404);
  for (const id of [kb.key.id, kn.key.id]) {
    for (const [method, path, body] of [['GET', `/keys/${id}`], ['PATCH', `/keys/${id}`, { rpm: 1 }],
      ['DELETE', `/keys/${id}`], ['POST', `/keys/${id}/revoke`]]) {
      const r = await call(m, method, path, body);
      assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
      assert.equal(r.text, missing.text.replace('999999', String(id)), 'no difference from a missing key');
    }
  }
  assert.equal((await call(MASTER, 'GET', `/keys/${kb.key.id}`)).json.rpm, null, 'nothing changed');
  assert.equal((await call(MASTER, 'GET', `/keys/${kb.key.id}`)).json.status, 'active');

  // Creating: in their team by default; another team, a missing one, or none, the same 403.
  const mine = await call(m, 'POST', '/keys', { name: 'alpha-new', rpm: 30 });
  assert.equal(mine.status, 201, mine.text);
  assert.equal(mine.json.key.team_id, alpha.id);
  const denied = [];
  for (const team_id of [beta.id, 'beta', 999999, 'no-such-team']) {
    const r = await call(m, 'POST', '/keys', { name: 'elsewhere', team_id });
    assert.equal(r.status, 403, `${team_id}: ${r.text}`);
    denied.push(r.text);
  }
  assert.equal(new Set(denied).size, 1, 'the refusal says nothing of whether the team exists');
  assert.equal((await call(m, 'PATCH', `/keys/${ka.key.id}`, { team_id: beta.id })).status, 403);
  assert.equal((await call(m, 'PATCH', `/keys/${ka.key.id}`, { team_id: null })).status, 403);
  assert.equal((await call(m, 'PATCH', `/keys/${ka.key.id}`, { rpm: 5 })).json.rpm, 5);
  assert.equal((await call(m, 'POST', `/keys/${mine.json.key.id}/revoke`)).json.status, 'revoked');
  assert.equal((await call(m, 'DELETE', `/keys/${mine.json.key.id}`)).status, 204);
  const audited = await auditRows('&actor=token%3Aalpha-member');
  assert.deepEqual(audited.map((r) => `${r.method} ${r.path}`).reverse(),
    ['POST /keys', `PATCH /keys/${ka.key.id}`, `POST /keys/${mine.json.key.id}/revoke`, `DELETE /keys/${mine.json.key.id}`]);
  assert.ok(audited.every((r) => r.role === 'member'));

  // Usage: only their team's keys, however it is asked for.
  const usage = await waitFor(async () => {
    const u = await call(m, 'GET', '/usage?by=key');
    return u.json.data.length ? u : null;
  });
  assert.ok(usage, 'the member sees their usage');
  assert.deepEqual(usage.json.data.map((r) => r.virtual_key_name), ['alpha-app']);
  assert.deepEqual((await call(m, 'GET', `/usage?virtual_key_id=${kb.key.id}`)).json.data.map((r) => r.requests), [0]);
  const byTeam = await call(m, 'GET', '/usage?group_by=team');
  assert.deepEqual(byTeam.json.data.map((r) => [r.team_id, r.team_name, r.requests]), [[alpha.id, 'alpha', 1]]);
  assert.equal((await call(m, 'GET', '/usage?team_id=beta')).status, 404);
  const csv = await call(m, 'GET', '/usage?group_by=team&format=csv');
  assert.match(csv.text, /^team_id,team_name,requests,/);
  assert.ok(!csv.text.includes('beta'));
  // The operator's view groups every team; keys without a team count under none.
  let req = {};
  await waitFor(async () => {
    const all = (await call(tokens.operator, 'GET', '/usage?group_by=team')).json.data;
    req = Object.fromEntries(all.map((r) => [r.team_name ?? 'none', r.requests]));
    return req.beta === 2 && req.none >= 1;
  });
  assert.equal(req.alpha, 1);
  assert.equal(req.beta, 2);
  assert.ok(req.none >= 1);

  // Teams: their own, read-only.
  assert.deepEqual((await call(m, 'GET', '/teams')).json.data.map((t) => t.name), ['alpha']);
  const noTeam = await call(m, 'GET', '/teams/999999');
  for (const ref of [beta.id, 'beta']) {
    const r = await call(m, 'GET', `/teams/${ref}`);
    assert.equal(r.status, 404);
    assert.equal(r.json.error.message, noTeam.json.error.message.replace('999999', String(ref)));
  }
  for (const [method, path] of [['POST', '/teams'], ['PATCH', '/teams/alpha'], ['DELETE', '/teams/alpha'],
    ['GET', '/logs'], ['GET', '/stats'], ['GET', '/channels'], ['GET', '/tokens'], ['GET', '/audit']]) {
    const r = await call(m, method, path, method === 'GET' || method === 'DELETE' ? undefined : { name: 'x' });
    assert.equal(r.status, 403, `${method} ${path}`);
    assert.match(r.json.error.message, /token:alpha-member has the member role/);
  }
  // Its team deleted, a member token stops working.
  assert.equal((await call(MASTER, 'DELETE', '/teams/alpha')).status, 204);
  const orphaned = await call(m, 'GET', '/keys');
  assert.equal(orphaned.status, 401);
  assert.match(orphaned.json.error.message, /"alpha-member" has no team any more/);
});

// Hostile team fields: each refused with a 400 naming the field, nothing stored, and the
// gateway keeps serving.
test('attack table: team names, members and limits', async () => {
  const before = (await call(MASTER, 'GET', '/teams')).json.data.length;
  const long = 'a'.repeat(65);
  const table = [
    [{ name: '' }, 'name'], [{ name: long }, 'name'], [{ name: '12345' }, 'name'], [{ name: '../etc' }, 'name'],
    [{ name: 'a b' }, 'name'], [{ name: 'a\nb' }, 'name'], [{ name: 'a\r\nX-Injected: 1' }, 'name'],
    [{ name: 'x\' OR \'1\'=\'1' }, 'name'], [{ name: 'a/b' }, 'name'], [{ name: '%2e%2e' }, 'name'],
    [{ name: 'caf\u00e9' }, 'name'], [{ name: '<script>' }, 'name'], [{ name: '-lead' }, 'name'],
    [{ name: null }, 'name'], [{ name: 5 }, 'name'], [{ name: ['a'] }, 'name'], [{}, 'name'],
    [{ name: 'ok', id: 3 }, 'id'], [{ name: 'ok', spend: {} }, 'spend'], [{ name: 'ok', owner: 'me' }, 'owner'],
    [{ name: 'ok', rpm: 0 }, 'rpm'], [{ name: 'ok', rpm: -1 }, 'rpm'], [{ name: 'ok', rpm: 1.5 }, 'rpm'],
    [{ name: 'ok', rpm: '10' }, 'rpm'], [{ name: 'ok', tpm: 1e300 }, 'tpm'],
    [{ name: 'ok', budget_total_usd: -1 }, 'budget_total_usd'], [{ name: 'ok', budget_daily_usd: 'NaN' }, 'budget_daily_usd'],
    [{ name: 'ok', members: 'ada@example.com' }, 'members'], [{ name: 'ok', members: ['ada@example.com'] }, 'members[0]'],
    [{ name: 'ok', members: [{ email: 'no-at' }] }, 'members[0].email'],
    [{ name: 'ok', members: [{ email: 'a@b@c' }] }, 'members[0].email'],
    [{ name: 'ok', members: [{ email: 'a b@c' }] }, 'members[0].email'],
    [{ name: 'ok', members: [{ email: 'a@b\r\nBcc: x@y' }] }, 'members[0].email'],
    [{ name: 'ok', members: [{ email: '@b' }] }, 'members[0].email'],
    [{ name: 'ok', members: [{ email: 'x'.repeat(250) + '@b.cd' }] }, 'members[0].email'],
    [{ name: 'ok', members: [{ subject: '' }] }, 'members[0].subject'],
    [{ name: 'ok', members: [{ subject: 's'.repeat(256) }] }, 'members[0].subject'],
    [{ name: 'ok', members: [{ subject: 'a\u0000b' }] }, 'members[0].subject'],
    [{ name: 'ok', members: [{ subject: '\u00fcber' }] }, 'members[0].subject'],
    [{ name: 'ok', members: [{ subject: 7 }] }, 'members[0].subject'],
    [{ name: 'ok', members: [{ role: 'admin' }] }, 'members[0]'],
    [{ name: 'ok', members: [{ email: 'a@b', subject: 's' }] }, 'members[0]'],
    [{ name: 'ok', members: [{ email: 'a@b' }], add_members: [] }, 'add_members'],
    [{ name: 'ok', members: Array.from({ length: 1001 }, (_, i) => ({ email: `u${i}@x.io` })) }, 'members'],
  ];
  for (const [body, param] of table) {
    const r = await call(MASTER, 'POST', '/teams', body);
    assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 120)}: ${r.status} ${r.text.slice(0, 200)}`);
    assert.equal(r.json.error.param, param, JSON.stringify(body).slice(0, 120));
    assert.ok(!/[\r\n]/.test(r.json.error.message.replace(/\\[rn]/g, '')), 'no raw line break reaches the message');
  }
  for (const body of ['not json', '[1]', '"x"', '{"name":"a","name":"b"}x']) {
    const r = await fetch(`${gw.url}/admin/api/teams`, { method: 'POST', body,
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' } });
    assert.equal(r.status, 400, body);
    assert.equal((await r.json()).error.param, null);
  }
  // Hostile references in paths and queries find nothing.
  for (const ref of ["x'%20OR%20'1'%3D'1", '..%2F..%2Fetc', '%00', '0', '-1', '1e3', 'a'.repeat(300)]) {
    assert.equal((await call(MASTER, 'GET', `/teams/${ref}`)).status, 404, ref);
    assert.equal((await call(MASTER, 'GET', `/keys?team_id=${ref}`)).status, 404, ref);
  }
  assert.equal((await call(MASTER, 'GET', '/usage?group_by=team,evil')).json.error.param, 'group_by');
  assert.equal((await call(MASTER, 'GET', '/teams')).json.data.length, before, 'nothing was stored');
  const ok = await chat(gw, { model: 'm-1', messages: [{ role: 'user', content: 'still serving' }] });
  assert.equal(ok.status, 200);
  await ok.text();
});
