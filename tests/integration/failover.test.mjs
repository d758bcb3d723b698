// Failover: retryable failures move to the next key and channel before the client sees a byte.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, chat, readSse, metrics, sleep } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }
const msg = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

test('a flaky channel loses no request: 200 streams and 200 plain all succeed', async () => {
  const flaky = await mockP(['--fail-rate', '0.4', '--fail-status', '503']);
  const healthy = await mockP([]);
  const gw = await gwP({ channels: [
    { name: 'flaky', url: flaky.url }, { name: 'healthy', url: healthy.url },
  ], routing: { max_retries: 2, breaker_failures: 1000 } });
  let ok = 0, retried = 0;
  for (let round = 0; round < 10; round++) {
    const rs = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const stream = i % 2 === 0;
      const res = await chat(gw, { ...msg, stream });
      if (res.headers.get('x-sluice-attempts') !== '1') retried++;
      if (stream) { const { events } = await readSse(res); return res.status === 200 && events.at(-1) === '[DONE]'; }
      const b = await res.json(); return res.status === 200 && b.object === 'chat.completion';
    }));
    ok += rs.filter(Boolean).length;
  }
  assert.equal(ok, 200);
  assert.ok(retried > 0, 'some requests failed over');
  assert.match(await metrics(gw), /sluice_retries_total\{channel="flaky",reason="503"\} \d+/);
});

test('a dead channel (connection refused) fails over to the next', async () => {
  const healthy = await mockP([]);
  const gw = await gwP({ channels: [
    { name: 'dead', base_url: 'http://127.0.0.1:1/v1', priority: 1 },
    { name: 'live', url: healthy.url, priority: 2 },
  ] });
  const res = await chat(gw, msg);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'live');
  assert.equal(res.headers.get('x-sluice-attempts'), '2');
  await res.text();
});

test('priority: lower first; weight shares among equals', async () => {
  const a = await mockP([]), b = await mockP([]), c = await mockP([]);
  const gw = await gwP({ channels: [
    { name: 'a', url: a.url, priority: 1, weight: 3 }, { name: 'b', url: b.url, priority: 1, weight: 1 },
    { name: 'c', url: c.url, priority: 2 },
  ] });
  const counts = { a: 0, b: 0, c: 0 };
  for (let i = 0; i < 200; i++) {
    const res = await chat(gw, msg);
    counts[res.headers.get('x-sluice-channel')]++;
    await res.text();
  }
  assert.equal(counts.c, 0, 'the lower priority is not used while the higher is healthy');
  assert.ok(counts.a > counts.b * 1.8 && counts.b > 20, JSON.stringify(counts));
});

test('429 with Retry-After cools the key down; the other key takes over', async () => {
  const m = await mockP([]);
  const gw = await gwP({ channels: [{ name: 'ch', url: m.url, keys: ['key-one-aaaaaaaa', 'key-two-bbbbbbbb'] }] });
  // First request: whichever key goes first answers 429 with Retry-After: 2.
  const res = await chat(gw, msg, { headers: { 'x-mock-fail-rate': '1', 'x-mock-fail-status': '429', 'x-mock-retry-after': '2' } });
  // Both keys got 429 for this request (the knob is per request), so the client sees 429 + Retry-After.
  assert.equal(res.status, 429);
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
  assert.equal((await res.json()).error.code, 'upstream_rate_limited');
  // Both keys cool down now: the gateway answers 429 itself without calling upstream.
  await m.reset();
  const cooled = await chat(gw, msg);
  assert.equal(cooled.status, 429);
  assert.ok(Number(cooled.headers.get('retry-after')) >= 1);
  await cooled.text();
  assert.equal((await m.stats()).requests, 0, 'no upstream call while every key cools down');
  assert.match(await metrics(gw), /state="cooling"/);
  await sleep(2300);
  const back = await chat(gw, msg);
  assert.equal(back.status, 200);
  await back.text();
});

