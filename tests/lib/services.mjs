// Services a test takes away and brings back: a redis-server of its own, and a TCP gate in front
// of a server it must not stop (the PostgreSQL of tests/scripts/with-postgres.sh), so the gateway
// sees the server go away and come back on the same address.
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { waitFor } from './harness.mjs';

// A loopback port nothing listens on (bound, read, released).
export async function freePort() {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  s.close();
  return port;
}

// redis-server on `port` (a free one by default), no persistence. Stop it with harness stop(proc).
export async function startRedis(port) {
  port ??= await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  await waitFor(() => /Ready to accept connections/.test(out), 10000, 50);
  assert.match(out, /Ready to accept connections/, `redis-server did not start:\n${out}`);
  return { proc, port, url: `redis://127.0.0.1:${port}` };
}

// Forwards connections on `port` to target; close() cuts every open one and stops listening,
// open() listens again on the same port.
export async function startTcpGate(targetHost, targetPort) {
  const port = await freePort();
  const sockets = new Set();
  let server = null;
  const track = (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); };
  const gate = {
    port,
    async open() {
      server = net.createServer((client) => {
        const up = net.connect(targetPort, targetHost);
        track(client); track(up);
        client.pipe(up); up.pipe(client);
        client.on('error', () => up.destroy());
        up.on('error', () => client.destroy());
        client.on('close', () => up.destroy());
        up.on('close', () => client.destroy());
      });
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    async close() {
      const closed = new Promise((r) => server.close(r));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
  await gate.open();
  return gate;
}

