// Subscription accounts: channel keys that are the OAuth credentials Claude Code and Codex sign in
// with, against `sluice mock`, whose token endpoints rotate the pair and refuse a refresh token
// used twice, and whose subscription endpoints insist on what the CLIs send (a bearer token with
// Anthropic's oauth beta flag; a bearer token with chatgpt-account-id) and report usage windows.
// The official @anthropic-ai/sdk and openai SDKs (tests/e2e's packages) are the clients.
// The last test runs two instances on one PostgreSQL (tests/scripts/with-postgres.sh) and a
// redis-server started here, hammering one account across several expiries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import {
  startMock, startGateway, gatewayYaml, tempDir, admin, sleep, waitFor, MASTER, BIN,
} from '../lib/harness.mjs';
import { startRedis } from '../lib/services.mjs';

const sdk = (p) => fileURLToPath(new URL(`../e2e/node_modules/${p}`, import.meta.url));
const { default: OpenAI } = await import(sdk('openai/index.mjs'));
const { default: Anthropic } = await import(sdk('@anthropic-ai/sdk/index.mjs'));

const PG = process.env.SLUICE_TEST_POSTGRES_URL;
const SECRET_KEY = 'test-secret-key-for-sealing-0123456789';
const RUN = Date.now().toString(36);
const b64url = (s) => Buffer.from(s).toString('base64url');
const jwt = (expS) => `${b64url('{"alg":"RS256","typ":"JWT"}')}.${b64url(JSON.stringify({ exp: expS }))}.c2lnbmF0dXJl`;

// Every token a test hands out: none may show up in an admin answer or a log line.
const SECRETS = [];
function claudeFile({ access, refresh, expiresInS }) {
  SECRETS.push(access, refresh);
  return JSON.stringify({
    claudeAiOauth: {
      accessToken: access, refreshToken: refresh, expiresAt: Date.now() + expiresInS * 1000,
      scopes: ['user:inference', 'user:profile'], subscriptionType: 'max',
    },
  }, null, 2);
}
function codexFile({ access, refresh, account }) {
  SECRETS.push(access, refresh);
  return JSON.stringify({
    OPENAI_API_KEY: null,
    tokens: { id_token: 'eyJ.id.token', access_token: access, refresh_token: refresh, account_id: account },
    last_refresh: new Date().toISOString(),
  }, null, 2);
}

