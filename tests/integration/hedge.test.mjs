// routing.hedge_after: with no first byte (a stream's first meaningful event) that long after an
// attempt began, the next candidate is started too; the first to answer is given to the client,
// the other is cancelled (its connection closed) and logged as an attempt. At most one hedge a
// request; off by default. In every client format, streamed and whole. Each channel is its own
// mock, slowed through the x-mock-* headers its config sends upstream.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startMock, startGateway, parseSse, lastLogRow, MASTER } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args = []) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }
const auth = { authorization: `Bearer ${MASTER}` };

const formats = {
  'openai stream': {
    type: 'openai', model: 'gpt-4o', path: '/v1/chat/completions', headers: auth,
    body: { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    check(text) {
      const ev = parseSse(text);
      assert.equal(ev.at(-1).data, '[DONE]');
      const chunks = ev.slice(0, -1).map((e) => e.data);
      assert.equal(chunks.filter((c) => c.choices?.[0]?.delta?.role).length, 1, 'one role');
      assert.equal(chunks.filter((c) => c.choices?.[0]?.finish_reason).length, 1, 'one finish');
    },
  },
  'openai whole': {
    type: 'openai', model: 'gpt-4o', path: '/v1/chat/completions', headers: auth,
    body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
    check(text) { assert.ok(JSON.parse(text).choices[0].message.content); },
  },
  responses: {
    type: 'openai', model: 'gpt-4o', path: '/v1/responses', headers: auth,
    body: { model: 'gpt-4o', stream: true, input: 'hi' },
    check(text) {
      const types = parseSse(text).map((e) => e.data.type);
      assert.equal(types.filter((t) => t === 'response.created').length, 1);
      assert.equal(types.at(-1), 'response.completed');
    },
  },
  anthropic: {
    type: 'anthropic', model: 'claude-sonnet-4-5', path: '/v1/messages',
    headers: { 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' },
    body: { model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] },
    check(text) {
      const names = parseSse(text).map((e) => e.event);
      assert.equal(names.filter((n) => n === 'message_start').length, 1);
      assert.equal(names.at(-1), 'message_stop');
    },
  },
  gemini: {
    type: 'gemini', model: 'gemini-2.5-pro', path: '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse',
    headers: { 'x-goog-api-key': MASTER },
    body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
    check(text) {
      const chunks = parseSse(text).map((e) => e.data);
      assert.equal(chunks.filter((c) => c.candidates?.[0]?.finishReason).length, 1);
    },
  },
};

const send = (gw, f) => fetch(`${gw.url}${f.path}`, {
  method: 'POST', headers: { ...f.headers, 'content-type': 'application/json' }, body: JSON.stringify(f.body),
});

// Channels in try-order (priority 1, 2, 3...), each its own mock slowed by `ttfb` ms.
async function chain(type, ttfbs, routing) {
  const mocks = [];
  for (let i = 0; i < ttfbs.length; i++) mocks.push(await mockP());
  const base = (m) => (type === 'openai' ? m.url + '/v1' : m.url);
  const gw = await gwP({
    channels: mocks.map((m, i) => ({
      name: `c${i + 1}`, type, base_url: base(m), priority: i + 1, headers: { 'x-mock-ttfb-ms': String(ttfbs[i]) },
    })),
    routing,
  });
  return { mocks, gw };
}

for (const [name, f] of Object.entries(formats)) {
  test(`${name}: a first byte slower than hedge_after is hedged; the hedge answers, the first is cancelled`, async () => {
    const { mocks, gw } = await chain(f.type, [5000, 0], { hedge_after: '150ms' });
    const res = await send(gw, f);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'c2');
    assert.equal(res.headers.get('x-sluice-attempts'), '2');
    f.check(await res.text());
    assert.equal((await mocks[0].stats()).requests, 1);
    assert.equal((await mocks[1].stats()).requests, 1);
    const row = await lastLogRow(gw);
    assert.equal(row.attempts.length, 2);
    assert.equal(row.attempts[0].channel, 'c1');
    assert.match(row.attempts[0].error, /hedge: cancelled, c2 answered first/);
    assert.equal(row.attempts[1].channel, 'c2');
    assert.equal(row.attempts[1].error, null);
    assert.equal(row.channel, 'c2');
  });
}

test('a first byte within hedge_after is not hedged', async () => {
  const { mocks, gw } = await chain('openai', [0, 0], { hedge_after: '2s' });
  const res = await send(gw, formats['openai stream']);
  assert.equal(res.headers.get('x-sluice-channel'), 'c1');
  assert.equal(res.headers.get('x-sluice-attempts'), '1');
  formats['openai stream'].check(await res.text());
  assert.equal((await mocks[1].stats()).requests, 0);
});

test('the first attempt still wins when it answers before the hedge', async () => {
  const { mocks, gw } = await chain('openai', [1000, 5000], { hedge_after: '100ms' });
  const res = await send(gw, formats['openai stream']);
  assert.equal(res.headers.get('x-sluice-channel'), 'c1');
  assert.equal(res.headers.get('x-sluice-attempts'), '1');
  formats['openai stream'].check(await res.text());
  assert.equal((await mocks[1].stats()).requests, 1, 'the hedge was sent');
  const row = await lastLogRow(gw);
  assert.equal(row.attempts.length, 2);
  assert.match(row.attempts[1].error, /hedge: cancelled, c1 answered first/);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /sluice_hedges_total\{channel="c2",result="lost"\} 1/);
});

