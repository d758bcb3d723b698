// admin.listen: the admin API and the console move to their own listener and the public one
// answers 404 for them; /healthz and /metrics answer on both. Without it nothing moves.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, gatewayYaml, waitFor, MASTER } from '../lib/harness.mjs';

let mock, split, plain;

const auth = { authorization: `Bearer ${MASTER}` };
const get = (base, path, headers = auth) => fetch(`${base}${path}`, { headers });

before(async () => {
  mock = await startMock([]);
  const channels = [{ name: 'mock', url: mock.url }];
  split = await startGateway(gatewayYaml({ channels, extra: 'admin:\n  listen: "127.0.0.1:0"\n' }));
  plain = await startGateway({ channels });
});
after(async () => {
  await split?.stop();
  await plain?.stop();
  await mock?.stop();
});

test('the admin address is printed at start', () => {
  assert.ok(split.adminUrl, split.proc.output);
  assert.notEqual(split.adminUrl, split.url);
  assert.match(split.proc.output, /sluice admin API and console on http:\/\/127\.0\.0\.1:\d+/);
  assert.equal(plain.adminUrl, undefined);
});

test('with admin.listen, the public listener answers 404 for the admin API and the console', async () => {
  for (const path of ['/admin/api/keys', '/admin/api/config', '/', '/index.html']) {
    const res = await get(split.url, path);
    assert.equal(res.status, 404, path);
    const body = await res.json();
    assert.equal(body.error.code, 'not_found', path);
    assert.match(body.error.message, /no route/, path);
  }
  const post = await fetch(`${split.url}/admin/api/keys`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x' }),
  });
  assert.equal(post.status, 404);
  await post.arrayBuffer();
});

test('with admin.listen, the admin listener serves the admin API (master key only) and the console', async () => {
  const keys = await get(split.adminUrl, '/admin/api/keys');
  assert.equal(keys.status, 200);
  await keys.json();
  const noKey = await get(split.adminUrl, '/admin/api/keys', {});
  assert.equal(noKey.status, 401);
  await noKey.arrayBuffer();
  const root = await get(split.adminUrl, '/', {});
  assert.equal(root.status, 200);
  assert.match(root.headers.get('content-type'), /text\/html/);
  await root.text();
});

test('with admin.listen, /healthz and /metrics answer on both listeners; the proxy API only on the public one', async () => {
  for (const base of [split.url, split.adminUrl]) {
    const h = await get(base, '/healthz', {});
    assert.equal(h.status, 200, base);
    assert.deepEqual(await h.json(), { status: 'ok' });
    const m = await get(base, '/metrics', {});
    assert.equal(m.status, 200, base);
    assert.match(await m.text(), /sluice_/);
  }
  const body = JSON.stringify({ model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] });
  const headers = { ...auth, 'content-type': 'application/json' };
  const pub = await fetch(`${split.url}/v1/chat/completions`, { method: 'POST', headers, body });
  assert.equal(pub.status, 200);
  await pub.json();
  const adm = await fetch(`${split.adminUrl}/v1/chat/completions`, { method: 'POST', headers, body });
  assert.equal(adm.status, 404);
  assert.match((await adm.json()).error.message, /admin listener/);
});

test('without admin.listen, the admin API and the console stay on the one listener', async () => {
  const keys = await get(plain.url, '/admin/api/keys');
  assert.equal(keys.status, 200);
  await keys.json();
  const root = await get(plain.url, '/', {});
  assert.equal(root.status, 200);
  await root.text();
});

test('a change of admin.listen on reload warns that it takes a restart and changes nothing', async () => {
  const channels = [{ name: 'mock', url: mock.url }];
  split.writeConfig(gatewayYaml({ channels, extra: 'admin:\n  listen: "127.0.0.1:1"\n' }));
  await waitFor(() => /admin\.listen takes effect only after a restart/.test(split.proc.output), 15000);
  assert.match(split.proc.output, /admin\.listen takes effect only after a restart/);
  const keys = await get(split.adminUrl, '/admin/api/keys');
  assert.equal(keys.status, 200);
  await keys.json();
  const pub = await get(split.url, '/admin/api/keys');
  assert.equal(pub.status, 404);
  await pub.arrayBuffer();
});
