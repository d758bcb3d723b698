// routing.balance: latency: within a priority the channel that recently answered sooner (and
// failed less) goes first: power of two choices over the weighted shuffle, by moving averages of
// time to first byte and of errors per channel and per key. Shown in /metrics and in
// /admin/api/upstream-keys (the console's Channels page). Two mocks 10 ms and 150 ms to the first
// byte; the share is counted by the requests each mock received, not by time.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, MASTER } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args = []) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }

const auth = { authorization: `Bearer ${MASTER}` };

async function chat(gw, stream) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o', stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  await res.text();
  return res.headers.get('x-sluice-channel');
}

async function twoChannels(balance) {
  const fast = await mockP(['--ttfb-ms', '10']), slow = await mockP(['--ttfb-ms', '150']);
  const gw = await gwP({
    channels: [{ name: 'fast', url: fast.url }, { name: 'slow', url: slow.url }],
    routing: balance ? { balance } : {},
  });
  return { fast, slow, gw };
}

test('balance: latency sends nearly every request to the faster of two equal channels', async () => {
  const { fast, slow, gw } = await twoChannels('latency');
  for (let i = 0; i < 40; i++) await chat(gw, i % 2 === 0);
  const f = (await fast.stats()).requests, s = (await slow.stats()).requests;
  assert.equal(f + s, 40);
  // Each is tried while it is unmeasured; from then on the slow one only if the fast one fails.
  assert.ok(f >= 36, `fast served ${f} of 40`);

  const metrics = await (await fetch(`${gw.url}/metrics`, { headers: auth })).text();
  const ewma = (ch) => Number(metrics.match(new RegExp(`sluice_channel_ttfb_ewma_ms\\{channel="${ch}"\\} ([0-9.]+)`))[1]);
  assert.ok(ewma('fast') < ewma('slow'), `fast ${ewma('fast')} ms, slow ${ewma('slow')} ms`);
  assert.ok(ewma('slow') >= 150);
  assert.match(metrics, /sluice_channel_error_ewma\{channel="fast"\} 0\.0000/);
  assert.match(metrics, /sluice_upstream_key_ttfb_ewma_ms\{channel="fast",key="[^"]+"\} [0-9.]+/);

  const keys = (await (await fetch(`${gw.url}/admin/api/upstream-keys`, { headers: auth })).json()).data;
  const k = keys.find((x) => x.channel === 'slow');
  assert.ok(k.ttfb_ewma_ms >= 150, JSON.stringify(k));
  assert.equal(k.error_ewma, 0);
  assert.equal(k.channel_ttfb_ewma_ms, k.ttfb_ewma_ms, 'one key: the channel is its key');
});

test('balance: latency puts a failing channel last however fast it answers', async () => {
  // The fast mock fails every request with a 503 at once: each attempt on it fails over to the
  // slow one, and after its first failure the slow one goes first. The breaker is set out of reach
  // so that what keeps the fast one out is the balance.
  const fast = await mockP(['--ttfb-ms', '10']), slow = await mockP(['--ttfb-ms', '150']);
  const gw = await gwP({
    channels: [
      { name: 'fast', url: fast.url, headers: { 'x-mock-fail-rate': '1', 'x-mock-fail-status': '503' } },
      { name: 'slow', url: slow.url },
    ],
    routing: { balance: 'latency', breaker_failures: 1000 },
  });
  for (let i = 0; i < 20; i++) assert.equal(await chat(gw, false), 'slow');
  const tried = (await fast.stats()).requests;
  // At most twice: first while neither was measured, or once the slow one was and it was not.
  assert.ok(tried >= 1 && tried <= 2, `the failing channel was tried ${tried} times in 20 requests`);
  assert.equal((await slow.stats()).requests, 20);
  const metrics = await (await fetch(`${gw.url}/metrics`, { headers: auth })).text();
  assert.match(metrics, /sluice_channel_error_ewma\{channel="fast"\} 1\.0000/);
  assert.doesNotMatch(metrics, /sluice_channel_ttfb_ewma_ms\{channel="fast"\}/, 'an error status is no answer to time');
});

test('balance: weighted (the default) shares equal channels whatever their latency', async () => {
  const { fast, slow, gw } = await twoChannels(null);
  for (let i = 0; i < 40; i++) await chat(gw, false);
  const f = (await fast.stats()).requests, s = (await slow.stats()).requests;
  assert.equal(f + s, 40);
  assert.ok(s >= 8 && f >= 8, `fast ${f}, slow ${s}`);
});
