// Timeouts and broken streams: each deadline is enforced; a stream that breaks after its first
// byte ends with a well-formed error event, never a hang; a client that leaves frees the upstream.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { MASTER, startMock, startGateway, chat, readSse, sleep, waitForAccessLine } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }
const msg = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

test('first_byte timeout: a silent upstream is abandoned and the next channel answers', async () => {
  const slow = await mockP(['--ttfb-ms', '3000']);
  const fast = await mockP([]);
  const gw = await gwP({ channels: [{ name: 'slow', url: slow.url, priority: 1 }, { name: 'fast', url: fast.url, priority: 2 }],
    routing: { timeouts: { first_byte: '300ms' } } });
  for (const stream of [false, true]) {
    const res = await chat(gw, { ...msg, stream });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'fast');
    assert.equal(res.headers.get('x-sluice-attempts'), '2');
    await res.text();
  }
});

test('first_byte timeout on every channel: 504', async () => {
  const slow = await mockP(['--ttfb-ms', '3000']);
  const gw = await gwP({ channels: [{ name: 'slow', url: slow.url }], routing: { max_retries: 1, timeouts: { first_byte: '200ms' } } });
  const res = await chat(gw, msg);
  assert.equal(res.status, 504);
  const err = (await res.json()).error;
  assert.equal(err.code, 'upstream_timeout');
  assert.match(err.message, /first_byte/);
});

test('connect timeout: a host that never accepts is abandoned', async () => {
  // A listening socket whose accept queue is full: SYNs go unanswered, connect() hangs.
  const py = spawn('python3', ['-c', `
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)
fill = []
for _ in range(8):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(s.getsockname())
    except BlockingIOError: pass
    fill.append(c)
print(s.getsockname()[1], flush=True)
time.sleep(60)
`], { stdio: ['ignore', 'pipe', 'inherit'] });
  started.push({ stop: async () => py.kill('SIGKILL') });
  const port = await new Promise((r) => py.stdout.once('data', (d) => r(Number(String(d).trim()))));
  const fast = await mockP([]);
  const gw = await gwP({ channels: [
    { name: 'blackhole', base_url: `http://127.0.0.1:${port}/v1`, priority: 1 },
    { name: 'fast', url: fast.url, priority: 2 },
  ], routing: { timeouts: { connect: '300ms' } } });
  const res = await chat(gw, msg);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'fast');
  await res.text();
  // that it was the connect deadline that gave up on the blackhole: the next request says so
  const only = await gwP({ channels: [{ name: 'blackhole', base_url: `http://127.0.0.1:${port}/v1` }],
    routing: { max_retries: 0, timeouts: { connect: '300ms' } } });
  const r2 = await chat(only, msg);
  assert.equal(r2.status, 504);
  assert.match((await r2.json()).error.message, /connect timed out/);
});

test('idle timeout mid-stream: the stream ends with an error event and the connection closes', async () => {
  const m = await mockP(['--chunks', '5', '--chunk-interval-ms', '2000']);
  const gw = await gwP({ channels: [{ name: 'm', url: m.url }], routing: { timeouts: { idle: '300ms', first_byte: '5s' } } });
  const res = await chat(gw, { ...msg, stream: true });
  assert.equal(res.status, 200);
  const { events } = await readSse(res);
  const last = events.at(-1);
  assert.notEqual(last, '[DONE]');
  assert.equal(last.error.code, 'upstream_timeout');
  assert.match(last.error.message, /idle/);
});

test('after a stream ends with an error event, the same client connection serves the next request', async () => {
  const m = await mockP(['--chunks', '5', '--chunk-interval-ms', '2000']);
  const gw = await gwP({ channels: [{ name: 'm', url: m.url }], routing: { timeouts: { idle: '300ms', first_byte: '5s' } } });
  const port = new URL(gw.url).port;
  const sock = connect(Number(port), '127.0.0.1');
  let got = '';
  sock.on('data', (d) => { got += d.toString('latin1'); });
  const closed = new Promise((r) => sock.on('close', r));
  const body = JSON.stringify({ ...msg, stream: true });
  sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${MASTER}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  const until = async (pred, what) => {
    for (let i = 0; i < 200 && !pred(); i++) await sleep(25);
    assert.ok(pred(), what);
  };
  await until(() => got.includes('upstream_timeout') && got.endsWith('0\r\n\r\n'), 'the stream ends with its error event and the last chunk');
  assert.doesNotMatch(got.slice(0, got.indexOf('\r\n\r\n')), /\r\nconnection: close/i);
  const first = got.length;
  sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await until(() => /HTTP\/1\.1 200/.test(got.slice(first)), 'the next request on the connection is answered');
  sock.end();
  await closed;
});

test('the idle deadline restarts with every chunk: a slow, steady stream outlives it many times over', async () => {
  // 12 chunks 200 ms apart under a 500 ms idle deadline: the deadline is passed five times over
  // in all, never between two chunks.
  const m = await mockP(['--chunks', '12', '--chunk-interval-ms', '200']);
  const gw = await gwP({ channels: [{ name: 'm', url: m.url }], routing: { timeouts: { idle: '500ms', first_byte: '5s' } } });
  const res = await chat(gw, { ...msg, stream: true });
  assert.equal(res.status, 200);
  const { events } = await readSse(res);
  assert.equal(events.at(-1), '[DONE]', JSON.stringify(events.at(-1)));
  assert.ok(!events.some((e) => e?.error), 'no error event');
});

