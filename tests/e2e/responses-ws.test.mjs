// The Responses API's WebSocket mode (GET /v1/responses, upgraded), with the `ws` client the
// openai SDK itself uses for it: warm-ups, turns chained with previous_response_id and only
// their new input, native on an openai channel and translated for Anthropic and Gemini, the
// error messages that leave the socket open, failover, a stream that breaks, the handshake's
// 401, the message size limit (close 1009) and the idle timeout. Every turn is a POST in the
// access log; the upgrade is one GET 101 line when the socket closes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startMock, startGateway, waitFor, createKey, MASTER } from '../lib/harness.mjs';

let mock, gw;

before(async () => {
  mock = await startMock(['--chunks', '3']);
  gw = await startGateway({
    server: { max_body_bytes: '256KiB' },
    channels: [
      { name: 'oa', type: 'openai', url: mock.url, models: ['gpt-4o-mini'] },
      { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-sonnet-4-5'] },
      { name: 'ge', type: 'gemini', base_url: mock.url, models: ['gemini-2.5-flash'] },
      // Nothing listens on port 9 of loopback: the first choice for this model always fails.
      { name: 'down', type: 'openai', base_url: 'http://127.0.0.1:9/v1', models: ['claude-haiku-4-5'], priority: 1 },
      { name: 'an2', type: 'anthropic', base_url: mock.url, models: ['claude-haiku-4-5'], priority: 2 },
    ],
  });
});
after(async () => {
  await gw?.stop();
  await mock?.stop();
});

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

// A connected socket whose turn() sends one message and resolves with every message up to the
// one that ends the turn.
async function connect({ key = MASTER, headers = {}, options = {}, url = gw.url } = {}) {
  const ws = new WebSocket(url.replace(/^http/, 'ws') + '/v1/responses', { headers: { authorization: `Bearer ${key}`, ...headers }, ...options });
  const queue = [];
  let waiter = null;
  ws.on('message', (data, binary) => {
    queue.push(JSON.parse(data.toString()));
    waiter?.();
  });
  const closed = new Promise((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
    ws.once('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => { const e = new Error(`status ${res.statusCode}`); e.status = res.statusCode; e.body = body; reject(e); });
    });
  });
  const next = async () => {
    const ok = await waitFor(() => queue.length > 0, 15000);
    assert.ok(ok, 'no message within 15 s');
    return queue.shift();
  };
  return {
    ws, closed,
    async turn(msg) {
      ws.send(typeof msg === 'string' || Buffer.isBuffer(msg) ? msg : JSON.stringify(msg));
      const got = [];
      for (;;) {
        const m = await next();
        got.push(m);
        if (TERMINAL.has(m.type)) return { events: got, last: m };
      }
    },
    close() { ws.close(); return closed; },
  };
}

const text = (events) => events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');