let mock, gw, dir;
const subStats = async () => (await fetch(`${mock.url}/mock/subscription/stats`)).json();
const control = (what, body) => fetch(`${mock.url}/mock/subscription/${what}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});
const keyHealth = async (g, channel) =>
  (await (await admin(g, '/upstream-keys')).json()).data.filter((k) => k.channel === channel);

const A_FAR = `sk-ant-oat01-pool-a-${RUN}`;
const B_FAR = `sk-ant-oat01-pool-b-${RUN}`;
const REVOKED_RT = `sk-ant-ort01-revoked-${RUN}`;
const CODEX_ACCESS = jwt(Math.floor(Date.now() / 1000) + 86400);

function subscriptionChannel({ name, kind, keys, models, extraKeys = '' }) {
  const type = kind === 'claude' ? 'anthropic' : 'openai';
  const base = kind === 'claude' ? mock.url : `${mock.url}/backend-api/codex`;
  const token = kind === 'claude' ? `${mock.url}/v1/oauth/token` : `${mock.url}/oauth/token`;
  return `  - name: ${name}\n    type: ${type}\n    subscription: ${kind}\n    base_url: "${base}"\n` +
    `    token_url: "${token}"\n    keys: ${JSON.stringify(keys)}\n    models: ${JSON.stringify(models)}\n${extraKeys}`;
}

before(async () => {
  mock = await startMock(['--chunks', '3']);
  dir = tempDir();
  // A credential file by path (as Claude Code writes it), near expiry: refreshed before first use.
  const nearFile = join(dir, 'claude-near.json');
  writeFileSync(nearFile, claudeFile({ access: `sk-ant-oat01-near-${RUN}`, refresh: `sk-ant-ort01-near-${RUN}`, expiresInS: 60 }));
  // A pool of two accounts far from expiry, for the usage-window cool-down.
  const poolA = claudeFile({ access: A_FAR, refresh: `sk-ant-ort01-pool-a-${RUN}`, expiresInS: 86400 });
  const poolB = claudeFile({ access: B_FAR, refresh: `sk-ant-ort01-pool-b-${RUN}`, expiresInS: 86400 });
  // One account whose refresh token gets revoked, one that works.
  const revoked = claudeFile({ access: `sk-ant-oat01-revoked-${RUN}`, refresh: REVOKED_RT, expiresInS: 30 });
  const good = claudeFile({ access: `sk-ant-oat01-good-${RUN}`, refresh: `sk-ant-ort01-good-${RUN}`, expiresInS: 86400 });
  const codexPath = join(dir, 'auth.json');
  writeFileSync(codexPath, codexFile({ access: CODEX_ACCESS, refresh: `rt-codex-${RUN}`, account: `acct-${RUN}` }));
  const oneLine = (s) => JSON.stringify(JSON.parse(s));
  const yaml = `store:\n  url: "sqlite://${join(dir, 'sluice.db')}"\n  secret_key: "${SECRET_KEY}"\n` +
    gatewayYaml({ channels: [], routing: { max_retries: 3 } }).replace(/channels:\n$/, 'channels:\n') +
    subscriptionChannel({ name: 'claude', kind: 'claude', keys: [nearFile], models: ['claude-*'] }) +
    subscriptionChannel({ name: 'pool', kind: 'claude', keys: [oneLine(poolA), oneLine(poolB)], models: ['pool-*'] }) +
    subscriptionChannel({ name: 'revoking', kind: 'claude', keys: [oneLine(revoked), oneLine(good)], models: ['rev-*'] }) +
    subscriptionChannel({ name: 'codex', kind: 'chatgpt', keys: [codexPath], models: ['gpt-5*'] });
  await control('revoke', { refresh_token: REVOKED_RT });
  gw = await startGateway(yaml);
});
after(async () => {
  await gw?.stop();
  await mock?.stop();
});

test('the Anthropic SDK through a Claude subscription: the near-expiry token is refreshed first, then sent with the oauth beta flag', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  const before = await subStats();
  const msg = await client.messages.create({
    model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }],
  });
  assert.equal(msg.type, 'message');
  assert.ok(msg.content[0].text.length > 0);
  const after1 = await subStats();
  assert.equal(after1.refreshes - before.refreshes, 1, 'one refresh before the first request');
  assert.match(after1.last_bearer, /^sk-ant-oat01-mock-/, 'the request carried the refreshed token, not the old one');
  // Streaming, with a beta flag of the client's own: merged with the oauth flag, no new refresh.
  const stream = client.messages.stream({
    model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Stream please' }],
  }, { headers: { 'anthropic-beta': 'prompt-caching-2024-07-31' } });
  const final = await stream.finalMessage();
  assert.ok(final.content[0].text.length > 0);
  const after2 = await subStats();
  assert.equal(after2.refreshes, after1.refreshes, 'a fresh token is not refreshed again');
  assert.equal(after2.refused, 0);
  const rows = (await (await fetch(`${mock.url}/mock/stats`)).json());
  assert.ok(rows, 'mock stats readable');
});

test('an access token revoked before its expiry: refreshed once and the request resent; the SDK never sees the 401', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  const ask = () => client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
  await ask();
  const before = await subStats();
  assert.match(before.last_bearer, /^sk-ant-oat01-/);
  await control('revoke', { access_token: before.last_bearer });
  const msg = await ask();
  assert.equal(msg.type, 'message');
  const after1 = await subStats();
  assert.equal(after1.revoked_refusals - before.revoked_refusals, 1, 'one 401, to the revoked token');
  assert.equal(after1.refreshes - before.refreshes, 1, 'exactly one refresh');
  assert.notEqual(after1.last_bearer, before.last_bearer);
  await ask();
  const after2 = await subStats();
  assert.equal(after2.refreshes, after1.refreshes, 'the new token is kept');
  assert.equal(after2.revoked_refusals, after1.revoked_refusals);
  const keys = await keyHealth(gw, 'claude');
  assert.deepEqual(keys.map((k) => k.state), ['active'], JSON.stringify(keys));
});

test('the openai SDK through a ChatGPT subscription: Responses to the Codex endpoint with the bearer token and account id', async () => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
  const stream = await client.responses.create({ model: 'gpt-5-codex', input: 'Say hi', stream: true });
  let text = '';
  let completed = false;
  for await (const ev of stream) {
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed') completed = true;
  }
  assert.ok(completed && text.length > 0);
  const s = await subStats();
  assert.equal(s.last_bearer, CODEX_ACCESS);
  assert.equal(s.last_account, `acct-${RUN}`);
  const plain = await client.responses.create({ model: 'gpt-5-codex', input: 'Again' });
  assert.ok(plain.output_text.length > 0);
  // The usage window the Codex endpoint reported is on the key's health.
  const [k] = await keyHealth(gw, 'codex');
  assert.equal(k.subscription, 'chatgpt');
  assert.equal(k.usage, 0.12);
  assert.equal(k.masked, '{credential}#0');
});

test('an account whose usage window is used up is cooled down until its reset; the pool serves from the other', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  await control('exhaust', { token: A_FAR, reset_after_s: 900 });
  const before = await subStats();
  for (let i = 0; i < 6; i++) {
    const msg = await client.messages.create({ model: 'pool-1', max_tokens: 16, messages: [{ role: 'user', content: `n${i}` }] });
    assert.equal(msg.type, 'message');
  }
  const after = await subStats();
  // The used-up account answered 429 once; after that it rests and is not asked again.
  assert.equal(after.limited - before.limited, 1, JSON.stringify(after));
  const [a, b] = await keyHealth(gw, 'pool');
  const cooled = [a, b].find((k) => k.state === 'cooling');
  assert.ok(cooled, JSON.stringify([a, b]));
  const resetIn = cooled.cooldown_until_ms - Date.now();
  assert.ok(resetIn > 800_000 && resetIn <= 900_000, `cooled until the window's reset, ${resetIn} ms away`);
  assert.equal([a, b].filter((k) => k.state === 'active').length, 1);
});

