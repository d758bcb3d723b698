// Bad input gets a clear OpenAI-format error with the right status, and the gateway keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startMock, startGateway, chat, MASTER } from '../lib/harness.mjs';

let mock, gw;
before(async () => {
  mock = await startMock();
  gw = await startGateway({
    channels: [{ name: 'main', url: mock.url, models: ['gpt-4o-mini'] }],
    server: { max_body_bytes: '64KiB', max_header_bytes: '8KiB', header_timeout: '1s' },
  });
});
after(async () => { await gw?.stop(); await mock?.stop(); });

async function expectError(res, status, code) {
  assert.equal(res.status, status);
  assert.match(res.headers.get('content-type'), /application\/json/);
  const body = await res.json();
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 10, 'the message says what to fix');
  if (code) assert.equal(body.error.code, code);
  return body.error;
}

async function stillServing() {
  const res = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.status, 200);
  await res.text();
}

test('no key, wrong key: 401 in OpenAI format', async () => {
  const none = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
  await expectError(none, 401, 'missing_api_key');
  const wrong = await chat(gw, { model: 'gpt-4o-mini', messages: [] }, { key: 'sk-wrong' });
  await expectError(wrong, 401, 'invalid_api_key');
  await stillServing();
});

test('malformed JSON: 400 with the position', async () => {
  const err = await expectError(await chat(gw, '{"model": "gpt-4o-mini", "messages": [}'), 400, 'invalid_json');
  assert.match(err.message, /line 1, column \d+/);
  await expectError(await chat(gw, ''), 400, 'invalid_json');
  await expectError(await chat(gw, '[1,2]'), 400, 'invalid_json');
  await stillServing();
});

test('missing or mistyped model and stream: 400', async () => {
  await expectError(await chat(gw, { messages: [] }), 400, 'missing_model');
  await expectError(await chat(gw, { model: 7, messages: [] }), 400, 'missing_model');
  await expectError(await chat(gw, { model: 'gpt-4o-mini', stream: 'yes', messages: [] }), 400, 'invalid_type');
});

test('unknown model: 404 listing what exists', async () => {
  const err = await expectError(await chat(gw, { model: 'no-such-model', messages: [] }), 404, 'model_not_found');
  assert.match(err.message, /no-such-model/);
  assert.match(err.message, /gpt-4o-mini/);
  const pinned = await expectError(await chat(gw, { model: 'main/other', messages: [] }), 404, 'model_not_found');
  assert.match(pinned.message, /main\/other/);
});

test('body over the limit: 413, and the gateway keeps serving', async () => {
  const big = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] });
  const res = await chat(gw, big);
  await expectError(res, 413);
  await stillServing();
});

test('chunked body over the limit: 413', async () => {
  const chunks = async function* () { for (let i = 0; i < 20; i++) yield new TextEncoder().encode('x'.repeat(8192)); };
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', body: chunks(), duplex: 'half',
    headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
  }).catch((e) => e);
  // The server may close before the client finishes sending: also a refusal. Either way the
  // gateway must still be serving afterwards.
  if (!(res instanceof Error)) assert.equal(res.status, 413);
  await stillServing();
});

test('headers over the limit: 431', async () => {
  const res = await chat(gw, { model: 'gpt-4o-mini', messages: [] }, { headers: { 'x-big': 'y'.repeat(10 * 1024) } });
  await expectError(res, 431);
  await stillServing();
});

test('unknown path 404, wrong method 405, websocket upgrade on /v1/responses 101, without a key 401', async () => {
  await expectError(await fetch(`${gw.url}/v2/nothing`), 404, 'not_found');
  await expectError(await fetch(`${gw.url}/v1/chat/completions`, { headers: { authorization: `Bearer ${MASTER}` } }), 405);
  const ws = await new Promise((resolve, reject) => {
    const s = net.connect(gw.port, '127.0.0.1', () => {
      s.write(`GET /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${MASTER}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    });
    let buf = '';
    s.on('data', (d) => { buf += d; if (buf.includes('\r\n\r\n')) { s.destroy(); resolve(buf); } });
    s.on('error', reject);
  });
  assert.match(ws, /^HTTP\/1\.1 101/);
  // RFC 6455's own example key and the accept value it gives.
  assert.match(ws, /sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/i);
  const refused = await new Promise((resolve, reject) => {
    const s = net.connect(gw.port, '127.0.0.1', () => {
      s.write('GET /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-wrong\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
    });
    let buf = '';
    s.on('data', (d) => { buf += d; if (buf.includes('\r\n\r\n')) { s.destroy(); resolve(buf); } });
    s.on('error', reject);
  });
  assert.match(refused, /^HTTP\/1\.1 401/);
  await stillServing();
});

test('garbage instead of HTTP: 400 and the connection closes', async () => {
  const reply = await new Promise((resolve, reject) => {
    const s = net.connect(gw.port, '127.0.0.1', () => s.write('HELLO THERE\r\n\r\n'));
    let buf = '';
    s.on('data', (d) => { buf += d; });
    s.on('end', () => resolve(buf));
    s.on('error', reject);
  });
  assert.match(reply, /^HTTP\/1\.1 400/);
  await stillServing();
});

test('a slow client that never finishes its header is cut off', async () => {
  const t0 = Date.now();
  const closed = await new Promise((resolve) => {
    const s = net.connect(gw.port, '127.0.0.1', () => s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n'));
    let buf = '';
    const drip = setInterval(() => { try { s.write('X-Drip: 1\r\n'); } catch {} }, 200);
    s.on('data', (d) => { buf += d; });
    s.on('close', () => { clearInterval(drip); resolve(buf); });
    s.on('error', () => {});
    setTimeout(() => { clearInterval(drip); s.destroy(); resolve('still open'); }, 8000);
  });
  assert.notEqual(closed, 'still open', 'slow header was not cut off');
  // Beast closes a timed-out socket, so the client sees the connection end (no response).
  assert.ok(closed === '' || /^HTTP\/1\.1 408/.test(closed), closed);
  assert.ok(Date.now() - t0 < 8000);
  await stillServing();
});

test('a model whose preferred channel speaks another format gets 501, not a quiet fallback', async () => {
  const m = await startMock();
  const g = await startGateway({ channels: [
    { name: 'gem', type: 'gemini', base_url: 'https://generativelanguage.googleapis.com', keys: ['AIza-xxxxxxxxxxxx'], models: ['gemini-*'], priority: 1 },
    { name: 'fallback', url: m.url, models: ['*'], priority: 9 },
  ] });
  try {
    // Chat is translated to Gemini; embeddings are not.
    const emb = await fetch(`${g.url}/v1/embeddings`, { method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model: 'gemini-2.5-flash', input: 'x' }) });
    const err = await expectError(emb, 501, 'format_not_supported');
    assert.match(err.message, /channel "gem" of type gemini/);
    assert.equal((await m.stats()).requests, 0);
    const ok = await chat(g, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(ok.status, 200);
    await ok.text();
  } finally {
    await g.stop();
    await m.stop();
  }
});