async function chainedConversation(model, upstreamPath) {
  const s = await connect();
  const warm = await s.turn({ type: 'response.create', model, generate: false, store: false,
    input: [{ type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Answer briefly.' }] }] });
  assert.deepEqual(warm.events.map((e) => e.type), ['response.created', 'response.completed']);
  const warmId = warm.last.response.id;
  assert.match(warmId, /^resp_/);

  const a = await s.turn({ type: 'response.create', model, store: false, previous_response_id: warmId, input: 'Say hi' });
  assert.equal(a.last.type, 'response.completed', JSON.stringify(a.last));
  assert.equal(a.events[0].type, 'response.created');
  assert.ok(a.events.some((e) => e.type === 'response.output_text.delta'));
  assert.match(text(a.events), /Hello/);
  // The same JSON as the SSE events: sequence numbers from 0, in order.
  assert.deepEqual(a.events.map((e) => e.sequence_number), a.events.map((_, i) => i));

  const b = await s.turn({ type: 'response.create', model, store: false, previous_response_id: a.last.response.id, input: 'Again, please' });
  assert.equal(b.last.type, 'response.completed');
  const last = (await mock.stats()).last_request;
  assert.equal(last.path, upstreamPath);
  // The upstream got the whole conversation: the warm-up's developer text, both user turns and
  // the first answer, and no previous_response_id.
  const body = JSON.stringify(last.body);
  for (const piece of ['Answer briefly.', 'Say hi', 'Hello from sluice', 'Again, please']) assert.ok(body.includes(piece), `${piece} missing from ${body}`);
  assert.ok(!body.includes('previous_response_id'));
  const { code } = await s.close();
  assert.equal(code, 1000);
  return { a, b };
}

test('WebSocket mode on an openai channel (native): warm-up, then turns chained with previous_response_id', async () => {
  const before = gw.accessLines().length;
  const { a, b } = await chainedConversation('gpt-4o-mini', '/v1/responses');
  await waitFor(() => gw.accessLines().length >= before + 3, 3000);
  const lines = gw.accessLines().slice(before);
  const posts = lines.filter((l) => l.method === 'POST' && l.path === '/v1/responses');
  assert.equal(posts.length, 2, JSON.stringify(lines));
  for (const p of posts) { assert.equal(p.status, 200); assert.equal(p.channel, 'oa'); assert.equal(p.stream, true); }
  assert.notEqual(posts[0].request_id, posts[1].request_id);
  assert.ok(lines.some((l) => l.method === 'GET' && l.path === '/v1/responses' && l.status === 101), JSON.stringify(lines));
  assert.notEqual(a.last.response.id, b.last.response.id);
});

test('WebSocket mode on an anthropic channel (translated): the chain reaches Claude as one conversation', async () => {
  await chainedConversation('claude-sonnet-4-5', '/v1/messages');
  const last = (await mock.stats()).last_request.body;
  assert.deepEqual(last.messages.map((m) => m.role), ['user', 'assistant', 'user']);
});

test('WebSocket mode on a gemini channel (translated)', async () => {
  await chainedConversation('gemini-2.5-flash', '/v1beta/models/gemini-2.5-flash:streamGenerateContent');
});

test('WebSocket mode: bad messages get error messages and the socket keeps serving', async () => {
  const s = await connect();
  const cases = [
    ['not json', 'invalid_json'],
    [JSON.stringify({ model: 'gpt-4o-mini', input: 'x' }), 'missing_required_parameter'],
    [JSON.stringify({ type: 'response.cancel' }), 'unsupported_event_type'],
    [JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', previous_response_id: 'resp_unknown', input: 'x' }), 'previous_response_not_found'],
    [JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', background: true, input: 'x' }), 'unsupported_parameter'],
    [JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 5 }), 'invalid_type'],
    [Buffer.from([1, 2, 3]), 'invalid_message'],
  ];
  for (const [msg, code] of cases) {
    const r = await s.turn(msg);
    assert.equal(r.last.type, 'error', JSON.stringify(r.last));
    assert.equal(r.last.status, 400);
    assert.equal(r.last.error.code, code, JSON.stringify(r.last));
    assert.equal(r.last.error.type, 'invalid_request_error');
  }
  // What the request path refuses arrives the same way, with its status.
  const unknown = await s.turn({ type: 'response.create', model: 'no-such-model', input: 'x' });
  assert.equal(unknown.last.type, 'error');
  assert.equal(unknown.last.status, 404, JSON.stringify(unknown.last));
  assert.equal(unknown.last.error.code, 'model_not_found');
  const ok = await s.turn({ type: 'response.create', model: 'gpt-4o-mini', input: 'Say hi' });
  assert.equal(ok.last.type, 'response.completed');
  await s.close();
});

test('WebSocket mode: a key is checked at the handshake (401 before any socket) and on every turn', async () => {
  await assert.rejects(connect({ key: 'sk-wrong' }), (e) => e.status === 401 && /invalid_api_key/.test(e.body));
  await assert.rejects(connect({ key: '' }), (e) => e.status === 401 && /missing_api_key/.test(e.body));
  // A virtual key limited to one model: the turn for another model is refused on the socket.
  const { secret: key } = await createKey(gw, { name: 'ws-limited', allowed_models: ['gpt-4o-mini'] });
  const s = await connect({ key });
  const ok = await s.turn({ type: 'response.create', model: 'gpt-4o-mini', input: 'Say hi' });
  assert.equal(ok.last.type, 'response.completed');
  const no = await s.turn({ type: 'response.create', model: 'claude-sonnet-4-5', input: 'Say hi' });
  assert.equal(no.last.type, 'error');
  assert.ok(no.last.status === 403 || no.last.status === 404, JSON.stringify(no.last));
  await s.close();
});

test('WebSocket mode: a failing channel fails over like a POST', async () => {
  const s = await connect();
  const r = await s.turn({ type: 'response.create', model: 'claude-haiku-4-5', input: 'Say hi' });
  assert.equal(r.last.type, 'response.completed', JSON.stringify(r.last));
  await s.close();
  await waitFor(() => gw.accessLines().some((l) => l.model === 'claude-haiku-4-5' && l.channel === 'an2'), 3000);
  const line = gw.accessLines().filter((l) => l.model === 'claude-haiku-4-5').pop();
  assert.equal(line.channel, 'an2');
  assert.equal(line.attempts, 2);
});

test('WebSocket mode: a stream that breaks after it began ends the turn with response.failed, and the socket serves the next', async () => {
  // The upgrade's headers travel on every turn: the mock cuts each stream after two chunks.
  const s = await connect({ headers: { 'x-mock-chunks': '6', 'x-mock-reset-after': '2' } });
  for (let i = 0; i < 2; i++) {
    const r = await s.turn({ type: 'response.create', model: 'gpt-4o-mini', input: 'Say hi' });
    assert.ok(r.last.type === 'response.failed' || r.last.type === 'error', JSON.stringify(r.last));
  }
  await s.close();
});

test('WebSocket mode: a message past server.max_body_bytes closes the socket with 1009', async () => {
  const s = await connect();
  s.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'x'.repeat(300 * 1024) }));
  const { code } = await s.closed;
  assert.equal(code, 1009);
});

test('WebSocket mode: a client that stops answering pings is closed after the idle timeout', async () => {
  const quick = await startGateway({ server: { keepalive_timeout: '1s' }, channels: [{ name: 'oa', type: 'openai', url: mock.url, models: ['gpt-4o-mini'] }] });
  try {
    const s = await connect({ url: quick.url, options: { autoPong: false } });
    const r = await s.turn({ type: 'response.create', model: 'gpt-4o-mini', input: 'Say hi' });
    assert.equal(r.last.type, 'response.completed');
    const closed = await Promise.race([s.closed, new Promise((res) => setTimeout(() => res(null), 20000))]);
    assert.ok(closed, 'the silent socket was not closed');
  } finally {
    await quick.stop();
  }
});

test('WebSocket mode: GET /v1/responses without an upgrade is still a 405 in the OpenAI shape', async () => {
  const res = await fetch(`${gw.url}/v1/responses`, { headers: { authorization: `Bearer ${MASTER}` } });
  assert.equal(res.status, 405);
  const body = await res.json();
  assert.equal(body.error.code, 'method_not_allowed');
});
