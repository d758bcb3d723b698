// Model discovery: a channel whose `models` hold globs has its provider's model list read at start
// and every routing.discovery_interval; /v1/models (and the Anthropic and Gemini listings) show
// the listed models the globs match, filtered by the caller's allowed models. A failed refresh
// keeps the last good list and says why in /admin/api/model-discovery. A provider's list is
// untrusted input: names that are not model names never reach a listing.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startMock, startGateway, MASTER } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args = []) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }
const auth = { authorization: `Bearer ${MASTER}` };

async function discovery(gw, until) {
  for (let i = 0; i < 200; i++) {
    const r = await (await fetch(`${gw.url}/admin/api/model-discovery`, { headers: auth })).json();
    if (until(r)) return r;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error('model discovery did not get there');
}
const refreshed = (r) => r.data.length > 0 && r.data.every((d) => d.refreshed_at_ms !== null);

test('globs list the models the provider has, in each API\'s listing, and those models route', async () => {
  const mock = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'oa', type: 'openai', base_url: `${mock.url}/v1`, models: ['gpt-4*'] },
      { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-sonnet-*', 'claude-opus-*'] },
      { name: 'ge', type: 'gemini', base_url: mock.url, models: ['gemini-2.5-*'] },
      { name: 'fixed', type: 'openai', base_url: `${mock.url}/v1`, models: ['mock-model'] },
    ],
    routing: { discovery_interval: '10m' },  // the default; the test harness turns it off unless asked
  });
  const d = await discovery(gw, refreshed);
  assert.deepEqual(d.data.map((x) => x.channel), ['oa', 'an', 'ge'], 'only channels with globs discover');
  assert.equal(d.interval_ms, 600000);
  const oa = d.data.find((x) => x.channel === 'oa');
  assert.deepEqual(oa.models, ['gpt-4.1-mini', 'gpt-4o', 'gpt-4o-mini']);
  assert.deepEqual(oa.globs, ['gpt-4*']);
  assert.equal(oa.error, null);

  const openai = (await (await fetch(`${gw.url}/v1/models`, { headers: auth })).json()).data.map((m) => m.id);
  for (const id of ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1-mini', 'oa/gpt-4o', 'claude-sonnet-4-20250514', 'claude-opus-4-20250514',
    'gemini-2.5-flash', 'gemini-2.5-pro', 'mock-model'])
    assert.ok(openai.includes(id), `${id} listed`);
  for (const id of ['gpt-3.5-turbo-instruct', 'text-embedding-3-small', 'claude-3-5-haiku-20241022', 'gemini-2.0-flash', 'gpt-4*'])
    assert.ok(!openai.includes(id), `${id} not listed`);

  const anthropic = await (await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' } })).json();
  assert.ok(anthropic.data.some((m) => m.type === 'model' && m.id === 'claude-opus-4-20250514'));
  const gemini = await (await fetch(`${gw.url}/v1beta/models`, { headers: { 'x-goog-api-key': MASTER } })).json();
  assert.ok(gemini.models.some((m) => m.name === 'models/gemini-2.5-pro'));

  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'oa');
});

test('a virtual key sees only the discovered models it may use', async () => {
  const mock = await mockP();
  const gw = await gwP({ channels: [{ name: 'oa', type: 'openai', base_url: `${mock.url}/v1`, models: ['gpt-4*'] }],
    routing: { discovery_interval: '10m' } });
  await discovery(gw, refreshed);
  const created = await (await fetch(`${gw.url}/admin/api/keys`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'team', allowed_models: ['gpt-4o*'] }),
  })).json();
  const ids = (await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${created.secret}` } })).json()).data.map((m) => m.id);
  assert.ok(ids.includes('gpt-4o') && ids.includes('gpt-4o-mini'));
  assert.ok(!ids.includes('gpt-4.1-mini'), 'not allowed: not listed');
});

test('a failed refresh keeps the last good list and says why', async () => {
  const mock = await mockP();
  const gw = await gwP({
    channels: [{ name: 'oa', type: 'openai', base_url: `${mock.url}/v1`, models: ['gpt-4o*'] }],
    routing: { discovery_interval: '300ms' },
  });
  await discovery(gw, refreshed);
  await mock.stop();
  const d = await discovery(gw, (r) => r.data[0].error !== null);
  assert.match(d.data[0].error, /connect failed/);
  assert.deepEqual(d.data[0].models, ['gpt-4o', 'gpt-4o-mini']);
  const ids = (await (await fetch(`${gw.url}/v1/models`, { headers: auth })).json()).data.map((m) => m.id);
  assert.ok(ids.includes('gpt-4o-mini'), 'still listed');
});

test('a provider\'s list is untrusted: only model names its globs match are listed; the request it gets is exact', async () => {
  const seen = [];
  const upstream = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, host: req.headers.host });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [
      { id: 'gpt-4o' }, { id: 'gpt-4x/../../admin' }, { id: 'gpt-4 evil' }, { id: 'gpt-4?key=1' }, { id: 'gpt-4"x' },
      { id: 'gpt-4%2F..' }, { id: 5 }, { name: 'gpt-4-name-only' }, 'gpt-4-string', { id: 'gpt-4\r\nx-injected: 1' },
      { id: 'gpt-4' + 'a'.repeat(300) }, { id: 'dall-e-3' }, { id: 'gpt-4o' },
    ] }));
  });
  await new Promise((ok) => upstream.listen(0, '127.0.0.1', ok));
  started.push({ stop: () => new Promise((ok) => { upstream.closeAllConnections(); upstream.close(ok); }) });
  const gw = await gwP({
    channels: [{ name: 'rec', type: 'openai', base_url: `http://127.0.0.1:${upstream.address().port}/v1`, models: ['gpt-4*'], keys: ['sk-rec-1'] }],
    routing: { discovery_interval: '10m' },
  });
  const d = await discovery(gw, refreshed);
  assert.deepEqual(d.data[0].models, ['gpt-4o']);
  assert.deepEqual(seen[0], { method: 'GET', url: '/v1/models', auth: 'Bearer sk-rec-1', host: `127.0.0.1:${upstream.address().port}` });
  const ids = (await (await fetch(`${gw.url}/v1/models`, { headers: auth })).json()).data.map((m) => m.id);
  assert.deepEqual(ids.filter((i) => i.includes('gpt-4')).sort(), ['gpt-4o', 'rec/gpt-4o']);
});