test('a revoked refresh token disables its key with a reason to sign in again; requests fail over to the other account', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  for (let i = 0; i < 4; i++) {
    const msg = await client.messages.create({ model: 'rev-1', max_tokens: 16, messages: [{ role: 'user', content: `r${i}` }] });
    assert.equal(msg.type, 'message');
  }
  const keys = await keyHealth(gw, 'revoking');
  const off = keys.find((k) => k.state === 'disabled');
  assert.ok(off, JSON.stringify(keys));
  assert.match(off.reason, /sign in again/);
  assert.match(off.reason, /claude \/login/);
  const s = await subStats();
  assert.ok(s.refused >= 1);
  assert.equal(s.reused, 0, 'no refresh token was ever presented twice');
});

test('secrets never appear in admin answers or logs', async () => {
  const s = await subStats();
  const seen = [...SECRETS, s.last_bearer].filter(Boolean);
  const answers = [];
  for (const path of ['/channels', '/upstream-keys', '/config', '/logs?limit=100']) {
    const r = await admin(gw, path);
    answers.push(`${path}: ${await r.text()}`);
  }
  const everything = answers.join('\n') + '\n' + gw.proc.output;
  for (const secret of seen) assert.ok(!everything.includes(secret), `a token leaked: ${secret.slice(0, 16)}...`);
  assert.ok(!/sk-ant-o[ar]t01-mock-/.test(everything), 'a refreshed token leaked');
});

