// Vertex AI and Azure OpenAI with Entra ID: the official openai, @anthropic-ai/sdk and @google/genai
// SDKs as clients of sluice, which reaches Google's models (generateContent) and Anthropic's on
// Vertex (rawPredict) with a service account's access token, and Azure deployments with an Entra
// ID client-credentials token. The upstream is `sluice mock`: its token endpoint verifies each
// RS256 assertion with the service account's public key (proved first with a JWT node:crypto
// signs), and its Vertex endpoints take only the bearers it issued.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { generateKeyPairSync, createSign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMock, startGateway, tempDir, chat, admin, sleep, MASTER } from '../lib/harness.mjs';
import { startRecordingUpstream } from '../lib/recording-upstream.mjs';

const EMAIL = 'sluice-test@my-project.iam.gserviceaccount.com';
const pem = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
const KEY = pem();
const OTHER_KEY = pem();  // not the account's: its signatures are refused
const dir = tempDir();
const saJson = (tokenUri, key = KEY, email = EMAIL) => JSON.stringify({
  type: 'service_account', project_id: 'my-project', private_key_id: 'k1', private_key: key, client_email: email,
  client_id: '1', token_uri: tokenUri,
}, null, 2);
const saFile = (name, json) => { const f = join(dir, name); writeFileSync(f, json); return f; };
const GEMINI = 'gemini-2.5-flash';
const CLAUDE = 'claude-sonnet-4@20250514';
const VERTEX_PATH = '/v1/projects/my-project/locations/us-central1/publishers';

const started = [];
let mock, backup, gw;
const mockFor = (lifetime = 3600) => startMock(['--chunks', '4', '--google-sa', saFile('mock-sa.json', saJson('unused')),
  '--token-lifetime-s', String(lifetime), '--entra-client', 'app-1:right-secret']);

