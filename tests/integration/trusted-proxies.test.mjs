// server.trusted_proxies: a gateway behind a proxy on 127.0.0.1 logs the client its
// X-Forwarded-For / Forwarded header names, in the request log (what the console's log view
// shows) and in the access log; a gateway that trusts no proxy logs the TCP peer and ignores a
// spoofed header. A bad entry stops `sluice check` with its line.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMock, startGateway, chat, logOf, waitForAccessLine, tempDir, BIN } from '../lib/harness.mjs';

let mock, behind, direct;
const hi = { model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] };

before(async () => {
  mock = await startMock([]);
  const channels = [{ name: 'm', url: mock.url, models: ['mock-*'] }];
  behind = await startGateway({ channels, server: { trusted_proxies: ['127.0.0.1/32', '10.0.0.0/8'] } });
  direct = await startGateway({ channels });
});
after(async () => { await behind?.stop(); await direct?.stop(); await mock?.stop(); });

// One request with these headers: its request-log row and its access-log line.
async function seenAs(gw, headers) {
  const res = await chat(gw, hi, { headers });
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  const id = res.headers.get('x-request-id');
  const row = await logOf(gw, id);
  assert.ok(row, `request ${id} reached the request log`);
  const line = await waitForAccessLine(gw, (l) => l.request_id === id);
  assert.ok(line, `request ${id} reached the access log`);
  assert.equal(line.remote, row.client_addr, 'the access log and the request log agree');
  return row.client_addr;
}

test('behind a trusted proxy, the X-Forwarded-For client is logged', async () => {
  assert.equal(await seenAs(behind, { 'x-forwarded-for': '198.51.100.7' }), '198.51.100.7');
  // The client put its own guess first; the proxies appended what they saw.
  assert.equal(await seenAs(behind, { 'x-forwarded-for': '1.1.1.1, 203.0.113.9, 10.0.0.2' }), '203.0.113.9');
});

test('behind a trusted proxy, Forwarded is preferred and IPv6 nodes are read', async () => {
  assert.equal(await seenAs(behind, {
    forwarded: 'for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.2', 'x-forwarded-for': '192.0.2.99',
  }), '2001:db8:cafe::17');
});

test('garbage or an obfuscated hop ends the walk at the last trusted reporter', async () => {
  assert.equal(await seenAs(behind, { 'x-forwarded-for': '1.1.1.1, not-an-ip' }), '127.0.0.1');
  assert.equal(await seenAs(behind, { forwarded: 'for=198.51.100.1, for=_hidden, for=10.0.0.3' }), '10.0.0.3');
});

test('without trusted_proxies, a spoofed X-Forwarded-For or Forwarded is ignored', async () => {
  assert.equal(await seenAs(direct, { 'x-forwarded-for': '198.51.100.7' }), '127.0.0.1');
  assert.equal(await seenAs(direct, { forwarded: 'for=198.51.100.7' }), '127.0.0.1');
  assert.equal(await seenAs(direct, {}), '127.0.0.1');
});

test('sluice check names a bad trusted_proxies entry and its line', () => {
  const file = join(tempDir(), 'bad.yaml');
  writeFileSync(file, 'server:\n  trusted_proxies:\n    - 10.0.0.0/8\n    - 10.0.0.0/40\nauth:\n  master_key: k\n');
  const r = spawnSync(BIN, ['check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr + r.stdout, /bad\.yaml:4:7: server\.trusted_proxies\[1\]: "10\.0\.0\.0\/40" is not an IP address or CIDR/);
});