test('pasted credentials through the admin API: sealed, masked, checked (attack table), and served', async () => {
  const created = await admin(gw, '/channels', {
    method: 'POST',
    body: {
      name: 'pasted', type: 'anthropic', base_url: mock.url, models: ['pasted-*'],
      subscription: 'claude', token_url: `${mock.url}/v1/oauth/token`,
    },
  });
  assert.equal(created.status, 201, await created.clone().text());
  const ch = await created.json();
  assert.equal(ch.subscription, 'claude');
  const SEC = `SECRET-${RUN}`;
  const bad = [
    ['not JSON', `{"claudeAiOauth": ${SEC}`, /JSON object/],
    ['an array', [SEC], /credential file's JSON/],
    ['a number', 42, /credential file's JSON/],
    ['another CLI', { tokens: { access_token: SEC, refresh_token: 'r', account_id: 'a' } }, /Claude Code/],
    ['CRLF in the access token', { claudeAiOauth: { accessToken: `${SEC}\r\nX-Injected: 1`, refreshToken: 'r' } }, /header cannot carry/],
    ['a space in the token', { claudeAiOauth: { accessToken: `${SEC} x`, refreshToken: 'r' } }, /header cannot carry/],
    ['NUL in the refresh token', { claudeAiOauth: { accessToken: 'a', refreshToken: `${SEC}\u0000` } }, /refresh token/],
    ['non-ASCII refresh token', { claudeAiOauth: { accessToken: 'a', refreshToken: `${SEC}\u00e9` } }, /refresh token/],
    ['no refresh token, no expiry', { claudeAiOauth: { accessToken: SEC } }, /cannot be kept signed in/],
    ['tokens of the wrong type', { claudeAiOauth: { accessToken: 7, refreshToken: { x: SEC } } }, /Claude Code/],
    ['nested too deep', '['.repeat(5000), /JSON object/],
    ['huge', { claudeAiOauth: { accessToken: 'a'.repeat(40000), refreshToken: 'r' } }, /longer than|header cannot carry|too long/],
  ];
  for (const [what, secret, says] of bad) {
    const r = await admin(gw, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret } });
    const text = await r.text();
    assert.equal(r.status, 400, `${what}: ${text}`);
    assert.match(JSON.parse(text).error.message, says, what);
    assert.ok(!text.includes(SEC), `${what}: the answer quotes the secret`);
  }
  assert.equal((await (await admin(gw, `/channels/${ch.id}/keys`)).json()).data.length, 0, 'nothing was stored');
  const access = `sk-ant-oat01-pasted-${RUN}`;
  const good = JSON.parse(claudeFile({ access, refresh: `sk-ant-ort01-pasted-${RUN}`, expiresInS: 86400 }));
  const added = await admin(gw, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret: good } });
  assert.equal(added.status, 201, await added.clone().text());
  const key = await added.json();
  assert.equal(key.masked, '{credential}');
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  await waitFor(async () => {
    try {
      await client.messages.create({ model: 'pasted-1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
      return true;
    } catch { return false; }
  }, 5000, 100);
  assert.equal((await subStats()).last_bearer, access, 'the pasted access token is what went upstream');
  const listed = await (await admin(gw, `/channels/${ch.id}/keys`)).text();
  assert.ok(!listed.includes(access) && !listed.includes(`sk-ant-ort01-pasted-${RUN}`));
  // The audit row of the write holds no secret either.
  const audit = await (await admin(gw, '/audit?limit=50')).text();
  assert.ok(!audit.includes(access) && !audit.includes(SEC));
  // The gateway still serves after all that.
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
});

