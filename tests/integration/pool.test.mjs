// The upstream connection pool at scale: a warm pool holds what the concurrency needs, so a second
// burst of as many concurrent streams opens no new connection to the provider (the mock counts the
// connections it accepted). Idle connections are read back from the mock's count, never timed.
// And where client connections are served with two workers (sluice_connections_open).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { startMock, startGateway, MASTER, metrics, metricValue, waitFor } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started) await p.stop(); });

// As many kept-alive connections as the burst needs, from this test alone.
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
after(() => agent.destroy());

// One request through `via` (the shared agent unless given): [status, body].
function post(url, headers, body, via = agent) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: via, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve([res.statusCode, text]));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function burst(gw, n, ttfbMs, via = agent) {
  const body = JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const headers = {
    'content-type': 'application/json', authorization: `Bearer ${MASTER}`,
    // every stream still open when the last one starts: the burst needs n upstream connections
    'x-mock-ttfb-ms': String(ttfbMs), 'x-mock-chunks': '3',
  };
  const all = await Promise.all(Array.from({ length: n }, () => post(`${gw.url}/v1/chat/completions`, headers, body, via)));
  for (const [status, text] of all) {
    assert.equal(status, 200, text);
    assert.ok(text.includes('data: [DONE]'), 'the whole stream arrived');
  }
}

test('a second burst as wide as the first reuses the pool: no new upstream connection', async () => {
  const m = await startMock(); started.push(m);
  // one worker: one pool sees the whole burst (more than the 256 idle connections the pool once kept)
  const gw = await startGateway({ channels: [{ name: 'a', url: m.url, keys: ['k'], models: ['*'] }], server: { workers: 1 } });
  started.push(gw);
  const before = (await m.stats()).connections_accepted;
  // a long first byte, so the streams overlap even on a slow (sanitized) build
  await burst(gw, 400, 1500);
  const warm = (await m.stats()).connections_accepted;
  const opened = warm - before;
  assert.ok(opened > 256, `the first burst ran its streams at once (${opened} upstream connections)`);
  // As many streams as the first burst needed connections: the pool holds them all, and each
  // stream gave its connection back before its client saw the end, so none is opened anew.
  await burst(gw, opened, 400);
  const after2 = (await m.stats()).connections_accepted;
  assert.equal(after2 - warm, 0, `the warm pool served the second burst (${opened} streams)`);
});

// Opens n client connections and leaves them open without a request (placement happens at
// accept, and a connection that sends nothing costs the gateway no CPU to make a worker look busy);
// resolves once the gateway counts them all.
async function openIdle(gw, n, sockets) {
  const { port } = new URL(gw.url);
  await Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
    const s = net.connect(Number(port), '127.0.0.1', resolve);
    s.on('error', reject);
    sockets.push(s);
  })));
  const counted = await waitFor(async () => ((await openOn(gw, 0)) + (await openOn(gw, 1)) >= n ? true : null));
  assert.ok(counted, `the gateway counts the ${n} connections`);
}

const openOn = async (gw, worker) => metricValue(await metrics(gw), 'sluice_connections_open', { worker });

// A two-worker gateway (no provider reached) with n idle client connections open on it.
async function idleGateway(server, n) {
  const gw = await startGateway({ channels: [{ name: 'a', url: 'http://127.0.0.1:9', models: ['*'] }], server: { workers: 2, ...server } });
  started.push(gw);
  const idle = [];
  after(() => { for (const s of idle) s.destroy(); });
  await openIdle(gw, n, idle);
  return { gw, idle };
}

test('two workers by default: connections are spread, the fewest open first', async () => {
  const { gw } = await idleGateway({}, 40);
  const [w0, w1] = [await openOn(gw, 0), await openOn(gw, 1)];
  assert.ok(Math.abs(w0 - w1) <= 2, `an even split (${w0} and ${w1})`);
});

test('two workers, pack_connections, a light load: every connection is served by the first worker', async () => {
  // One thread woken for the events of every stream, not two for half each: at 50 and 200
  // streams a quarter less CPU a request (bench/BENCHMARKS.md).
  const { gw } = await idleGateway({ pack_connections: 256 }, 40);
  assert.ok(await openOn(gw, 0) >= 40, 'the first worker serves them');
  assert.equal(await openOn(gw, 1), 0, 'the second worker serves none');
});