test('total timeout cuts a long stream with an error event', async () => {
  const m = await mockP(['--chunks', '50', '--chunk-interval-ms', '50']);
  const gw = await gwP({ channels: [{ name: 'm', url: m.url }], routing: { timeouts: { total: '600ms' } } });
  const res = await chat(gw, { ...msg, stream: true });
  const { events } = await readSse(res);
  assert.equal(events.at(-1).error.code, 'upstream_timeout');
  assert.match(events.at(-1).error.message, /total/);
  // 50 chunks 50 ms apart take 2.5 s: the 600 ms budget cut the answer short, after its start
  assert.ok(events.length > 3, 'chunks before the cut were delivered');
  assert.ok(events.length < 50, `the answer was cut short (${events.length} events)`);
});

test('upstream reset mid-stream: chunks so far, then an error event, never a hang', async () => {
  const m = await mockP(['--chunks', '10']);
  const gw = await gwP({ channels: [{ name: 'm', url: m.url }] });
  const res = await chat(gw, { ...msg, stream: true }, { headers: { 'x-mock-reset-after': '3', 'x-mock-chunk-interval-ms': '20' } });
  assert.equal(res.status, 200);
  const { events } = await readSse(res);
  const last = events.at(-1);
  assert.equal(last.error.code, 'upstream_stream_broken');
  assert.ok(events.filter((e) => e.object === 'chat.completion.chunk').length >= 3);
  // and the gateway keeps serving
  const ok = await chat(gw, { ...msg, stream: true });
  assert.equal((await readSse(ok)).events.at(-1), '[DONE]');
});

test('upstream reset before any byte is invisible: the next channel answers', async () => {
  const broken = await mockP(['--reset-after', '0']);
  const fine = await mockP([]);
  const gw = await gwP({ channels: [{ name: 'broken', url: broken.url, priority: 1 }, { name: 'fine', url: fine.url, priority: 2 }] });
  const res = await chat(gw, { ...msg, stream: true });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'fine');
  assert.equal((await readSse(res)).events.at(-1), '[DONE]');
});

test('a client that disconnects mid-stream makes the gateway close the upstream connection', async () => {
  const m = await mockP(['--chunks', '200', '--chunk-interval-ms', '20']);
  const gw = await gwP({ channels: [{ name: 'm', url: m.url }] });
  const ac = new AbortController();
  const res = await chat(gw, { ...msg, stream: true }, { signal: ac.signal });
  const reader = res.body.getReader();
  await reader.read();
  ac.abort();
  // The mock notices its client (the gateway) went away long before the 4 s the stream would take.
  let s;
  for (let i = 0; i < 40; i++) {
    await sleep(50);
    s = await m.stats();
    if (s.streams_aborted >= 1) break;
  }
  assert.equal(s.streams_aborted, 1, JSON.stringify(s));
  assert.equal(s.streams_completed ?? 0, 0);
  const line = await waitForAccessLine(gw, (l) => l.status === 499);
  assert.ok(line, 'logged as 499 client closed');
});

test('a slow reader applies back-pressure: the gateway does not buffer the whole answer', async () => {
  // 20000 chunks of 2 KB (40 MB, more than every socket buffer on the way holds); the client reads nothing for a while. The gateway's memory must not
  // hold the whole stream: we check the mock could not finish writing while the client stalled.
  const m = await mockP(['--chunks', '20000']);
  const gw = await gwP({ channels: [{ name: 'm', url: m.url }] });
  const res = await chat(gw, { ...msg, stream: true }, { headers: { 'x-mock-chunk-bytes': '2048' } });
  const reader = res.body.getReader();
  const first = await reader.read();
  await sleep(800);
  const mid = await m.stats();
  assert.equal(mid.streams_completed ?? 0, 0, 'upstream is held back by the slow client');
  let n = first.value.length;
  const dec = new TextDecoder();
  let text = dec.decode(first.value, { stream: true });
  for (;;) { const { done, value } = await reader.read(); if (done) break; n += value.length; text += dec.decode(value, { stream: true }); }
  assert.ok(n > 20000 * 2048);
  const end = await m.stats();
  assert.equal(end.streams_completed, 1);
  // What waited for the slow client went out whole and in order: every event is one JSON chunk.
  const events = text.split('\n\n').filter((e) => e.length > 0);
  assert.equal(events.at(-1), 'data: [DONE]');
  let chunks = 0;
  for (const e of events.slice(0, -1)) {
    assert.ok(e.startsWith('data: '), `an event cut or joined: ${e.slice(0, 80)}`);
    JSON.parse(e.slice(6));
    chunks++;
  }
  assert.equal(chunks, 20002, 'the role chunk, 20000 pieces of content and the finish chunk');
});