test('429 on one key moves to the next key of the same channel within the request', async () => {
  const m = await mockP([]);
  const gw = await gwP({ channels: [{ name: 'ch', url: m.url, keys: ['key-one-aaaaaaaa', 'key-two-bbbbbbbb'] }],
    routing: { max_retries: 1 } });
  // The mock fails only requests made with key one (x-mock-fail-key).
  const h = { 'x-mock-fail-key': 'key-one-aaaaaaaa', 'x-mock-fail-rate': '1', 'x-mock-fail-status': '429', 'x-mock-retry-after': '30' };
  for (let i = 0; i < 4; i++) {
    const r = await chat(gw, msg, { headers: h });
    assert.equal(r.status, 200);
    await r.text();
  }
  await m.reset();
  for (let i = 0; i < 6; i++) {
    const r = await chat(gw, msg);
    assert.equal(r.headers.get('x-sluice-attempts'), '1');
    await r.text();
  }
  const s = await m.stats();
  assert.deepEqual(Object.keys(s.by_key), ['key-two-bbbbbbbb'], 'key one cools down for 30 s');
});

test('401 disables a key with its reason; the rest of the pool serves', async () => {
  const bad = await mockP(['--fail-rate', '1', '--fail-status', '401']);
  const good = await mockP([]);
  const gw = await gwP({ channels: [
    { name: 'revoked', url: bad.url, keys: ['sk-revoked-key-xyz1'], priority: 1 },
    { name: 'backup', url: good.url, priority: 2 },
  ] });
  const r1 = await chat(gw, msg);
  assert.equal(r1.status, 200);
  assert.equal(r1.headers.get('x-sluice-attempts'), '2');
  await r1.text();
  assert.match(await metrics(gw), /sluice_upstream_key_state\{channel="revoked",key="[^"]+",state="disabled"\} 1/);
  await bad.reset();
  const r2 = await chat(gw, msg);
  assert.equal(r2.headers.get('x-sluice-attempts'), '1', 'disabled key is not tried again');
  await r2.text();
  assert.equal((await bad.stats()).requests, 0);
});

test('a 400 from upstream is the client\'s error: returned as is, not retried', async () => {
  const m = await mockP([]);
  const gw = await gwP({ channels: [{ name: 'a', url: m.url }, { name: 'b', url: m.url }] });
  const res = await chat(gw, { model: 'gpt-4o-mini' }); // no messages: the mock says 400
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('x-sluice-attempts'), '1');
  assert.ok((await res.json()).error.message);
});

test('every attempt failing gives 502 with a per-attempt summary', async () => {
  const m = await mockP(['--fail-rate', '1', '--fail-status', '500']);
  const gw = await gwP({ channels: [{ name: 'a', url: m.url, keys: ['ka-aaaaaaaaaaaa', 'ka-cccccccccccc'] }, { name: 'b', url: m.url, keys: ['kb-bbbbbbbbbbbb'] }],
    routing: { max_retries: 2 } });
  const res = await chat(gw, msg);
  assert.equal(res.status, 502);
  assert.equal(res.headers.get('x-sluice-attempts'), '3');
  const err = (await res.json()).error;
  assert.equal(err.code, 'upstream_unavailable');
  assert.match(err.message, /#1 /);
  assert.match(err.message, /#2 /);
  assert.match(err.message, /#3 /);
  assert.match(err.message, /500/);
  assert.ok(!err.message.includes('ka-aaaaaaaaaaaa'), 'keys are masked in messages');
});

test('circuit breaker: consecutive failures open it, a probe after the cool-down closes it', async () => {
  const flaky = await mockP(['--fail-rate', '1', '--fail-status', '500']);
  const good = await mockP([]);
  const gw = await gwP({ channels: [{ name: 'flaky', url: flaky.url, priority: 1 }, { name: 'good', url: good.url, priority: 2 }],
    routing: { breaker_failures: 3, breaker_cooldown: '1s' } });
  for (let i = 0; i < 3; i++) { const r = await chat(gw, msg); assert.equal(r.status, 200); await r.text(); }
  assert.match(await metrics(gw), /sluice_channel_breaker_open\{channel="flaky"\} 1/);
  await flaky.reset();
  for (let i = 0; i < 5; i++) { const r = await chat(gw, msg); assert.equal(r.headers.get('x-sluice-attempts'), '1'); await r.text(); }
  assert.equal((await flaky.stats()).requests, 0, 'open breaker: flaky channel skipped');
  await sleep(1200);
  // Half-open: one probe goes to flaky (fails), the breaker opens again.
  const r = await chat(gw, msg);
  assert.equal(r.status, 200);
  await r.text();
  assert.equal((await flaky.stats()).requests, 1, 'exactly one probe');
});