test('two workers, pack_connections: 256: past 256 connections on the first, new ones go to the other', async () => {
  const { gw, idle } = await idleGateway({ pack_connections: 256 }, 400);
  const [w0, w1] = [await openOn(gw, 0), await openOn(gw, 1)];
  assert.ok(w0 + w1 >= 400, `every connection counted (${w0} + ${w1})`);
  // Packed up to 256 (fewer if the first worker was busy), then spread evenly.
  assert.ok(w0 <= 256 && w1 >= 144, `the first worker stops taking them at 256 (${w0} and ${w1})`);
  for (const s of idle) s.destroy();
  assert.ok(await waitFor(async () => (await openOn(gw, 0)) + (await openOn(gw, 1)) <= 2),
    'closed connections are no longer counted');
});

test('two workers: a burst on new client connections reuses both pools, none opened anew', async () => {
  const m = await startMock(); started.push(m);
  // Each worker has its own pool. The kernel's SO_REUSEPORT hash would split each burst's new
  // client connections differently (104/96, then 97/103: the second worker opens 7 more); the
  // server hands each connection to the worker with fewer open ones, so both bursts split 100/100.
  const gw = await startGateway({ channels: [{ name: 'a', url: m.url, keys: ['k'], models: ['*'] }], server: { workers: 2 } });
  started.push(gw);
  const first = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const second = new http.Agent({ keepAlive: true, maxSockets: Infinity });  // 200 new connections
  after(() => { first.destroy(); second.destroy(); });
  const before = (await m.stats()).connections_accepted;
  await burst(gw, 200, 1500, first);
  const warm = (await m.stats()).connections_accepted;
  assert.equal(warm - before, 200, 'the first burst ran its 200 streams at once');
  // The first burst's 200 client connections stay open (idle, 100 on each worker): the second
  // burst's 200 new ones are split evenly beside them, and each worker's 100 streams find its
  // 100 idle upstream connections.
  await burst(gw, 200, 400, second);
  const after2 = (await m.stats()).connections_accepted;
  assert.equal(after2 - warm, 0, 'the warm pools served the second burst on new client connections');
});

test('two workers, pack_connections: 256: a second burst on the same client connections reuses both pools, none opened anew', async () => {
  const m = await startMock(); started.push(m);
  const gw = await startGateway({ channels: [{ name: 'a', url: m.url, keys: ['k'], models: ['*'] }], server: { workers: 2, pack_connections: 256 } });
  started.push(gw);
  const clients = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: Infinity });
  after(() => clients.destroy());
  // 400 client connections: 256 on the first worker, the rest on the second, each worker's pool
  // as large as its streams.
  const before = (await m.stats()).connections_accepted;
  await burst(gw, 400, 1500, clients);
  const warm = (await m.stats()).connections_accepted;
  assert.equal(warm - before, 400, 'the first burst ran its 400 streams at once');
  assert.ok(await openOn(gw, 1) > 0, 'both workers serve some');
  // The same connections again: each stream on the worker it was on, which has its connection.
  await burst(gw, 400, 400, clients);
  const after2 = (await m.stats()).connections_accepted;
  assert.equal(after2 - warm, 0, 'the warm pools served the second burst');
});

test('the mock reports the connections it accepted', async () => {
  const m = await startMock(); started.push(m);
  const s0 = (await m.stats()).connections_accepted;
  const get = (a) => new Promise((resolve, reject) => {
    http.get(`${m.url}/health`, { agent: a }, (res) => { res.resume(); res.on('end', resolve); }).on('error', reject);
  });
  const a = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const b = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (const x of [a, b, a, b]) await get(x);
  a.destroy(); b.destroy();
  const s1 = (await m.stats()).connections_accepted;
  // m.stats() itself goes through fetch's own kept-alive connection: one more at most
  assert.ok(s1 - s0 === 2 || s1 - s0 === 3, `two kept-alive clients, two connections (saw ${s1 - s0})`);
});
