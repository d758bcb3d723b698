// Many instances: two Sluice processes sharing a real PostgreSQL (keys, channels, logs) and a
// real redis-server (limits, spend). A key limited to 10 RPM gets exactly 10 successes across
// both; a key revoked through one is refused by the other within a second; the logs of both
// land in PostgreSQL; with Redis gone, both keep serving on local limits and say so.
// PostgreSQL comes from tests/scripts/with-postgres.sh (tests/run.sh wraps this suite in it);
// redis-server is started here so the test can take it away.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, gatewayYaml, chat, sleep, MASTER, metrics, stop } from '../lib/harness.mjs';
import { startRedis } from '../lib/services.mjs';

const PG = process.env.SLUICE_TEST_POSTGRES_URL;
let redis, redisUrl, mock, gw1, gw2;

const admin = (g, path, { method = 'GET', body } = {}) => fetch(`${g.url}/admin/api${path}`, {
  method, headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
  body: body === undefined ? undefined : JSON.stringify(body),
});
const hi = { model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] };

before(async () => {
  assert.ok(PG, 'SLUICE_TEST_POSTGRES_URL is not set: run this suite through tests/scripts/with-postgres.sh (tests/run.sh does)');
  redis = await startRedis();
  redisUrl = redis.url;
  mock = await startMock([]);
  const yaml = `store:\n  url: "${PG}"\nredis:\n  url: "${redisUrl}"\n` +
    gatewayYaml({ channels: [{ name: 'm', url: mock.url, models: ['mock-*'] }] });
  gw1 = await startGateway(yaml);
  gw2 = await startGateway(yaml);
});
after(async () => {
  await gw1?.stop();
  await gw2?.stop();
  await mock?.stop();
  if (redis) await stop(redis.proc);
});

test('a key limited to 10 RPM gets exactly 10 successes across both instances', async () => {
  const created = await admin(gw1, '/keys', { method: 'POST', body: { name: 'shared-rpm', rpm: 10 } });
  assert.equal(created.status, 201, await created.clone().text());
  const { secret } = await created.json();
  // The other instance learns of the key from PostgreSQL.
  for (let i = 0; i < 60; i++) {
    const r = await fetch(`${gw2.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
    if (r.status === 200) break;
    await sleep(50);
  }
  const results = [];
  for (let round = 0; round < 5; round++) {
    const batch = await Promise.all(Array.from({ length: 6 }, (_, i) =>
      chat(i % 2 ? gw2 : gw1, hi, { key: secret }).then(async (r) => { await r.text(); return r.status; })));
    results.push(...batch);
  }
  assert.equal(results.filter((s) => s === 200).length, 10, JSON.stringify(results));
  assert.equal(results.filter((s) => s === 429).length, 20);
});

test('a key revoked through one instance is refused by the other within a second', async () => {
  const created = await (await admin(gw1, '/keys', { method: 'POST', body: { name: 'to-revoke' } })).json();
  const secret = created.secret;
  for (let i = 0; i < 60; i++) {
    const r = await chat(gw2, hi, { key: secret });
    await r.text();
    if (r.status === 200) break;
    await sleep(50);
  }
  assert.equal((await admin(gw1, `/keys/${created.key.id}/revoke`, { method: 'POST' })).status, 200);
  const revokedAt = Date.now();
  let status = 0;
  while (Date.now() - revokedAt < 1000) {
    const r = await chat(gw2, hi, { key: secret });
    await r.text();
    status = r.status;
    if (status === 401) break;
    await sleep(20);
  }
  assert.equal(status, 401, 'the other instance still accepted the key a second after it was revoked');
});

test('the request logs of both instances land in PostgreSQL', async () => {
  const ids = [];
  for (const g of [gw1, gw2, gw1, gw2]) {
    const r = await chat(g, hi);
    ids.push(r.headers.get('x-request-id'));
    await r.text();
  }
  let found = [];
  for (let i = 0; i < 60; i++) {
    const page = await (await admin(gw1, '/logs?limit=1000')).json();
    found = page.data.map((e) => e.request_id).filter((id) => ids.includes(id));
    if (found.length === ids.length) break;
    await sleep(50);
  }
  assert.deepEqual(new Set(found), new Set(ids));
});

test('a cache switched on through one instance is on for both, and shared through Redis', async () => {
  const on = await admin(gw1, '/settings', { method: 'PATCH', body: { cache: { enabled: true } } });
  assert.equal(on.status, 200);
  const s1 = await on.json();
  assert.equal(s1.cache.enabled, true);
  assert.equal(s1.cache.backend, 'redis');
  // The other instance reads the switch from the store on its next refresh.
  let s2;
  for (let i = 0; i < 50; i++) {
    s2 = await (await admin(gw2, '/settings')).json();
    if (s2.cache.enabled) break;
    await sleep(100);
  }
  assert.equal(s2.cache.enabled, true);
  assert.equal(s2.cache.source, 'admin');
  const body = { model: 'mock-1', messages: [{ role: 'user', content: `shared cache ${Date.now()}` }] };
  const first = await chat(gw1, body);
  assert.equal(first.headers.get('x-sluice-cache'), 'miss');
  const text = await first.text();
  const second = await chat(gw2, body);
  assert.equal(second.headers.get('x-sluice-cache'), 'hit', 'the entry gw1 stored is found by gw2');
  assert.equal(second.headers.get('x-sluice-channel'), 'cache');
  assert.equal(JSON.parse(await second.text()).choices[0].message.content, JSON.parse(text).choices[0].message.content);
  const off = await admin(gw1, '/settings', { method: 'PATCH', body: { cache: { enabled: null } } });
  assert.equal((await off.json()).cache.enabled, false);
});

test('with Redis gone, both instances keep serving on local limits and say so', async () => {
  const { secret } = await (await admin(gw1, '/keys', { method: 'POST', body: { name: 'fallback', rpm: 1000 } })).json();
  for (let i = 0; i < 60; i++) {
    const r = await chat(gw2, hi, { key: secret });
    await r.text();
    if (r.status === 200) break;
    await sleep(50);
  }
  assert.match(await metrics(gw1), /sluice_redis_up 1/);
  await stop(redis.proc, 'SIGKILL');
  redis = null;
  for (const g of [gw1, gw2]) {
    for (let i = 0; i < 3; i++) {
      const r = await chat(g, hi, { key: secret });
      assert.equal(r.status, 200, await r.clone().text());
      await r.text();
    }
    const m = await metrics(g);
    assert.match(m, /sluice_redis_up 0/);
    assert.match(m, /sluice_limiter_fallback_total [1-9]/);
    assert.match(g.proc.output, /redis/i);
  }
});