const vertexYaml = (channels, workers = 2) => [
  'server:', '  listen: "127.0.0.1:0"', `  workers: ${workers}`, 'auth:', `  master_key: "${MASTER}"`,
  'routing:', '  max_retries: 2', '  discovery_interval: "0s"', 'channels:',
  ...channels.flatMap((c) => [`  - name: ${c.name}`, `    type: ${c.type}`,
    ...Object.entries(c).filter(([k]) => !['name', 'type'].includes(k)).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`)]),
].join('\n') + '\n';

before(async () => {
  mock = await mockFor();
  backup = await startMock(['--chunks', '3']);
  started.push(mock, backup);
  const good = saFile('vertex-sa.json', saJson(`${mock.url}/token`));
  gw = await startGateway(vertexYaml([
    { name: 'vertex', type: 'vertex', base_url: mock.url, project: 'my-project', location: 'us-central1', keys: [good],
      models: ['gemini-*', 'claude-*'] },
  ]));
  started.push(gw);
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

const openai = (g = gw) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: MASTER, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
const genai = () => new GoogleGenAI({ apiKey: MASTER, httpOptions: { baseUrl: `${gw.url}/gemini` } });
const user = [{ role: 'user', content: 'Say hi' }];

// A JWT made here with node:crypto, not by sluice: the mock's verifier is checked on its own.
function jwt({ key = KEY, iss = EMAIL, aud = `${mock.url}/token`, scope = 'https://www.googleapis.com/auth/cloud-platform',
  iat = Math.floor(Date.now() / 1000), exp = iat + 3600 } = {}) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const input = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ iss, aud, scope, iat, exp })}`;
  return `${input}.${createSign('RSA-SHA256').update(input).sign(key).toString('base64url')}`;
}
const tokenRequest = (assertion) => fetch(`${mock.url}/token`, { method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: `grant_type=${encodeURIComponent('urn:ietf:params:oauth:grant-type:jwt-bearer')}&assertion=${assertion}` });

test("the mock's token endpoint: an RS256 assertion by the account passes; a wrong key, aud, scope or time does not", async () => {
  const ok = await tokenRequest(jwt());
  const tok = await ok.json();
  assert.equal(ok.status, 200, JSON.stringify(tok));
  assert.match(tok.access_token, /^ya29\.mock-/);
  assert.equal(tok.expires_in, 3600);
  const url = `${mock.url}${VERTEX_PATH}/google/models/${GEMINI}:generateContent`;
  const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
  const served = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${tok.access_token}` }, body });
  assert.equal(served.status, 200, await served.clone().text());
  assert.ok((await served.json()).candidates[0].content.parts[0].text.length > 0);
  for (const auth of [undefined, 'Bearer ya29.mock-not-issued', `Bearer ${tok.access_token}x`]) {
    const r = await fetch(url, { method: 'POST', headers: auth ? { authorization: auth } : {}, body });
    assert.equal(r.status, 401);
    assert.equal((await r.json()).error.status, 'UNAUTHENTICATED');
  }
  const now = Math.floor(Date.now() / 1000);
  for (const [bad, why] of [[{ key: OTHER_KEY }, /Invalid JWT Signature/], [{ aud: 'https://oauth2.googleapis.com/token' }, /aud/],
    [{ scope: 'https://www.googleapis.com/auth/devstorage.read_only' }, /scope/], [{ iss: 'someone@else.iam.gserviceaccount.com' }, /no such service account/],
    [{ iat: now - 7200, exp: now - 3600 }, /expired/], [{ iat: now, exp: now + 7200 }, /more than an hour/]]) {
    const r = await tokenRequest(jwt(bad));
    const e = await r.json();
    assert.equal(r.status, 400, JSON.stringify(bad));
    assert.equal(e.error, 'invalid_grant');
    assert.match(e.error_description, why);
  }
  const tampered = jwt().split('.');
  tampered[1] = Buffer.from(JSON.stringify({ iss: EMAIL, aud: `${mock.url}/token`, scope: 'x', iat: now, exp: now + 60 })).toString('base64url');
  assert.equal((await tokenRequest(tampered.join('.'))).status, 400);
});

test('openai SDK: a gemini and a claude model on Vertex, plain and streaming, with the bearer the mock issued', async () => {
  await mock.reset();
  for (const model of [GEMINI, CLAUDE]) {
    const r = await openai().chat.completions.create({ model, messages: user, max_tokens: 50 });
    assert.ok(r.choices[0].message.content.length > 0, model);
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
    const last = (await mock.stats()).last_request;
    assert.match(last.headers.authorization, /^Bearer ya29\.mock-/);
    assert.equal(last.headers['x-goog-api-key'], undefined);
    assert.equal(last.headers['x-api-key'], undefined);
    if (model === CLAUDE) {
      assert.equal(last.path, `${VERTEX_PATH}/anthropic/models/${CLAUDE}:rawPredict`);
      assert.equal(last.body.anthropic_version, 'vertex-2023-10-16');
      assert.equal(last.body.model, undefined);
      assert.equal(last.body.max_tokens, 50);
    } else {
      assert.equal(last.path, `${VERTEX_PATH}/google/models/${GEMINI}:generateContent`);
      assert.equal(last.body.generationConfig.maxOutputTokens, 50);
    }
    const stream = await openai().chat.completions.create({ model, messages: user, stream: true, stream_options: { include_usage: true } });
    let text = '', finish, usage;
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      if (c.usage) usage = c.usage;
    }
    assert.ok(text.length > 0, model);
    assert.equal(finish, 'stop');
    assert.ok(usage.completion_tokens > 0);
    const sl = (await mock.stats()).last_request;
    assert.equal(sl.path, model === CLAUDE ? `${VERTEX_PATH}/anthropic/models/${CLAUDE}:streamRawPredict`
      : `${VERTEX_PATH}/google/models/${GEMINI}:streamGenerateContent`);
    if (model !== CLAUDE) assert.equal(sl.query, 'alt=sse');
    else assert.equal(sl.body.stream, true);
  }
  const st = await mock.stats();
  assert.equal(st.token_requests, 1, 'one token for every request of both models, on both workers');
});

test('anthropic SDK: Claude on Vertex natively (rawPredict) and a gemini model translated, plain and streaming', async () => {
  await mock.reset();
  const m = await anthropic().messages.create({ model: CLAUDE, max_tokens: 64, messages: user });
  assert.equal(m.type, 'message');
  assert.ok(m.content[0].text.length > 0);
  assert.equal(m.stop_reason, 'end_turn');
  let last = (await mock.stats()).last_request;
  assert.equal(last.path, `${VERTEX_PATH}/anthropic/models/${CLAUDE}:rawPredict`);
  assert.equal(last.body.anthropic_version, 'vertex-2023-10-16');
  assert.equal(last.body.model, undefined);
  for (const model of [CLAUDE, GEMINI]) {
    const s = anthropic().messages.stream({ model, max_tokens: 64, messages: user });
    let text = '';
    s.on('text', (t) => { text += t; });
    const final = await s.finalMessage();
    assert.ok(text.length > 0, model);
    assert.equal(final.stop_reason, 'end_turn');
    assert.ok(final.usage.output_tokens > 0);
  }
  last = (await mock.stats()).last_request;
  assert.equal(last.path, `${VERTEX_PATH}/google/models/${GEMINI}:streamGenerateContent`);
  const g = await anthropic().messages.create({ model: GEMINI, max_tokens: 64, messages: user });
  assert.ok(g.content[0].text.length > 0);
});

test('@google/genai: a gemini model natively and Claude translated, plain and streaming', async () => {
  await mock.reset();
  for (const model of [GEMINI, CLAUDE]) {
    const r = await genai().models.generateContent({ model, contents: 'Say hi' });
    assert.ok(r.text.length > 0, model);
    let text = '';
    for await (const c of await genai().models.generateContentStream({ model, contents: 'Say hi' })) text += c.text ?? '';
    assert.ok(text.length > 0, model);
  }
  const paths = (await mock.stats()).by_path;
  assert.ok(paths[`${VERTEX_PATH}/google/models/${GEMINI}:generateContent`] >= 1, JSON.stringify(paths));
  assert.ok(paths[`${VERTEX_PATH}/google/models/${GEMINI}:streamGenerateContent`] >= 1);
  assert.ok(paths[`${VERTEX_PATH}/anthropic/models/${CLAUDE}:rawPredict`] >= 1);
  assert.ok(paths[`${VERTEX_PATH}/anthropic/models/${CLAUDE}:streamRawPredict`] >= 1);
});

const vertexOn = (m, name) => vertexYaml([{ name: 'vertex', type: 'vertex', base_url: m.url, project: 'my-project',
  location: 'us-central1', keys: [saFile(name, saJson(`${m.url}/token`))], models: ['gemini-*', 'claude-*'] }]);

test('many concurrent requests across 2 workers make exactly one token request', async () => {
  const m = await mockFor();
  started.push(m);
  const g = await startGateway(vertexOn(m, 'sa-burst.json'));
  started.push(g);
  const burst = await Promise.all(Array.from({ length: 40 }, (_, i) =>
    chat(g, { model: i % 2 ? GEMINI : CLAUDE, stream: i % 3 === 0, messages: user }).then(async (r) => [r.status, await r.text()])));
  for (const [status, text] of burst) assert.equal(status, 200, text);
  const st = await m.stats();
  assert.equal(st.token_requests, 1, 'one refresh in flight; the other requests waited for it');
  const bearers = new Set(Object.keys(st.by_key).filter((k) => k.startsWith('ya29.')));
  assert.equal(bearers.size, 1, JSON.stringify(st.by_key));
});

test('a token near its end is refreshed, once, and the new bearer is used', async () => {
  const m = await mockFor(2);  // 2 s tokens: the gateway refreshes each once it reaches its end
  started.push(m);
  const g = await startGateway(vertexOn(m, 'sa-refresh.json'));
  started.push(g);
  let r = await chat(g, { model: GEMINI, messages: user });
  assert.equal(r.status, 200, await r.text());
  let st = await m.stats();
  assert.equal(st.token_requests, 1);
  const first = st.last_request.headers.authorization;
  await sleep(2200);
  const again = await Promise.all(Array.from({ length: 6 }, () => chat(g, { model: CLAUDE, messages: user }).then((x) => x.text().then(() => x.status))));
  assert.deepEqual(again, Array(6).fill(200));
  st = await m.stats();
  assert.equal(st.token_requests, 2, 'the token at its end was refreshed once');
  assert.notEqual(st.last_request.headers.authorization, first);
});

test('a token the provider revokes before its end: dropped, fetched again once, the request resent; the SDK never sees the 401', async () => {
  const m = await mockFor();
  started.push(m);
  const g = await startGateway(vertexOn(m, 'sa-revoke.json'));
  started.push(g);
  let r = await chat(g, { model: GEMINI, messages: user });
  assert.equal(r.status, 200, await r.text());
  const first = (await m.stats()).last_request.headers.authorization;
  await m.reset();
  assert.equal((await (await fetch(`${m.url}/mock/oauth/revoke`, { method: 'POST' })).json()).revoked, 1);
  // Through the SDK, which would throw on a 401: plain, then streaming on the new token.
  const out = await openai(g).chat.completions.create({ model: CLAUDE, messages: user, max_tokens: 20 });
  assert.ok(out.choices[0].message.content.length > 0);
  let st = await m.stats();
  assert.equal(st.token_requests, 1, 'exactly one new token');
  assert.equal(st.bearer_refusals, 1, 'one 401, to the revoked token');
  assert.notEqual(st.last_request.headers.authorization, first);
  let text = '';
  for await (const c of await openai(g).chat.completions.create({ model: GEMINI, messages: user, stream: true }))
    text += c.choices[0]?.delta?.content ?? '';
  assert.ok(text.length > 0);
  st = await m.stats();
  assert.equal(st.token_requests, 1);
  assert.equal(st.bearer_refusals, 1);
  const keys = (await (await admin(g, '/upstream-keys')).json()).data;
  assert.deepEqual(keys.map((k) => k.state), ['active'], JSON.stringify(keys));
});

test('a service account whose key the token endpoint refuses: the next channel serves, or a clear error names why', async () => {
  const wrong = saFile('wrong-sa.json', saJson(`${mock.url}/token`, OTHER_KEY));
  const g = await startGateway(vertexYaml([
    { name: 'vbad', type: 'vertex', base_url: mock.url, project: 'my-project', location: 'us-central1', keys: [wrong],
      models: ['gemini-*'], priority: 1 },
    { name: 'backup', type: 'openai', base_url: `${backup.url}/v1`, keys: ['k-backup'], models: ['gemini-2.5-flash'], priority: 2 },
  ]));
  started.push(g);
  let r = await chat(g, { model: GEMINI, messages: user });
  assert.equal(r.status, 200, await r.clone().text());
  assert.equal(r.headers.get('x-sluice-channel'), 'backup');
  await r.text();
  r = await chat(g, { model: 'gemini-2.0-flash', messages: user });
  const err = await r.json();
  assert.equal(r.status, 503, JSON.stringify(err));  // its only key is disabled now
  const keys = (await (await admin(g, '/upstream-keys')).json()).data;
  const bad = keys.find((k) => k.channel === 'vbad');
  assert.equal(bad.state, 'disabled', JSON.stringify(keys));
  assert.match(bad.reason, /Invalid JWT Signature/);
  const text = JSON.stringify(keys) + (await (await admin(g, '/config')).text()) + (await (await admin(g, '/channels')).text()) +
    (await (await admin(g, '/logs?limit=100')).text());
  assert.ok(!text.includes('PRIVATE KEY') && !g.proc.output.includes('PRIVATE KEY'), 'no private key shown or logged');
  assert.ok(text.includes(`sa:${EMAIL}`));

  // A token endpoint that does not answer: the key fails like a bad one, never a hang.
  const g2 = await startGateway(vertexYaml([{ name: 'vdown', type: 'vertex', base_url: mock.url, project: 'p', location: 'l',
    keys: [saFile('down-sa.json', saJson('http://127.0.0.1:1/token'))], models: ['gemini-*'] }]));
  started.push(g2);
  r = await chat(g2, { model: GEMINI, messages: user });
  const down = await r.json();
  assert.equal(r.status, 502, JSON.stringify(down));
  assert.match(down.error.message, /no access token .*token endpoint http:\/\/127\.0\.0\.1:1\/token failed/);
});

test('a vertex key given as the JSON itself through the admin API: sealed at rest, shown by its email, used', async () => {
  const db = join(tempDir(), 'sluice.db');
  const g = await startGateway(`store:\n  url: "sqlite://${db}"\n  secret_key: "vertex-test-store-key-0123456789abcdef"\n` +
    vertexYaml([{ name: 'yaml', type: 'openai', base_url: `${backup.url}/v1`, keys: ['k'], models: ['gpt-4o-mini'] }]));
  started.push(g);
  let r = await admin(g, '/channels', { method: 'POST', body: { name: 'db-vertex', type: 'vertex', base_url: mock.url,
    project: 'my-project', location: 'us-central1', models: ['gemini-db-*'] } });
  const ch = await r.json();
  assert.equal(r.status, 201, JSON.stringify(ch));
  assert.equal(ch.project, 'my-project');
  r = await admin(g, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret: '/etc/passwd' } });
  assert.equal(r.status, 400, 'a path is not read from the admin API');
  await r.text();
  r = await admin(g, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret: saJson(`${mock.url}/token`) } });
  const created = await r.text();
  assert.equal(r.status, 201, created);
  assert.ok(!created.includes('PRIVATE KEY'));
  assert.match(created, new RegExp(`sa:${EMAIL}`));
  let status = 0;
  for (let i = 0; i < 40 && status !== 200; i++) {
    const res = await chat(g, { model: 'gemini-db-1', messages: user });
    status = res.status;
    await res.text();
    if (status !== 200) await sleep(50);
  }
  assert.equal(status, 200);
});

test('azure with Entra ID (openai, Anthropic and Gemini SDKs): a client-credentials token as the Bearer; a wrong secret fails over with the reason', async () => {
  await mock.reset();
  const g = await startGateway(vertexYaml([
    { name: 'az', type: 'azure', base_url: mock.url, client_id: 'app-1', client_secret: 'right-secret',
      token_url: `${mock.url}/my-tenant/oauth2/v2.0/token`, models: ['gpt-4o-az'], priority: 1 },
    { name: 'azbad', type: 'azure', base_url: mock.url, tenant_id: 'my-tenant', client_id: 'app-1', client_secret: 'wrong-secret',
      token_url: `${mock.url}/my-tenant/oauth2/v2.0/token`, models: ['gpt-4o-bad'], priority: 1 },
    { name: 'backup', type: 'openai', base_url: `${backup.url}/v1`, keys: ['k-backup'], models: ['gpt-4o-bad'], priority: 2 },
  ]));
  started.push(g);
  for (const stream of [false, true]) {
    const r = await openai(g).chat.completions.create({ model: 'gpt-4o-az', messages: user, stream });
    if (stream) { let t = ''; for await (const c of r) t += c.choices[0]?.delta?.content ?? ''; assert.ok(t.length > 0); }
    else assert.ok(r.choices[0].message.content.length > 0);
  }
  // The Anthropic and Gemini SDKs reach the same deployment, translated, on the same token.
  const ant = new Anthropic({ baseURL: `${g.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  const m = await ant.messages.create({ model: 'gpt-4o-az', max_tokens: 64, messages: user });
  assert.equal(m.type, 'message');
  assert.ok(m.content[0].text.length > 0);
  const s = ant.messages.stream({ model: 'gpt-4o-az', max_tokens: 64, messages: user });
  let antText = '';
  s.on('text', (t) => { antText += t; });
  assert.ok((await s.finalMessage()).usage.output_tokens > 0);
  assert.ok(antText.length > 0);
  const gem = new GoogleGenAI({ apiKey: MASTER, httpOptions: { baseUrl: `${g.url}/gemini` } });
  assert.ok((await gem.models.generateContent({ model: 'gpt-4o-az', contents: 'Say hi' })).text.length > 0);
  let gemText = '';
  for await (const c of await gem.models.generateContentStream({ model: 'gpt-4o-az', contents: 'Say hi' }))
    gemText += c.text ?? '';
  assert.ok(gemText.length > 0);
  const st = await mock.stats();
  assert.equal(st.token_requests, 1, 'one Entra token for the requests of all three SDKs');
  assert.match(st.last_request.path, /^\/openai\/deployments\/gpt-4o-az\/chat\/completions$/);
  assert.match(st.last_request.headers.authorization, /^Bearer eyJ0\.mock-entra-/);
  assert.equal(st.last_request.headers['api-key'], undefined);
  const r = await chat(g, { model: 'gpt-4o-bad', messages: user });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-sluice-channel'), 'backup');
  await r.text();
  const keys = (await (await admin(g, '/upstream-keys')).json()).data;
  const bad = keys.find((k) => k.channel === 'azbad');
  assert.equal(bad.state, 'disabled', JSON.stringify(keys));
  assert.match(bad.reason, /invalid_client/);
  const text = (await (await admin(g, '/config')).text()) + (await (await admin(g, '/channels')).text()) + JSON.stringify(keys);
  for (const s of ['right-secret', 'wrong-secret']) {
    assert.ok(!text.includes(s), `${s} shown`);
    assert.ok(!g.proc.output.includes(s), `${s} logged`);
  }
});

// Attack table: a model name that would walk the Vertex path (a dot segment, an encoded or raw
// '/', a query, a fragment, a second method, a header) is refused before anything goes upstream;
// the good names reach it as exactly the request line expected.
test('attack table: the model in the Vertex path, against a recording upstream', async () => {
  const tap = await startRecordingUpstream(['--google-sa', join(dir, 'mock-sa.json')]);
  started.push(tap);
  const g = await startGateway(vertexYaml([{ name: 'vx', type: 'vertex', base_url: tap.url, project: 'my-project',
    location: 'us-central1', keys: [saFile('tap-sa.json', saJson(`${tap.url}/token`))], models: ['*'] }]));
  started.push(g);
  const bad = ['../../admin', 'gemini/../../x', '..', 'gemini%2F..%2Fx', 'gemini?alt=json', 'gemini#x',
    'gemini-2.5-flash:streamRawPredict', 'claude:rawPredict', 'gemini\r\nX-Injected: 1', 'gemini x', 'a/b', 'gemini\\..'];
  for (const model of bad) {
    const r = await chat(g, { model, messages: user });
    const e = await r.json();
    assert.equal(r.status, 400, `${JSON.stringify(model)}: ${JSON.stringify(e)}`);
    assert.equal(e.error.code, 'invalid_model');
  }
  assert.deepEqual(tap.requests(), [], 'nothing reached the upstream');
  // The token request itself: the form the RFC 7523 grant takes, at the account's token_uri.
  await (await chat(g, { model: GEMINI, messages: user })).text();
  const tokenReq = tap.requests().find((q) => q.target === '/token');
  assert.equal(tokenReq.rawHead.split('\r\n')[0], 'POST /token HTTP/1.1');
  assert.equal(tokenReq.header('content-type'), 'application/x-www-form-urlencoded');
  assert.match(tokenReq.body, /^grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=[\w-]+\.[\w-]+\.[\w-]+$/);
  for (const [model, line] of [
    [GEMINI, `POST ${VERTEX_PATH}/google/models/${GEMINI}:generateContent HTTP/1.1`],
    [CLAUDE, `POST ${VERTEX_PATH}/anthropic/models/${CLAUDE}:rawPredict HTTP/1.1`],
    ['gemini-x~y_z.1', `POST ${VERTEX_PATH}/google/models/gemini-x~y_z.1:generateContent HTTP/1.1`]]) {
    tap.clear();
    const r = await chat(g, { model, messages: user });
    await r.text();
    const reqs = tap.requests();
    const sent = reqs.filter((q) => q.target !== '/token');
    assert.equal(sent.length, 1, JSON.stringify(reqs.map((q) => q.rawHead.split('\r\n')[0])));
    assert.equal(sent[0].rawHead.split('\r\n')[0], line);
    assert.ok(!sent[0].malformed);
    assert.match(sent[0].header('authorization'), /^Bearer ya29\.mock-/);
  }
});
