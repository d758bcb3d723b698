// Azure OpenAI with Entra ID through the admin API: tenant_id, client_id, client_secret and
// token_url on a store channel, checked field by field (attack table), the secret sealed with
// store.secret_key as upstream keys are and masked in every answer and in the audit log, kept
// across a restart, and used: `sluice mock` issues client-credentials tokens and takes only those.
// Also: a cached access token the provider revokes early is dropped and fetched again, once,
// without the client seeing the 401 (Entra here; Vertex in tests/e2e/vertex-sdk, subscriptions
// in tests/integration/subscription).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMock, startGateway, gatewayYaml, tempDir, chat, admin, waitFor, MASTER } from '../lib/harness.mjs';

delete process.env.SLUICE_SECRET_KEY;
const SECRET_KEY = 'entra-test-store-key-0123456789abcdef';
const CLIENT_SECRET = 'right-secret-0123456789';
const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';

let mock, gw, dir, yaml;
const started = [];
const user = [{ role: 'user', content: 'Say hi' }];

function dbBytes(db) {
  let all = readFileSync(db).toString('latin1');
  try { all += readFileSync(`${db}-wal`).toString('latin1'); } catch {}
  return all;
}
async function call(g, method, path, body) {
  const res = await admin(g, path, { method, body });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : null };
}
// A request to `model` once the gateway has picked up the store's channels (within a second).
async function served(g, model) {
  let res;
  await waitFor(async () => {
    res = await chat(g, { model, messages: user });
    if (res.status === 200) return true;
    await res.text();
    return false;
  }, 5000, 50);
  return res;
}

before(async () => {
  mock = await startMock(['--entra-client', `app-1:${CLIENT_SECRET}`]);
  started.push(mock);
  dir = tempDir();
  yaml = `store:\n  url: "sqlite://${join(dir, 'sluice.db')}"\n  secret_key: "${SECRET_KEY}"\n` +
    gatewayYaml({ channels: [{ name: 'yaml-a', url: mock.url, keys: ['sk-yaml-a-0123456789'], models: ['gpt-4o-mini'] }] });
  gw = await startGateway(yaml);
  started.push(gw);
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

const entraChannel = (over = {}) => ({
  name: 'az-entra', type: 'azure', base_url: mock.url, models: ['gpt-4o-entra'],
  tenant_id: TENANT, client_id: 'app-1', client_secret: CLIENT_SECRET,
  token_url: `${mock.url}/${TENANT}/oauth2/v2.0/token`, ...over,
});

test('an Entra channel through the admin API: sealed, masked, audited without the secret, served, kept across a restart', async () => {
  const r = await call(gw, 'POST', '/channels', entraChannel());
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.tenant_id, TENANT);
  assert.equal(r.json.client_id, 'app-1');
  assert.equal(r.json.client_secret, 'rig…89');
  assert.equal(r.json.token_url, `${mock.url}/${TENANT}/oauth2/v2.0/token`);
  assert.ok(!r.text.includes(CLIENT_SECRET));
  const id = r.json.id;

  await mock.reset();
  const res = await served(gw, 'gpt-4o-entra');
  assert.equal(res.headers.get('x-sluice-channel'), 'az-entra');
  assert.ok((await res.json()).choices[0].message.content.length > 0);
  const st = await mock.stats();
  assert.equal(st.token_requests, 1);
  assert.equal(st.token_refusals, 0);
  assert.equal(st.last_request.path, '/openai/deployments/gpt-4o-entra/chat/completions');
  assert.match(st.last_request.headers.authorization, /^Bearer eyJ0\.mock-entra-/);

  // Sealed at rest: the database holds no byte of the secret.
  assert.match(dbBytes(join(dir, 'sluice.db')), /"client_secret":"v1:[A-Za-z0-9+/=]+"/, 'sealed as the upstream keys are');
  assert.ok(!dbBytes(join(dir, 'sluice.db')).includes(CLIENT_SECRET), 'the database holds the secret in clear');

  // A PATCH that sends back the masked value keeps the secret; a rename is audited.
  let p = await call(gw, 'PATCH', `/channels/${id}`, { client_secret: 'rig…89', priority: 2 });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.json.client_secret, 'rig…89');
  const audit = await (await admin(gw, '/audit?limit=50')).text();
  assert.ok(audit.includes('"target":"/channels/'), 'the writes are audited');
  assert.ok(audit.includes('rig…89'), 'the audit row shows the mask');
  assert.ok(!audit.includes(CLIENT_SECRET), 'the audit log holds the secret');
  const shown = (await (await admin(gw, '/channels')).text()) + (await (await admin(gw, `/channels/${id}`)).text()) +
    (await (await admin(gw, '/config')).text());
  assert.ok(!shown.includes(CLIENT_SECRET));
  assert.ok(!gw.proc.output.includes(CLIENT_SECRET), 'logged');

  // A restart reads it back from the store and serves with it.
  await gw.stop();
  gw = await startGateway(yaml);
  started.push(gw);
  const again = await call(gw, 'GET', `/channels/${id}`);
  assert.equal(again.status, 200);
  assert.equal(again.json.tenant_id, TENANT);
  assert.equal(again.json.client_id, 'app-1');
  assert.equal(again.json.client_secret, 'rig…89');
  assert.equal(again.json.priority, 2);
  const res2 = await served(gw, 'gpt-4o-entra');
  assert.equal(res2.headers.get('x-sluice-channel'), 'az-entra');
  await res2.text();
});