test('at most one hedge a request: a third channel is not started', async () => {
  const { mocks, gw } = await chain('openai', [700, 700, 0], { hedge_after: '100ms' });
  const res = await send(gw, formats['openai whole']);
  assert.equal(res.status, 200);
  assert.ok(['c1', 'c2'].includes(res.headers.get('x-sluice-channel')));
  await res.text();
  assert.equal((await mocks[2].stats()).requests, 0);
});

test('a hedge that fails in-band before content does not win; the first attempt answers', async () => {
  const slow = await mockP(), bad = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'slow', url: slow.url, priority: 1, headers: { 'x-mock-ttfb-ms': '1000' } },
      { name: 'bad', url: bad.url, priority: 2, headers: { 'x-mock-error-event-rate': '1', 'x-mock-error-event-after': '0', 'x-mock-fail-status': '529' } },
    ],
    routing: { hedge_after: '100ms' },
  });
  const res = await send(gw, formats['openai stream']);
  assert.equal(res.headers.get('x-sluice-channel'), 'slow');
  formats['openai stream'].check(await res.text());
  const row = await lastLogRow(gw);
  assert.equal(row.attempts.length, 2);
  assert.match(row.attempts.find((x) => x.channel === 'bad').error, /in-band error \d+ before the first content/);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /sluice_hedges_total\{channel="bad",result="lost"\} 1/);
});

test('hedge_after: auto hedges what is slower than the channel\'s recent p95', async () => {
  // The first channel answers its first two requests after 300 ms and the next 23 at once, then
  // waits 3 s on the 26th. The two slow answers come before there are 20 samples (no p95, no
  // hedge); after that the nearest-rank p95 of 20-25 samples is the second slowest, 300 ms, far
  // above any scheduling noise of the quick answers (a p95 made of quick answers alone would be
  // a few ms, and a loaded machine's jitter would hedge some of them). So the 26th, and only it,
  // is hedged, and the second channel answers it.
  let n = 0;
  const a = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      ++n;
      const delay = n === 26 ? 3000 : n <= 2 ? 300 : 0;
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: `a${n}`, object: 'chat.completion', created: 1, model: 'gpt-4o',
          choices: [{ index: 0, message: { role: 'assistant', content: 'from a' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }));
      }, delay);
    });
  });
  await new Promise((ok) => a.listen(0, '127.0.0.1', ok));
  started.push({ stop: () => new Promise((ok) => { a.closeAllConnections(); a.close(ok); }) });
  const b = await mockP();
  const gw = await gwP({
    channels: [{ name: 'a', base_url: `http://127.0.0.1:${a.address().port}/v1`, priority: 1 }, { name: 'b', url: b.url, priority: 2 }],
    routing: { hedge_after: 'auto' },
  });
  for (let i = 1; i <= 25; i++) {
    const res = await send(gw, formats['openai whole']);
    assert.equal(res.headers.get('x-sluice-channel'), 'a');
    await res.text();
  }
  assert.equal((await b.stats()).requests, 0, 'no hedge while the first answers in time');
  const res = await send(gw, formats['openai whole']);
  assert.equal(res.headers.get('x-sluice-channel'), 'b');
  assert.equal(res.headers.get('x-sluice-attempts'), '2');
  await res.text();
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /sluice_hedges_total\{channel="b",result="won"\} 1/);
});

test('an error status from the first attempt while the hedge is out does not end the race: the hedge answers', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, priority: 1, headers: { 'x-mock-ttfb-ms': '400', 'x-mock-fail-rate': '1', 'x-mock-fail-status': '503' } },
      { name: 'b', url: b.url, priority: 2, headers: { 'x-mock-ttfb-ms': '1000' } },
    ],
    routing: { hedge_after: '100ms' },
  });
  const res = await send(gw, formats['openai stream']);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'b');
  assert.equal(res.headers.get('x-sluice-attempts'), '2');
  formats['openai stream'].check(await res.text());
  assert.equal((await b.stats()).requests, 1, 'the hedge, not a failover after the 503');
  const row = await lastLogRow(gw);
  assert.equal(row.attempts.length, 2);
  assert.equal(row.attempts[0].channel, 'a');
  assert.match(row.attempts[0].error, /upstream answered 503/);
  assert.equal(row.attempts[1].error, null);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /sluice_hedges_total\{channel="b",result="won"\} 1/);
});

test('a `return` rule on the first attempt\'s error answers the client at once, the hedge cancelled', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, priority: 1, headers: { 'x-mock-ttfb-ms': '400', 'x-mock-fail-rate': '1', 'x-mock-fail-status': '503' } },
      { name: 'b', url: b.url, priority: 2, headers: { 'x-mock-ttfb-ms': '5000' } },
    ],
    routing: { hedge_after: '100ms', rules: [{ status: [503], action: 'return' }] },
  });
  const res = await send(gw, formats['openai whole']);
  assert.equal(res.status, 503);
  assert.equal(res.headers.get('x-sluice-channel'), 'a');
  await res.text();
  const row = await lastLogRow(gw);
  assert.equal(row.attempts.length, 2);
  assert.match(row.attempts.find((x) => x.channel === 'b').error, /hedge: cancelled, a answered first/);
});
