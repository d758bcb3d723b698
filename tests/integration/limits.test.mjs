// Virtual keys on the request path: authentication, revocation and expiry, allowed models and
// channels, RPM/TPM/concurrency limits with 429 + Retry-After + x-ratelimit-*, budgets from the
// pricing table (with the at-most-one-request overshoot under concurrency), cost in the logs,
// and the channels' and upstream keys' own quotas.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startMock, startGateway, chat, sleep, MASTER, metrics } from '../lib/harness.mjs';

let mock, gw;
const started = [];
const admin = (g, path, { method = 'GET', body } = {}) => fetch(`${g.url}/admin/api${path}`, {
  method, headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
  body: body === undefined ? undefined : JSON.stringify(body),
});
async function createKey(g, fields) {
  const res = await admin(g, '/keys', { method: 'POST', body: { name: 'k', ...fields } });
  const text = await res.text();
  assert.equal(res.status, 201, text);
  return JSON.parse(text);
}
const hi = (extra = {}) => ({ model: 'mock-1', messages: [{ role: 'user', content: 'hi' }], ...extra });
const rows = (db, q) => { const out = execFileSync('sqlite3', ['-json', db, q], { encoding: 'utf8' }).trim(); return out ? JSON.parse(out) : []; };

// Mock prices chosen so that one short chat costs a few dollars: budgets run out in a few requests.
const PRICING = 'pricing:\n  mock-1: {input: 100000, output: 100000}\n';

before(async () => {
  mock = await startMock([]);
  gw = await startGateway({ channels: [
    { name: 'a', url: mock.url, models: ['mock-*'], priority: 1 },
    { name: 'b', url: mock.url, models: ['mock-*'], priority: 2 },
  ], extra: PRICING });
  started.push(mock, gw);
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

test('a virtual key authenticates in every client style; a wrong one is refused', async () => {
  const { secret, key } = await createKey(gw, { name: 'styles' });
  assert.match(secret, /^sk-slc-[A-Za-z0-9]{40}$/);
  const ok = await chat(gw, hi(), { key: secret });
  assert.equal(ok.status, 200, await ok.clone().text());
  await ok.text();
  const anth = await fetch(`${gw.url}/v1/messages`, { method: 'POST',
    headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock-1', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }) });
  assert.equal(anth.status, 200, await anth.clone().text());
  await anth.text();
  const gem = await fetch(`${gw.url}/v1beta/models/mock-1:generateContent?key=${secret}`, { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }) });
  assert.equal(gem.status, 200, await gem.clone().text());
  await gem.text();
  const bad = await chat(gw, hi(), { key: secret.slice(0, -1) + (secret.endsWith('a') ? 'b' : 'a') });
  assert.equal(bad.status, 401);
  assert.equal((await bad.json()).error.code, 'invalid_api_key');
  // The key's requests carry its id and a cost in the request log.
  let mine = [];
  for (let i = 0; i < 50 && mine.length < 3; i++) {
    mine = rows(gw.db, `select * from request_logs where virtual_key_id = ${key.id}`);
    await sleep(50);
  }
  assert.equal(mine.length, 3);
  for (const r of mine) assert.ok(r.cost_usd > 0, JSON.stringify(r));
});

test('revoked: refused at once; expired: refused once the time passes', async () => {
  const { secret, key } = await createKey(gw, { name: 'soon-gone' });
  assert.equal((await chat(gw, hi(), { key: secret })).status, 200);
  const rv = await admin(gw, `/keys/${key.id}/revoke`, { method: 'POST' });
  assert.equal(rv.status, 200);
  // The admin write refreshes this instance's keys at once; allow the refresher a moment.
  let res;
  for (let i = 0; i < 40; i++) {
    res = await chat(gw, hi(), { key: secret });
    if (res.status === 401) break;
    await res.text();
    await sleep(25);
  }
  assert.equal(res.status, 401);
  assert.match((await res.json()).error.message, /revoked/);

  const exp = await createKey(gw, { name: 'expiring', expires_at_ms: Date.now() + 1500 });
  const first = await chat(gw, hi(), { key: exp.secret });
  assert.equal(first.status, 200);
  await first.text();
  await sleep(1600);
  const late = await chat(gw, hi(), { key: exp.secret });
  assert.equal(late.status, 401);
  assert.match((await late.json()).error.message, /expired/);
});

test('allowed models and channels', async () => {
  const { secret } = await createKey(gw, { name: 'narrow', allowed_models: ['mock-1'], allowed_channels: ['b'] });
  const denied = await chat(gw, hi({ model: 'mock-2' }), { key: secret });
  assert.equal(denied.status, 403);
  assert.equal((await denied.json()).error.code, 'model_not_allowed');
  for (let i = 0; i < 4; i++) {
    const res = await chat(gw, hi(), { key: secret });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'b', 'only channel b is allowed');
    await res.text();
  }
  const list = await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } })).json();
  assert.ok(list.data.every((m) => m.id === 'mock-1'), JSON.stringify(list.data));
});