test('discovery_interval: 0 turns it off', async () => {
  const mock = await mockP();
  const gw = await gwP({
    channels: [{ name: 'oa', type: 'openai', base_url: `${mock.url}/v1`, models: ['gpt-4*'] }],
    routing: { discovery_interval: '0s' },
  });
  await new Promise((ok) => setTimeout(ok, 1500));
  const d = await (await fetch(`${gw.url}/admin/api/model-discovery`, { headers: auth })).json();
  assert.equal(d.data[0].refreshed_at_ms, null);
  assert.equal((await mock.stats()).requests, 0, 'the provider was not asked');
});

test('Gemini and Anthropic lists are read page by page until the provider says there is no next one', async () => {
  const mock = await mockP();
  const gw = await gwP({
    channels: [
      // The mock pages its lists two models at a time when a request carries this knob.
      { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-*'], headers: { 'x-mock-page-size': '2' } },
      { name: 'ge', type: 'gemini', base_url: mock.url, models: ['gemini-*'], headers: { 'x-mock-page-size': '2' } },
    ],
    routing: { discovery_interval: '10m' },
  });
  const d = await discovery(gw, refreshed);
  const whole = async (path, headers) => (await fetch(`${mock.url}${path}`, { headers })).json();
  const claude = (await whole('/anthropic/v1/models?limit=1000', { 'anthropic-version': '2023-06-01' })).data.map((m) => m.id);
  const gem = (await whole('/v1beta/models?pageSize=1000', {})).models.map((m) => m.name.replace(/^models\//, ''));
  assert.ok(claude.length > 2 && gem.length > 2, 'more models than one page holds');
  assert.deepEqual(d.data.find((x) => x.channel === 'an').models, claude.filter((m) => m.startsWith('claude-')).sort());
  assert.deepEqual(d.data.find((x) => x.channel === 'ge').models, gem.filter((m) => m.startsWith('gemini-')).sort());
});

test('a page token is the provider\'s: it goes back percent-encoded, and a repeated one ends the walk', async () => {
  const seen = [];
  const token = 'a&key=x/../b c%';
  const upstream = http.createServer((req, res) => {
    seen.push(req.url);
    res.writeHead(200, { 'content-type': 'application/json' });
    const first = !req.url.includes('pageToken=');
    res.end(JSON.stringify({ models: [{ name: first ? 'models/gemini-one' : 'models/gemini-two' }], nextPageToken: token }));
  });
  await new Promise((ok) => upstream.listen(0, '127.0.0.1', ok));
  started.push({ stop: () => new Promise((ok) => { upstream.closeAllConnections(); upstream.close(ok); }) });
  const gw = await gwP({
    channels: [{ name: 'ge', type: 'gemini', base_url: `http://127.0.0.1:${upstream.address().port}`, models: ['gemini-*'] }],
    routing: { discovery_interval: '10m' },
  });
  const d = await discovery(gw, refreshed);
  assert.deepEqual(d.data[0].models, ['gemini-one', 'gemini-two']);
  assert.deepEqual(seen, ['/v1beta/models?pageSize=1000', '/v1beta/models?pageSize=1000&pageToken=a%26key%3Dx%2F..%2Fb%20c%25']);
});
