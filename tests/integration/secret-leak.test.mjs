// Upstream keys never leave the gateway, even when a provider quotes the key it was given in its
// error ("Incorrect API key provided: sk-..."): the mock does so with x-mock-echo-key. Channels
// of every type (and one added through the admin API) fail with 400 (relayed to the client), 500
// (retried, then exhausted) and 401 (the key is disabled); the secret must appear in no answer
// body or header, request-log row, admin response, log line or metric, and the masked form
// (as the admin API shows keys: sk-…yz) stands where the message is shown.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startMock, startGateway, gatewayYaml, tempDir, admin, logOf, metrics, sendChat, sleep } from '../lib/harness.mjs';

// Two keys a channel, so a 500 is retried on the other; each ends differently, so each masked
// form (first three and last two characters) is its own.
const SECRETS = {
  oa: ['sk-proj-LeakCanaryOpenAI0123456701', 'sk-proj-LeakCanaryOpenAI0123456702'],
  an: ['sk-ant-api03-LeakCanaryAnthropic0123456703', 'sk-ant-api03-LeakCanaryAnthropic0123456704'],
  ge: ['AIzaLeakCanaryGemini0123456789ab05', 'AIzaLeakCanaryGemini0123456789ab06'],
  az: ['azLeakCanaryAzure0123456789abcd07', 'azLeakCanaryAzure0123456789abcd08'],
  st: ['sk-store-LeakCanaryStore0123456709', 'sk-store-LeakCanaryStore0123456710'],
  pr: ['sk-probe-LeakCanaryProbe0123456711'],
};
const masked = (s) => `${s.slice(0, 3)}\u2026${s.slice(-2)}`;
const ALL = Object.values(SECRETS).flat();

function assertNoSecret(text, where) {
  for (const s of ALL) assert.ok(!text.includes(s), `${where} holds the upstream key ${s}:\n${text.slice(0, 2000)}`);
}

let mock, gw;
const started = [];

before(async () => {
  mock = await startMock([]);
  started.push(mock);
  const dir = tempDir();
  const fail = { 'x-mock-fail-rate': '1', 'x-mock-fail-status': '401', 'x-mock-echo-key': '1' };
  const yaml = [
    'store:', `  url: "sqlite://${join(dir, 'leak.db')}"`, '  log_bodies: true',
    '  secret_key: "secret-leak-test-store-key-0123456789"', '',
  ].join('\n') + gatewayYaml({
    channels: [
      { name: 'oa', type: 'openai', url: mock.url, keys: SECRETS.oa, models: ['oa-*'] },
      { name: 'an', type: 'anthropic', base_url: mock.url, keys: SECRETS.an, models: ['claude-leak-*'] },
      { name: 'ge', type: 'gemini', base_url: mock.url, keys: SECRETS.ge, models: ['gemini-leak-*'] },
      { name: 'az', type: 'azure', base_url: mock.url, keys: SECRETS.az, models: ['az-*'] },
      // Fails every request, the key check (probe) included.
      { name: 'pr', type: 'openai', url: mock.url, keys: SECRETS.pr, models: ['probe-*'], headers: fail },
    ],
    // No recovery checks: the reasons a failure left stay as they are.
    routing: { max_retries: 2, recovery_interval: '0s' },
  });
  gw = await startGateway(yaml);
  started.push(gw);
  // A channel of the store, its key sealed there: the snapshot masks it too.
  const ch = await (await admin(gw, '/channels', { method: 'POST', body: { name: 'st', type: 'openai', base_url: `${mock.url}/v1`, models: ['st-*'] } })).json();
  for (const secret of SECRETS.st) {
    const k = await admin(gw, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret } });
    assert.equal(k.status, 201, await k.text());
  }
  for (let i = 0; i < 100; i++) {
    const r = await sendChat(gw, 'openai', { model: 'st-1', user: 'hi' });
    await r.text();
    if (r.status === 200) break;
    await sleep(50);
  }
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

const knobs = (status) => ({ 'x-mock-fail-rate': '1', 'x-mock-fail-status': String(status), 'x-mock-echo-key': '1' });

// One failing request: the answer, its headers and its log row are free of every secret, and the
// masked key stands in the message. Returns the parsed answer.
async function failing(format, model, status, secrets, { stream = false } = {}) {
  const res = await sendChat(gw, format, { model, user: 'hello', stream, headers: knobs(status) });
  const text = await res.text();
  const where = `${format} -> ${model} (${status})`;
  assertNoSecret(text, `${where}: the answer`);
  assertNoSecret(JSON.stringify([...res.headers]), `${where}: the answer's headers`);
  assert.ok(secrets.some((s) => text.includes(masked(s))), `${where}: the masked key is shown: ${text}`);
  const id = res.headers.get('x-request-id');
  const row = await logOf(gw, id);
  assert.ok(row, `${where}: a log row`);
  const rowText = JSON.stringify(row);
  assertNoSecret(rowText, `${where}: the request log row`);
  assert.ok(secrets.some((s) => rowText.includes(masked(s))), `${where}: the log row shows the masked key: ${rowText}`);
  return { status: res.status, text, attempts: res.headers.get('x-sluice-attempts') };
}