test('a token revoked before its expiry: dropped, one new token fetched, the attempt resent; the client never sees the 401', async () => {
  let res = await served(gw, 'gpt-4o-entra');
  await res.text();
  await mock.reset();
  const revoked = await (await fetch(`${mock.url}/mock/oauth/revoke`, { method: 'POST' })).json();
  assert.ok(revoked.revoked >= 1, JSON.stringify(revoked));
  res = await chat(gw, { model: 'gpt-4o-entra', messages: user });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  assert.ok(JSON.parse(body).choices[0].message.content.length > 0);
  assert.equal(res.headers.get('x-sluice-attempts'), '1', 'the resend is the same attempt');
  assert.equal(res.headers.get('x-sluice-channel'), 'az-entra');
  const st = await mock.stats();
  assert.equal(st.token_requests, 1, 'exactly one new token');
  assert.equal(st.bearer_refusals, 1, 'one 401, to the revoked token only');
  // A second request and a stream use the new token: no more exchanges, no 401.
  res = await chat(gw, { model: 'gpt-4o-entra', messages: user, stream: true });
  assert.equal(res.status, 200);
  await res.text();
  const st2 = await mock.stats();
  assert.equal(st2.token_requests, 1);
  assert.equal(st2.bearer_refusals, 1);
  const keys = (await (await admin(gw, '/upstream-keys')).json()).data.filter((k) => k.channel === 'az-entra');
  assert.equal(keys.length, 1);
  assert.equal(keys[0].state, 'active', JSON.stringify(keys));
});

test('a 401 to a fresh token is the key\'s: no loop, one resend, then it fails over as before', async () => {
  const r = await call(gw, 'POST', '/channels', entraChannel({ name: 'az-nope', models: ['gpt-4o-nope'], priority: 1 }));
  assert.equal(r.status, 201, r.text);
  const b = await call(gw, 'POST', '/channels', { name: 'nope-backup', type: 'openai', base_url: `${mock.url}/v1`,
    models: ['gpt-4o-nope'], priority: 5 });
  assert.equal(b.status, 201, b.text);
  const k = await call(gw, 'POST', `/channels/${b.json.id}/keys`, { secret: 'sk-backup-0123456789' });
  assert.equal(k.status, 201, k.text);
  await (await served(gw, 'az-nope/gpt-4o-nope')).text();
  await (await served(gw, 'nope-backup/gpt-4o-nope')).text();
  // From now on the mock refuses every bearer, the ones it issues next included.
  await mock.reset();
  await fetch(`${mock.url}/mock/oauth/revoke?refuse_new=1`, { method: 'POST' });
  try {
    const res = await chat(gw, { model: 'gpt-4o-nope', messages: user });
    const body = await res.text();
    assert.equal(res.status, 200, body);
    assert.equal(res.headers.get('x-sluice-channel'), 'nope-backup');
    assert.equal(res.headers.get('x-sluice-attempts'), '2', 'the Entra attempt (sent twice), then the backup');
    const st = await mock.stats();
    assert.equal(st.token_requests, 1, 'one new token, no loop');
    assert.equal(st.bearer_refusals, 2, 'the cached token and the fresh one');
    const keys = (await (await admin(gw, '/upstream-keys')).json()).data.filter((x) => x.channel === 'az-nope');
    assert.equal(keys[0].state, 'disabled', JSON.stringify(keys));
  } finally {
    await fetch(`${mock.url}/mock/oauth/revoke?refuse_new=0`, { method: 'POST' });
  }
});