test('RPM: the limit is exact, then 429 with Retry-After and x-ratelimit-* in the caller format', async () => {
  const { secret } = await createKey(gw, { name: 'rpm', rpm: 3 });
  for (let i = 0; i < 3; i++) {
    const res = await chat(gw, hi(), { key: secret });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-ratelimit-limit-requests'), '3');
    assert.equal(res.headers.get('x-ratelimit-remaining-requests'), String(2 - i));
    await res.text();
  }
  const refused = await chat(gw, hi(), { key: secret });
  assert.equal(refused.status, 429);
  const ra = Number(refused.headers.get('retry-after'));
  assert.ok(ra >= 1 && ra <= 60, `retry-after ${ra}`);
  assert.equal(refused.headers.get('x-ratelimit-remaining-requests'), '0');
  const body = await refused.json();
  assert.equal(body.error.code, 'rate_limit_exceeded');
  assert.match(body.error.message, /3 requests per minute/);
  const anth = await fetch(`${gw.url}/v1/messages`, { method: 'POST',
    headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock-1', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }) });
  assert.equal(anth.status, 429);
  const ab = await anth.json();
  assert.equal(ab.type, 'error');
  assert.equal(ab.error.type, 'rate_limit_error');
  assert.match(await metrics(gw), /sluice_limiter_refused_total\{limit="requests"\} [1-9]/);
});

test('TPM: charged with the estimate up front, reconciled with the real usage', async () => {
  // Each request is estimated at its prompt/4 + max_tokens (600): one fits in 1000, two do not.
  const { secret } = await createKey(gw, { name: 'tpm', tpm: 1000 });
  // Sequential: each settles at its real (small) usage, so the next one fits again.
  for (let i = 0; i < 4; i++) {
    const res = await chat(gw, hi({ max_tokens: 600 }), { key: secret });
    assert.equal(res.status, 200, `request ${i}: ${await res.clone().text()}`);
    await res.text();
  }
  // Concurrent: while one is in flight with its estimate, a second one does not fit.
  const slow = { 'x-mock-ttfb-ms': '400' };
  const [a, b] = await Promise.all([
    chat(gw, hi({ max_tokens: 600 }), { key: secret, headers: slow }),
    sleep(100).then(() => chat(gw, hi({ max_tokens: 600 }), { key: secret, headers: slow })),
  ]);
  assert.deepEqual([a.status, b.status], [200, 429]);
  assert.match((await b.json()).error.message, /tokens per minute/);
  await a.text();
  // A request that alone is larger than the limit is told so, and not to retry.
  const huge = await chat(gw, hi({ max_tokens: 5000 }), { key: secret });
  assert.equal(huge.status, 429);
  assert.equal(huge.headers.get('x-should-retry'), 'false');
  assert.match((await huge.json()).error.message, /estimated at \d+ tokens .* more than key tpm's limit of 1000 tokens per minute: lower max_tokens/);
});

test('max_concurrent: a second request in flight is refused, and admitted once the first ends', async () => {
  const { secret } = await createKey(gw, { name: 'conc', max_concurrent: 1 });
  const slow = { 'x-mock-ttfb-ms': '400' };
  const first = chat(gw, hi(), { key: secret, headers: slow });
  await sleep(100);
  const second = await chat(gw, hi(), { key: secret });
  assert.equal(second.status, 429);
  assert.equal((await second.json()).error.code, 'concurrency_limit_exceeded');
  const f = await first;
  assert.equal(f.status, 200);
  await f.text();
  const third = await chat(gw, hi(), { key: secret });
  assert.equal(third.status, 200);
  await third.text();
});

test('budgets: spend from the pricing table; a spent budget answers 429 that SDKs do not retry', async () => {
  const { secret, key } = await createKey(gw, { name: 'budget', budget_daily_usd: 5 });
  let ok = 0, res;
  for (let i = 0; i < 20; i++) {
    res = await chat(gw, hi(), { key: secret });
    if (res.status !== 200) break;
    ok++;
    await res.text();
  }
  assert.ok(ok >= 1 && ok < 20, `${ok} requests before the budget ran out`);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('x-should-retry'), 'false');
  const ra = Number(res.headers.get('retry-after'));
  assert.ok(ra > 0 && ra <= 86400, `a daily budget resets within a day: ${ra}`);
  const err = (await res.json()).error;
  assert.equal(err.code, 'budget_exceeded');
  assert.match(err.message, /daily budget/);
  // The admin API reports the key's spend.
  let spend = 0;
  for (let i = 0; i < 40 && spend <= 5; i++) {
    spend = (await (await admin(gw, `/keys/${key.id}`)).json()).spend.day_usd;
    await sleep(50);
  }
  assert.ok(spend > 5, `spend ${spend}`);
});

test('concurrent requests overshoot a budget by at most one request', async () => {
  const { secret } = await createKey(gw, { name: 'race', budget_total_usd: 10 });
  const results = await Promise.all(Array.from({ length: 24 }, () =>
    chat(gw, hi(), { key: secret, headers: { 'x-mock-ttfb-ms': '20' } }).then(async (r) => ({ status: r.status, body: await r.text() }))));
  const served = results.filter((r) => r.status === 200).map((r) => JSON.parse(r.body));
  assert.ok(served.length >= 1);
  assert.ok(results.filter((r) => r.status === 429).length >= 1);
  const costOf = (u) => (u.prompt_tokens + u.completion_tokens) * 0.1;
  const spent = served.reduce((s, b) => s + costOf(b.usage), 0);
  const biggest = Math.max(...served.map((b) => costOf(b.usage)));
  assert.ok(spent <= 10 + biggest + 1e-9, `spent ${spent} of 10 (one request costs up to ${biggest})`);
});

test('channel quotas: a channel at its RPM is passed over; when every one is, 429 with Retry-After', async () => {
  const m = await startMock([]);
  const g = await startGateway({ channels: [
    { name: 'small', url: m.url, models: ['mock-*'], priority: 1, limits: { rpm: 2 } },
    { name: 'spill', url: m.url, models: ['mock-*'], priority: 2, limits: { rpm: 1 } },
  ] });
  started.push(m, g);
  const seen = [];
  for (let i = 0; i < 4; i++) {
    const res = await chat(g, hi());
    seen.push(res.status === 200 ? res.headers.get('x-sluice-channel') : res.status);
    if (i === 3) {
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
      assert.match((await res.json()).error.message, /every channel that serves this model is at its rate limit/);
    } else {
      await res.text();
    }
  }
  assert.deepEqual(seen, ['small', 'small', 'spill', 429]);
});

test('upstream key quotas: a key at its RPM is skipped for the channel\'s next key', async () => {
  const m = await startMock([]);
  const g = await startGateway({ channels: [
    { name: 'pool', url: m.url, models: ['mock-*'], keys: ['sk-pool-key-000001', 'sk-pool-key-000002'], limits: { key_rpm: 1 } },
  ] });
  started.push(m, g);
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    const res = await chat(g, hi());
    statuses.push(res.status);
    await res.text();
  }
  assert.deepEqual(statuses, [200, 200, 429]);
  const byKey = (await m.stats()).by_key;
  assert.deepEqual(Object.values(byKey), [1, 1], 'each key served one request');
});