const channels = [
  { name: 'oa', model: 'oa-1', native: 'openai', secrets: SECRETS.oa },
  { name: 'an', model: 'claude-leak-1', native: 'anthropic', secrets: SECRETS.an },
  { name: 'ge', model: 'gemini-leak-1', native: 'gemini', secrets: SECRETS.ge },
  { name: 'az', model: 'az-1', native: 'openai', secrets: SECRETS.az },
  { name: 'st', model: 'st-1', native: 'openai', secrets: SECRETS.st },
];

test('a 400 quoting the key is relayed with the key masked, natively and translated', async () => {
  for (const c of channels) {
    for (const format of new Set([c.native, 'openai', 'anthropic'])) {
      const r = await failing(format, c.model, 400, c.secrets);
      assert.equal(r.status, 400, `${format} -> ${c.name}: ${r.text}`);
    }
  }
});

test('a 500 quoting the key is retried, and the exhausted answer shows it masked', async () => {
  for (const c of channels) {
    for (const stream of [false, true]) {
      const r = await failing(c.native, c.model, 500, c.secrets, { stream });
      assert.equal(r.status, 502, `${c.name}: ${r.text}`);
      assert.equal(r.attempts, '2', 'retried on the other key');
      assert.match(r.text, /upstream answered 500/);
    }
  }
});

test('a 401 quoting the key disables it with a masked reason', async () => {
  for (const c of channels) {
    const r = await failing(c.native, c.model, 401, c.secrets);
    assert.equal(r.status, 502, `${c.name}: ${r.text}`);
  }
  const list = await (await admin(gw, '/upstream-keys')).text();
  assertNoSecret(list, 'GET /admin/api/upstream-keys');
  for (const c of channels) {
    const keys = JSON.parse(list).data.filter((x) => x.channel === c.name);
    assert.equal(keys.length, 2);
    for (const k of keys) {
      assert.equal(k.state, 'disabled', JSON.stringify(k));
      assert.match(k.reason, /upstream answered 401/);
      assert.ok(c.secrets.some((s) => k.reason.includes(masked(s))), `the reason shows the masked key: ${k.reason}`);
      // Back in rotation for the other tests.
      assert.equal((await admin(gw, `/upstream-keys/${k.ref}/enable`, { method: 'POST' })).status, 200);
    }
  }
});

test('a key check (probe) refused with the key quoted keeps only the masked key', async () => {
  const list = (await (await admin(gw, '/upstream-keys')).json()).data;
  const k = list.find((x) => x.channel === 'pr');
  const res = await admin(gw, `/upstream-keys/${k.ref}/probe`, { method: 'POST' });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assertNoSecret(text, 'the probe answer');
  const probe = JSON.parse(text);
  assert.equal(probe.ok, false);
  assert.equal(probe.status, 401);
  assert.ok(probe.message.includes(masked(SECRETS.pr[0])), probe.message);
  assert.equal(probe.key.state, 'disabled');
  assert.ok(probe.key.reason.startsWith('probe: '), probe.key.reason);
  assert.ok(probe.key.reason.includes(masked(SECRETS.pr[0])), probe.key.reason);
});

test('a logged request body holding a key is stored masked', async () => {
  const res = await sendChat(gw, 'openai', { model: 'oa-1', user: `my key is ${SECRETS.oa[0]}, is it valid?` });
  await res.text();
  const row = await logOf(gw, res.headers.get('x-request-id'));
  assertNoSecret(JSON.stringify(row), 'the request log row');
  assert.ok(row.request_body.includes(masked(SECRETS.oa[0])), row.request_body);
});

test('no admin response, metric or log line holds a key', async () => {
  for (const path of ['/upstream-keys', '/logs?limit=500', '/channels', '/config', '/stats']) {
    const res = await admin(gw, path);
    assertNoSecret(await res.text(), `GET /admin/api${path}`);
  }
  assertNoSecret(await metrics(gw), '/metrics');
  await sleep(200);  // access lines leave in batches
  assert.ok(gw.accessLines().length > 10);
  assertNoSecret(gw.proc.output, "the gateway's stdout and stderr (access log, spdlog)");
  // The mock did quote the keys (it received them): the test would see a leak.
  const stats = await mock.stats();
  for (const s of ALL) assert.ok((stats.by_key[s] ?? 0) >= 1, `the mock saw ${s}: ${JSON.stringify(stats.by_key)}`);
});
