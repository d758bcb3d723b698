// Upstream key health through the admin API: the live state of every key, disable/enable by
// hand, the validation probe, and the periodic recovery check that brings a key back once its
// provider accepts it again.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, chat, sleep, MASTER } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
const admin = (g, path, { method = 'GET', body } = {}) => fetch(`${g.url}/admin/api${path}`, {
  method, headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
  body: body === undefined ? undefined : JSON.stringify(body),
});
const hi = { model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] };
const BAD = 'sk-revoked-by-provider-01';
const GOOD = 'sk-working-key-00000002';

async function keys(g) {
  const res = await admin(g, '/upstream-keys');
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

test('key health: automatic disable on 401, probe, manual disable/enable, recovery check', async () => {
  // The mock refuses BAD with 401 on every endpoint, the model list included.
  const mock = await startMock(['--fail-rate', '1', '--fail-status', '401']);
  started.push(mock);
  const channels = (failKey) => [{ name: 'p', url: mock.url, models: ['mock-*'], keys: [BAD, GOOD],
    headers: failKey ? { 'x-mock-fail-key': BAD } : { 'x-mock-fail-rate': '0' } }];
  const g = await startGateway({ channels: channels(true), routing: { recovery_interval: '200ms' } });
  started.push(g);

  let list = await keys(g);
  assert.equal(list.length, 2);
  for (const k of list) {
    assert.match(k.ref, /^k[0-9a-f]{12}$/);
    assert.equal(k.source, 'config');
    assert.ok(!JSON.stringify(k).includes(BAD) && !JSON.stringify(k).includes(GOOD), 'secrets never shown');
  }
  // Two requests: whichever order the keys take, BAD meets its 401 and is disabled.
  for (let i = 0; i < 2; i++) {
    const res = await chat(g, hi);
    assert.equal(res.status, 200);
    await res.text();
  }
  list = await keys(g);
  const bad = list.find((k) => k.state === 'disabled');
  const good = list.find((k) => k.state === 'active');
  assert.ok(bad && good, JSON.stringify(list));
  assert.match(bad.reason, /401/);

  const probeBad = await (await admin(g, `/upstream-keys/${bad.ref}/probe`, { method: 'POST' })).json();
  assert.equal(probeBad.ok, false);
  assert.equal(probeBad.status, 401);
  const probeGood = await (await admin(g, `/upstream-keys/${good.ref}/probe`, { method: 'POST' })).json();
  assert.equal(probeGood.ok, true, JSON.stringify(probeGood));
  assert.equal(probeGood.status, 200);

  // By hand: with the good key disabled too, nothing is left to serve.
  const dis = await admin(g, `/upstream-keys/${good.ref}/disable`, { method: 'POST', body: { reason: 'rotating' } });
  assert.equal(dis.status, 200);
  const d = await dis.json();
  assert.equal(d.state, 'disabled');
  assert.equal(d.reason, 'rotating');
  assert.equal(d.manual, true);
  const none = await chat(g, hi);
  assert.equal(none.status, 503);
  assert.match((await none.json()).error.message, /no upstream key is available .*2 of 2 keys disabled/);
  const en = await (await admin(g, `/upstream-keys/${good.ref}/enable`, { method: 'POST' })).json();
  assert.equal(en.state, 'active');
  const back = await chat(g, hi);
  assert.equal(back.status, 200);
  await back.text();

  // The provider takes BAD again: the recovery check (every 200 ms here) probes it back in.
  g.writeConfig({ channels: channels(false), routing: { recovery_interval: '200ms' } });
  let state;
  for (let i = 0; i < 100; i++) {
    state = (await keys(g)).find((k) => k.ref === bad.ref)?.state;
    if (state === 'active') break;
    await sleep(50);
  }
  assert.equal(state, 'active', 'the recovery check re-enabled the key');
  // A key disabled by hand is not brought back by the recovery check.
  await admin(g, `/upstream-keys/${good.ref}/disable`, { method: 'POST', body: {} });
  await sleep(600);
  assert.equal((await keys(g)).find((k) => k.ref === good.ref).state, 'disabled');
});

test('key health admin errors: unknown ref, wrong method, bad body', async () => {
  const mock = await startMock([]);
  const g = await startGateway({ channels: [{ name: 'p', url: mock.url, models: ['mock-*'] }] });
  started.push(mock, g);
  const unknown = await admin(g, '/upstream-keys/knope/disable', { method: 'POST', body: {} });
  assert.equal(unknown.status, 404);
  assert.equal((await unknown.json()).error.param, 'ref');
  assert.equal((await admin(g, '/upstream-keys')).status, 200);
  assert.equal((await admin(g, '/upstream-keys', { method: 'POST', body: {} })).status, 405);
  const [k] = await keys(g);
  const bad = await fetch(`${g.url}/admin/api/upstream-keys/${k.ref}/disable`, { method: 'POST',
    headers: { authorization: `Bearer ${MASTER}` }, body: '[1,2' });
  assert.equal(bad.status, 400);
  const wrongType = await admin(g, `/upstream-keys/${k.ref}/disable`, { method: 'POST', body: { reason: 5 } });
  assert.equal(wrongType.status, 400);
  assert.equal((await wrongType.json()).error.param, 'reason');
  const noAuth = await fetch(`${g.url}/admin/api/upstream-keys`);
  assert.equal(noAuth.status, 401);
  const cfg = await (await admin(g, '/config')).json();
  assert.match(cfg.yaml, /master_key: "sk-/);
  assert.ok(!cfg.yaml.includes(MASTER), 'the master key is masked');
  const rl = await admin(g, '/reload', { method: 'POST' });
  assert.equal(rl.status, 200);
  assert.equal((await rl.json()).ok, true);
});
