// Commit on the first meaningful event: a provider that says 200 and then reports an error in
// the stream (or stalls, or sends garbage) before any content is a failed attempt the client
// never sees; the next channel answers, and the client's stream is one well-formed answer. In
// every client format, natively and translated. Each channel is its own mock, failing through
// the x-mock-* headers its config sends upstream.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startMock, startGateway, parseSse, lastLogRow, MASTER } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args = []) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }

const inband = (after, status = 529) => ({
  'x-mock-error-event-rate': '1', 'x-mock-error-event-after': String(after), 'x-mock-fail-status': String(status),
});

// One streamed request per client format; `check` asserts the stream is one whole answer.
const formats = {
  openai: {
    channel: 'openai', model: 'gpt-4o',
    send: (gw) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    }),
    check(events) {
      assert.equal(events.at(-1).data, '[DONE]');
      const chunks = events.slice(0, -1).map((e) => e.data);
      assert.ok(chunks.every((c) => !c.error), 'no error chunk');
      assert.equal(chunks.filter((c) => c.choices?.[0]?.delta?.role).length, 1, 'one role');
      assert.equal(chunks.filter((c) => c.choices?.[0]?.finish_reason).length, 1, 'one finish');
      assert.ok(chunks.some((c) => c.choices?.[0]?.delta?.content), 'content');
    },
    errorSeen: (events) => events.some((e) => e.data?.error),
  },
  responses: {
    channel: 'openai', model: 'gpt-4o',
    send: (gw) => fetch(`${gw.url}/v1/responses`, {
      method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', stream: true, input: 'hi' }),
    }),
    check(events) {
      const types = events.map((e) => e.data.type);
      assert.equal(types.filter((t) => t === 'response.created').length, 1, 'one created');
      assert.equal(types.at(-1), 'response.completed');
      assert.ok(!types.includes('response.failed') && !types.includes('error'));
      assert.ok(types.includes('response.output_text.delta'));
    },
    errorSeen: (events) => events.some((e) => e.data.type === 'response.failed'),
  },
  anthropic: {
    channel: 'anthropic', model: 'claude-sonnet-4-5',
    send: (gw) => fetch(`${gw.url}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': MASTER, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    }),
    check(events) {
      const names = events.map((e) => e.event);
      assert.equal(names.filter((n) => n === 'message_start').length, 1, 'one message_start');
      assert.equal(names.at(-1), 'message_stop');
      assert.ok(!names.includes('error'));
      assert.ok(names.includes('content_block_delta'));
    },
    errorSeen: (events) => events.some((e) => e.event === 'error'),
  },
  gemini: {
    channel: 'gemini', model: 'gemini-2.5-pro',
    send: (gw) => fetch(`${gw.url}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse`, {
      method: 'POST', headers: { 'x-goog-api-key': MASTER, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    }),
    check(events) {
      const chunks = events.map((e) => e.data);
      assert.ok(chunks.every((c) => !c.error), 'no error chunk');
      assert.equal(chunks.filter((c) => c.candidates?.[0]?.finishReason).length, 1, 'one finish');
      assert.ok(chunks.some((c) => c.candidates?.[0]?.content?.parts?.[0]?.text));
    },
    errorSeen: (events) => events.some((e) => e.data?.error),
  },
};

// Two channels of one type: `bad` (priority 1) with the given failure headers, `good` after it.
async function pair(type, badHeaders, routing = {}) {
  const bad = await mockP(), good = await mockP();
  const base = (m) => (type === 'openai' ? m.url + '/v1' : m.url);
  const gw = await gwP({
    channels: [
      { name: 'bad', type, base_url: base(bad), priority: 1, headers: badHeaders },
      { name: 'good', type, base_url: base(good), priority: 2 },
    ],
    routing: { timeouts: { first_byte: '2s' }, ...routing },
  });
  return { bad, good, gw };
}

for (const [name, f] of Object.entries(formats)) {
  test(`${name}: an in-band error before any content fails over unseen`, async () => {
    const { bad, good, gw } = await pair(f.channel, inband(0));
    const res = await f.send(gw);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'good');
    assert.equal(res.headers.get('x-sluice-attempts'), '2');
    const events = parseSse(await res.text());
    f.check(events);
    assert.equal((await bad.stats()).requests, 1);
    assert.equal((await good.stats()).requests, 1);
  });

  test(`${name}: an in-band error after content reaches the client as the format's error event`, async () => {
    const { good, gw } = await pair(f.channel, inband(2));
    const res = await f.send(gw);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'bad', 'committed with the first content');
    const events = parseSse(await res.text());
    assert.ok(f.errorSeen(events), 'the error event is passed on');
    assert.equal((await good.stats()).requests, 0);
  });

  test(`${name}: a stream that stalls after content ends, past routing.stall_timeout, with the format's error event`, async () => {
    const { good, gw } = await pair(f.channel, { 'x-mock-stall-after': '2' }, { stall_timeout: '300ms' });
    const res = await f.send(gw);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'bad');
    const text = await res.text();
    const events = parseSse(text);
    const last = events.at(-1);
    assert.ok(!text.includes('[DONE]') && !events.some((e) => e.event === 'message_stop'), 'not ended as if whole');
    const err = name === 'responses' ? last.data : last.data.error;
    if (name === 'responses') {
      assert.equal(last.event, 'error');
      assert.equal(err.type, 'error');
      assert.equal(err.code, 'upstream_stalled');
    } else if (name === 'anthropic') {
      assert.equal(last.event, 'error');
    }
    assert.match(err.message, /stalled: no bytes for 300ms \(routing\.stall_timeout\)/);
    assert.equal((await good.stats()).requests, 0, 'after the commit: not retried (on_stall: error)');
    // The gateway keeps serving.
    const again = await fetch(`${gw.url}/healthz`);
    assert.equal(again.status, 200);
  });

  test(`${name}: a stream that stalls before any content fails over within first_byte`, async () => {
    const { good, gw } = await pair(f.channel, { 'x-mock-stall-after': '0' });
    const res = await f.send(gw);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'good');
    f.check(parseSse(await res.text()));
    assert.equal((await good.stats()).requests, 1);
  });
}