test('Entra fields: every refused value is a 400 naming the field, nothing is stored, the gateway keeps serving', async () => {
  const SEC = 'S3CRET-do-not-echo-0123';
  const bad = [
    ['tenant_id', { tenant_id: `${TENANT}\r\nX-Injected: 1` }, /Entra tenant/],
    ['tenant_id', { tenant_id: 'contoso/../../x' }, /Entra tenant/],
    ['tenant_id', { tenant_id: '.contoso.com' }, /Entra tenant/],
    ['tenant_id', { tenant_id: 'a'.repeat(300) }, /Entra tenant/],
    ['tenant_id', { tenant_id: 42 }, /Entra tenant/],
    ['tenant_id', { tenant_id: ['x'] }, /Entra tenant/],
    ['client_id', { client_id: '' }, /application \(client\) id/],
    ['client_id', { client_id: 'app\r\n1' }, /application \(client\) id/],
    ['client_id', { client_id: 'a'.repeat(100000) }, /application \(client\) id/],
    ['client_id', { client_id: { id: 1 } }, /application \(client\) id/],
    ['client_secret', { client_secret: `${SEC}\r\nX-Injected: 1` }, /control character/],
    ['client_secret', { client_secret: '' }, /empty/],
    ['client_secret', { client_secret: SEC.repeat(1000) }, /longer than 8192/],
    ['client_secret', { client_secret: 12345 }, /got a number|got 12345/],
    ['client_secret', { client_secret: true }, /got true/],
    ['token_url', { token_url: `https://user:${SEC}@login.example.com/t/oauth2/v2.0/token` }, /credentials in the URL/],
    ['token_url', { token_url: 'http://login.example.com/t/oauth2/v2.0/token' }, /https \(http only for a loopback host\)/],
    ['token_url', { token_url: 'ftp://login.example.com/token' }, /must be https/],
    ['token_url', { token_url: 'https://login.example.com/t\r\nX: 1' }, /control character/],
    ['token_url', { token_url: `https://login.example.com/${'a'.repeat(5000)}` }, /longer than 2048/],
    ['token_url', { token_url: 'https://login.example.com/token#frag' }, /fragment/],
    ['token_url', { token_url: 'not a url' }, /not a valid URL/],
    ['token_url', { token_url: 7 }, /https:\/\/ URL string/],
    // The combinations, as the YAML loader refuses them.
    ['client_secret', { client_secret: undefined }, /client_secret is missing/],
    ['client_id', { client_id: undefined }, /client_id is missing/],
    ['tenant_id', { tenant_id: undefined, token_url: undefined }, /tenant_id is missing/],
    ['tenant_id', { type: 'openai' }, /only an azure channel takes tenant_id/],
  ];
  for (const [field, over, says] of bad) {
    const body = entraChannel({ name: 'az-bad', ...over });
    for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
    const r = await call(gw, 'POST', '/channels', body);
    assert.equal(r.status, 400, `${field} ${JSON.stringify(over).slice(0, 80)}: ${r.text}`);
    assert.equal(r.json.error.param, field, r.text);
    assert.match(r.json.error.message, says, r.text);
    assert.ok(!r.text.includes(SEC), `${field}: the answer quotes the secret`);
  }
  // The same checks on a PATCH of a stored channel.
  const id = (await call(gw, 'GET', '/channels')).json.data.find((c) => c.name === 'az-entra').id;
  for (const [field, over] of [['tenant_id', { tenant_id: 'a b' }], ['token_url', { token_url: 'http://10.0.0.1/token' }],
    ['client_secret', { client_secret: null }]]) {
    const r = await call(gw, 'PATCH', `/channels/${id}`, over);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, field, r.text);
  }
  assert.ok(!(await call(gw, 'GET', '/channels')).json.data.some((c) => c.name === 'az-bad'), 'nothing was stored');
  const res = await chat(gw, { model: 'gpt-4o-entra', messages: user });
  assert.equal(res.status, 200);
  await res.text();
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
});

test('Entra on a store channel: null clears it all; without store.secret_key a client secret is refused (503)', async () => {
  const id = (await call(gw, 'GET', '/channels')).json.data.find((c) => c.name === 'az-nope').id;
  const r = await call(gw, 'PATCH', `/channels/${id}`, { tenant_id: null, client_id: null, client_secret: null, token_url: null });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.client_id, '');
  assert.equal(r.json.client_secret, '');
  assert.equal(r.json.token_url, null);

  const plain = await startGateway(`store:\n  url: "sqlite://${join(tempDir(), 'sluice.db')}"\n` +
    gatewayYaml({ channels: [{ name: 'y', url: mock.url, models: ['x'] }] }));
  started.push(plain);
  const n = await call(plain, 'POST', '/channels', entraChannel());
  assert.equal(n.status, 503, n.text);
  assert.match(n.json.error.message, /SLUICE_SECRET_KEY/);
  assert.ok(!n.text.includes(CLIENT_SECRET));
});
