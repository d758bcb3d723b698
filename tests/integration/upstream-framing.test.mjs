// How the gateway reads an upstream body, whatever the provider's framing: a body delimited by
// the end of the connection, a chunked body delivered a byte at a time (every chunk-size line and
// terminator split across reads), one cut short, and a body in one piece with many events. The
// upstream is a raw TCP server, so the bytes and their timing are the test's.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startGateway, chat, sleep } from '../lib/harness.mjs';

// Gateways first, then the upstreams (whose kept-alive sockets are destroyed: close() alone would
// wait for the gateway's pooled connections).
const gateways = [];
const upstreams = [];
after(async () => {
  for (const g of gateways) await g.stop();
  for (const { server, sockets } of upstreams) {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  }
});

// A raw upstream: reads one request head (and its body, by Content-Length) and hands the socket
// to `answer`.
async function rawUpstream(answer) {
  const sockets = new Set();
  const server = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /content-length:\s*(\d+)/i.exec(buf.subarray(0, end).toString('latin1'));
      if (buf.length < end + 4 + (m ? Number(m[1]) : 0)) return;
      sock.removeAllListeners('data');
      answer(sock).catch(() => sock.destroy());
    });
    sock.on('error', () => {});
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  upstreams.push({ server, sockets });
  return `http://127.0.0.1:${server.address().port}`;
}

async function gatewayFor(url) {
  const gw = await startGateway({ channels: [{ name: 'raw', url, keys: ['k'], models: ['*'] }], routing: { max_retries: 0 } });
  gateways.push(gw);
  return gw;
}

const event = (i) => `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"p${i}"},"finish_reason":null}]}\n\n`;
const ask = { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] };

test('an SSE body delimited by the end of the connection arrives whole and ends cleanly', async () => {
  const url = await rawUpstream(async (sock) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n');
    for (let i = 0; i < 3; i++) { sock.write(event(i)); await sleep(20); }
    sock.end('data: [DONE]\n\n');
  });
  const gw = await gatewayFor(url);
  const res = await chat(gw, ask);
  assert.equal(res.status, 200);
  const text = await res.text();
  for (let i = 0; i < 3; i++) assert.ok(text.includes(`"p${i}"`), text);
  assert.ok(text.trimEnd().endsWith('data: [DONE]'), text);
});

test('a chunked SSE body sent one byte at a time is decoded exactly', async () => {
  const body = [0, 1, 2, 3].map(event).join('') + 'data: [DONE]\n\n';
  // two events per chunk, with a chunk extension-free size line of a different width each time
  const pieces = [];
  for (let off = 0; off < body.length; off += 97) pieces.push(body.slice(off, off + 97));
  let raw = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n';
  for (const p of pieces) raw += `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`;
  raw += '0\r\n\r\n';
  const url = await rawUpstream(async (sock) => {
    sock.setNoDelay(true);
    for (const ch of raw) { sock.write(ch); await new Promise((r) => setImmediate(r)); }
  });
  const gw = await gatewayFor(url);
  const res = await chat(gw, ask);
  assert.equal(res.status, 200);
  const text = await res.text();
  for (let i = 0; i < 4; i++) assert.ok(text.includes(`"p${i}"`), text);
  assert.ok(text.trimEnd().endsWith('data: [DONE]'), text);
});

test('a chunked body cut short mid-chunk ends the stream with an error event, not a clean end', async () => {
  const url = await rawUpstream(async (sock) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n');
    const e = event(0);
    sock.write(`${Buffer.byteLength(e).toString(16)}\r\n${e}\r\n`);
    await sleep(20);
    sock.end('400\r\ndata: {"cut');  // a 1 KiB chunk announced, 11 bytes sent, then the end
  });
  const gw = await gatewayFor(url);
  const res = await chat(gw, ask);
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.ok(text.includes('"p0"'), text);
  assert.ok(!text.includes('data: {"cut'), 'a partial event is not passed on');
  assert.ok(/upstream_stream_broken/.test(text), `an error event ends it: ${text}`);
  assert.ok(!text.trimEnd().endsWith('data: [DONE]'), 'not presented as a complete answer');
});

test('a large JSON answer delimited by the end of the connection is relayed whole', async () => {
  const content = 'x'.repeat(200_000);
  const json = JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
  const url = await rawUpstream(async (sock) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n');
    for (let off = 0; off < json.length; off += 7000) { sock.write(json.slice(off, off + 7000)); await sleep(1); }
    sock.end();
  });
  const gw = await gatewayFor(url);
  const res = await chat(gw, { ...ask, stream: false });
  assert.equal(res.status, 200);
  const got = await res.json();
  assert.equal(got.choices[0].message.content.length, content.length);
});
