// Roles on the admin API: scoped admin tokens (their secret shown once and stored as a hash),
// the role table called with every role on every endpoint (2xx/4xx within the role, 403 naming
// the role beyond it), and the audit log: every admin write that succeeded leaves exactly one
// append-only row with the right actor, address and before/after, secrets masked or left out.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startMock, startGateway, gatewayYaml, tempDir, chat, sleep, MASTER } from '../lib/harness.mjs';

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
    assert.deepEqual(me.json, { actor: `token:t-${role}`, role, kind: 'token' });
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
    [{ name: 'x3', role: 'member' }, 'role'],
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
];
const RANK = { member: 0, viewer: 1, operator: 2, admin: 3 };

test('the role table: every endpoint with every role, 403 naming the role beyond it', async () => {
  const doc = (await call(MASTER, 'GET', '/openapi.json')).json;
  const documented = Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.keys(item).filter((m) => m !== 'parameters').map((m) => `${m.toUpperCase()} ${p}`));
  const tabled = new Set(ROLE_TABLE.map(([m, p]) => `${m} ${p}`));
  assert.deepEqual(documented.filter((e) => !tabled.has(e)), [], 'every documented endpoint is in this table');
  for (const [m, p, need] of ROLE_TABLE) {
    assert.equal(doc.paths[p]?.[m.toLowerCase()]?.['x-sluice-role'] ?? need, need, `${m} ${p}: the document says the same role`);
    // Ids that exist nowhere: a write within the role answers 4xx, never a change (but /reload, /settings).
    const path = p.replace('{id}', '999999').replace('{key_id}', '999999').replace('{ref}', 'no-such-ref');
    const body = m === 'GET' || m === 'DELETE' ? undefined : p === '/settings' ? { cache: { enabled: null } } : {};
    for (const role of ['viewer', 'operator', 'admin']) {
      const r = await call(tokens[role], m, path, body);
      if (RANK[role] >= RANK[need]) {
        assert.ok(r.status !== 403 && r.status !== 401, `${role} ${m} ${path}: ${r.status} ${r.text.slice(0, 200)}`);
      } else {
        assert.equal(r.status, 403, `${role} ${m} ${path} must be refused: ${r.status}`);
        assert.equal(r.json.error.type, 'permission_error');
        assert.match(r.json.error.message, new RegExp(`needs the ${need} role; token:t-${role} has the ${role} role`));
      }
    }
  }
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
