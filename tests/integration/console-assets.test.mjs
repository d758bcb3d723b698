// The web console served by the gateway itself: index.html at /, hashed assets with their
// content types, ETag revalidation (304), caching and security headers, and no API path
// shadowed. The binary must embed a console (make build builds console/dist first); the page a
// binary without one shows at / is checked by the unit tests (tests/unit/console). To test the
// embedded case without the real front-end, build with a small fake one and name it here too:
//   cmake -S . -B build -DSLUICE_CONSOLE_DIST=/tmp/fake-dist && cmake --build build
//   SLUICE_CONSOLE_DIST=/tmp/fake-dist node --test tests/integration/console-assets.test.mjs
// (every file of that directory is then compared byte for byte with what the gateway serves).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startMock, startGateway, MASTER } from '../lib/harness.mjs';

let mock, gw, root, built;
const get = (path, headers = {}, method = 'GET') => fetch(`${gw.url}${path}`, { method, headers });

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json',
  '.woff2': 'font/woff2', '.txt': 'text/plain; charset=utf-8',
};
const typeOf = (path) => TYPES[path.slice(path.lastIndexOf('.'))];

function assertSecurityHeaders(res, what) {
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what);
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer', what);
  assert.equal(res.headers.get('x-frame-options'), 'DENY', what);
  const csp = res.headers.get('content-security-policy') ?? '';
  for (const d of ["script-src 'self'", "style-src 'self'", "connect-src 'self'", "default-src 'none'"])
    assert.ok(csp.includes(d), `${what}: ${d} missing from ${csp}`);
  assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), csp);
}

before(async () => {
  mock = await startMock([]);
  gw = await startGateway({ channels: [{ name: 'm', url: mock.url, models: ['mock-*'] }] });
  const res = await get('/');
  root = { status: res.status, headers: res.headers, body: await res.text() };
  built = !root.body.includes('was not built');
});
after(async () => { await gw?.stop(); await mock?.stop(); });

test('/ answers HTML with the security headers, and HEAD / answers 200 without a body', async () => {
  assert.equal(root.status, 200);
  assert.equal(root.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(root.headers.get('cache-control'), 'no-cache');
  assertSecurityHeaders({ headers: root.headers }, '/');
  const head = await get('/', {}, 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(await head.text(), '');
  const index = await get('/index.html');
  assert.equal(index.status, 200);
  assert.equal(await index.text(), root.body);
});

test('a file the console does not have is the gateway\'s 404, not a page', async () => {
  for (const path of ['/assets/no-such-file.js', '/assets/index.js', '/favicon-nope.ico']) {
    const res = await get(path);
    assert.equal(res.status, 404, path);
    assert.match(res.headers.get('content-type'), /application\/json/, `${path}: the gateway answers, not the console`);
    assert.equal(res.headers.get('etag'), null, path);
  }
});

test('with a built console, index.html and its assets are served with types, validators and caching', async () => {
  assert.ok(built, 'this binary embeds no console: build it first (make console; make build does)');
  const etag = root.headers.get('etag');
  assert.match(etag, /^"[0-9a-f]{20}"$/);
  const again = await get('/', { 'if-none-match': etag });
  assert.equal(again.status, 304);
  assert.equal(await again.text(), '');
  assert.equal(again.headers.get('etag'), etag);
  const weak = await get('/index.html', { 'if-none-match': `"nope", W/${etag}` });
  assert.equal(weak.status, 304);
  assert.equal((await get('/', { 'if-none-match': '"stale"' })).status, 200);

  // The files: every one of SLUICE_CONSOLE_DIST when given, else what index.html references.
  const dist = process.env.SLUICE_CONSOLE_DIST;
  let files;
  if (dist) {
    const walk = (d) => readdirSync(d).flatMap((n) => (n.startsWith('.') ? [] : statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
    files = walk(dist).map((f) => ({ path: `/${relative(dist, f)}`, bytes: readFileSync(f) }));
    assert.equal(root.body, readFileSync(join(dist, 'index.html'), 'utf8'));
  } else {
    files = [...root.body.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => ({ path: m[1] }));
  }
  const assets = files.filter((f) => f.path.startsWith('/assets/'));
  assert.ok(assets.length > 0, 'index.html references at least one asset');
  for (const f of files) {
    const res = await get(f.path);
    assert.equal(res.status, 200, f.path);
    const body = Buffer.from(await res.arrayBuffer());
    if (f.bytes) assert.ok(body.equals(f.bytes), `${f.path} is served byte for byte`);
    if (typeOf(f.path)) assert.equal(res.headers.get('content-type'), typeOf(f.path), f.path);
    assert.equal(res.headers.get('cache-control'),
      f.path.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache', f.path);
    assertSecurityHeaders(res, f.path);
    const tag = res.headers.get('etag');
    assert.match(tag, /^"[0-9a-f]{20}"$/, f.path);
    const cached = await get(f.path, { 'if-none-match': tag });
    assert.equal(cached.status, 304, f.path);
    assert.equal(await cached.text(), '');
  }
  assert.equal((await get('/assets/no-such-file.js')).status, 404);
});

test('API paths are never shadowed by the console', async () => {
  const auth = { authorization: `Bearer ${MASTER}` };
  const health = await get('/healthz');
  assert.deepEqual(await health.json(), { status: 'ok' });
  const models = await get('/v1/models', auth);
  assert.equal(models.status, 200);
  assert.equal((await models.json()).object, 'list');
  assert.equal((await get('/v1/models')).status, 401, 'still asks for a key');
  const openapi = await get('/admin/api/openapi.json', auth);
  assert.equal(openapi.status, 200);
  assert.ok((await openapi.json()).paths['/stats']);
  const metrics = await get('/metrics');
  assert.match(metrics.headers.get('content-type'), /^text\/plain/);
  for (const path of ['/nope', '/v1/nope', '/admin/api/nope', '/anthropic/v1/models', '/v1beta/models']) {
    const res = await get(path, auth);
    assert.notEqual(res.headers.get('content-type'), 'text/html; charset=utf-8', path);
    assert.equal(res.headers.get('content-security-policy'), null, path);
  }
  const post = await fetch(`${gw.url}/`, { method: 'POST', headers: auth, body: '{}' });
  assert.notEqual(post.headers.get('content-type'), 'text/html; charset=utf-8', 'POST / is not the console');
});