test('translated: an Anthropic channel\'s overload event before content, an OpenAI client, the next channel answers', async () => {
  const bad = await mockP(), good = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'bad', type: 'anthropic', base_url: bad.url, models: ['gpt-4o'], priority: 1, headers: inband(0) },
      { name: 'good', type: 'gemini', base_url: good.url, models: ['gpt-4o'], priority: 2 },
    ],
  });
  const res = await formats.openai.send(gw);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'good');
  formats.openai.check(parseSse(await res.text()));
  // The attempt list says why the first one failed.
  const row = await lastLogRow(gw);
  assert.equal(row.attempts[0].status, 529);
  assert.match(row.attempts[0].error, /in-band error 529 before the first content: Overloaded/);
});

test('routing.rules decide an in-band error too: `return` passes the stream on as it is', async () => {
  const { good, gw } = await pair('anthropic', inband(0), { rules: [{ status: [529], body: 'overloaded_error', action: 'return' }] });
  const res = await formats.anthropic.send(gw);
  assert.equal(res.headers.get('x-sluice-channel'), 'bad');
  const events = parseSse(await res.text());
  assert.ok(events.some((e) => e.event === 'error' && e.data.error.type === 'overloaded_error'));
  assert.equal((await good.stats()).requests, 0);
});

test('an in-band rate limit cools the key down, as a 429 would', async () => {
  const { bad, gw } = await pair('openai', inband(0, 429), { rules: [{ status: [429], action: 'cooldown', for: '60s' }] });
  for (let i = 0; i < 3; i++) {
    const res = await formats.openai.send(gw);
    assert.equal(res.headers.get('x-sluice-channel'), 'good');
    formats.openai.check(parseSse(await res.text()));
  }
  assert.equal((await bad.stats()).requests, 1, 'the cooled key is not asked again');
});

test('hostile upstream: a malformed first event, an error that is no object, then a good channel', async () => {
  const bodies = [
    'data: {"choices":[{"delta":{"content":"never seen"\n\n',           // cut JSON (event ends)
    'data: [1,2,3]\n\ndata: {"choices":[{"delta":{"content":"x"}}]}\n\n', // not an object
    'data: {"error":"just a string"}\n\n',                                 // an error that is no object
  ];
  for (const body of bodies) {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(body);
      });
    });
    await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
    started.push({ stop: () => new Promise((ok) => server.close(ok)) });
    const good = await mockP();
    const gw = await gwP({ channels: [
      { name: 'bad', base_url: `http://127.0.0.1:${server.address().port}/v1`, priority: 1 },
      { name: 'good', url: good.url, priority: 2 },
    ] });
    const res = await formats.openai.send(gw);
    const text = await res.text();
    assert.equal(res.headers.get('x-sluice-channel'), 'good', body);
    assert.doesNotMatch(text, /never seen|\[1,2,3\]|just a string/);
    formats.openai.check(parseSse(text));
  }
});