test('a config whose subscription key is not a credential is refused, naming the key by position only', async () => {
  const d = tempDir();
  const file = join(d, 'bad.yaml');
  const SEC = `SECRET-${RUN}`;
  writeFileSync(file, `store:\n  url: "sqlite://${join(d, 'x.db')}"\n  secret_key: "${SECRET_KEY}"\n` +
    `channels:\n  - name: c\n    type: anthropic\n    subscription: claude\n    keys: ['{"claudeAiOauth":{"accessToken":"${SEC} x","refreshToken":"r"}}']\n    models: ["a"]\n`);
  const r = spawnSync(BIN, ['check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr + r.stdout, /keys\[0\]: not a claude credential/);
  assert.ok(!(r.stderr + r.stdout).includes(SEC));
  writeFileSync(file, `channels:\n  - name: c\n    type: openai\n    subscription: claude\n    keys: ["${join(d, 'missing.json')}"]\n    models: ["a"]\n`);
  const r2 = spawnSync(BIN, ['check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r2.status, 0);
  assert.match(r2.stderr + r2.stdout, /a claude subscription is a channel of type anthropic/);
});

test('the detector works: two instances that do not share a store spend the same refresh token twice, and the mock says so', async () => {
  // Each instance with its own SQLite file: no shared credential row, no shared lease.
  const shared = claudeFile({ access: `sk-ant-oat01-split-${RUN}`, refresh: `sk-ant-ort01-split-${RUN}`, expiresInS: 1 });
  const yaml = (n) => `store:\n  url: "sqlite://${join(dir, `split-${n}.db`)}"\n  secret_key: "${SECRET_KEY}"\n` +
    gatewayYaml({ channels: [] }) +
    subscriptionChannel({ name: 'split', kind: 'claude', keys: [JSON.stringify(JSON.parse(shared))], models: ['split-*'] });
  const g1 = await startGateway(yaml(1));
  const g2 = await startGateway(yaml(2));
  try {
    const before = await subStats();
    await Promise.all([g1, g2].map(async (g) => {
      const client = new Anthropic({ baseURL: `${g.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
      try {
        await client.messages.create({ model: 'split-1', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] });
      } catch { /* the loser's key is disabled: no other key to fail over to */ }
    }));
    const after = await subStats();
    assert.equal(after.reused - before.reused, 1, 'the second instance presented the spent refresh token');
    const states = (await Promise.all([g1, g2].map((g) => keyHealth(g, 'split')))).flat().map((k) => k.state).sort();
    assert.deepEqual(states, ['active', 'disabled']);
  } finally {
    await g1.stop();
    await g2.stop();
  }
});

test('two instances sharing one PostgreSQL and one account, hammered across expiries, never spend a refresh token twice', async () => {
  assert.ok(PG, 'SLUICE_TEST_POSTGRES_URL is not set: run this suite through tests/scripts/with-postgres.sh (tests/run.sh does)');
  const redis = await startRedis();
  // Issued access tokens live 4 s: refreshed 2 s before expiry, many times during the run.
  await control('config', { ttl_s: 4 });
  const shared = claudeFile({ access: `sk-ant-oat01-shared-${RUN}`, refresh: `sk-ant-ort01-shared-${RUN}`, expiresInS: 1 });
  const yaml = `store:\n  url: "${PG}"\n  secret_key: "${SECRET_KEY}"\nredis:\n  url: "${redis.url}"\n` +
    gatewayYaml({ channels: [] }) +
    subscriptionChannel({ name: 'shared', kind: 'claude', keys: [JSON.stringify(JSON.parse(shared))], models: ['shared-*'] });
  const g1 = await startGateway(yaml);
  const g2 = await startGateway(yaml);
  try {
    const before = await subStats();
    const statuses = [];
    const until = Date.now() + 9000;
    const worker = async (g, i) => {
      const client = new Anthropic({ baseURL: `${g.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
      let n = 0;
      while (Date.now() < until) {
        try {
          await client.messages.create({ model: 'shared-1', max_tokens: 8, messages: [{ role: 'user', content: `w${i}-${n++}` }] });
          statuses.push(200);
        } catch (e) {
          statuses.push(e.status ?? String(e));
        }
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map((i) => worker(i % 2 ? g2 : g1, i)));
    const after = await subStats();
    const failed = statuses.filter((s) => s !== 200);
    assert.deepEqual(failed, [], `every request served (${statuses.length} in all)`);
    assert.equal(after.reused - before.reused, 0, 'no refresh token was presented twice');
    assert.equal(after.refused - before.refused, 0);
    assert.equal(after.expired - before.expired, 0, 'no request went out with an expired token');
    assert.ok(after.refreshes - before.refreshes >= 3, `refreshed across several expiries (${after.refreshes - before.refreshes})`);
    for (const g of [g1, g2]) {
      const [k] = await keyHealth(g, 'shared');
      assert.equal(k.state, 'active', JSON.stringify(k));
    }
    for (const g of [g1, g2]) assert.ok(!/sk-ant-o[ar]t01-(mock|shared)-/.test(g.proc.output), 'a token in the log');
  } finally {
    await control('config', { ttl_s: 3600 });
    await g1.stop();
    await g2.stop();
    await redis.proc.kill('SIGTERM');
  }
});
