// Subscription accounts: channel keys that are the OAuth credentials Claude Code and Codex sign in
// with, against `sluice mock`, whose token endpoints rotate the pair and refuse a refresh token
// used twice, and whose subscription endpoints insist on what the CLIs send (a bearer token with
// Anthropic's oauth beta flag; a bearer token with chatgpt-account-id) and report usage windows.
// The official @anthropic-ai/sdk, openai and @google/genai SDKs (tests/e2e's packages) are the
// clients: a ChatGPT subscription (the Codex endpoint, which speaks only the Responses API, streams
// every answer and keeps none) serves Chat Completions, Anthropic Messages and Gemini clients by
// translation, and a Claude subscription serves Gemini clients.
// The last test runs two instances on one PostgreSQL (tests/scripts/with-postgres.sh) and a
// redis-server started here, hammering one account across several expiries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import {
  startMock, startGateway, gatewayYaml, tempDir, admin, sleep, waitFor, MASTER, BIN,
} from '../lib/harness.mjs';
import { startRedis } from '../lib/services.mjs';

const sdk = (p) => fileURLToPath(new URL(`../e2e/node_modules/${p}`, import.meta.url));
const { default: OpenAI } = await import(sdk('openai/index.mjs'));
const { default: Anthropic } = await import(sdk('@anthropic-ai/sdk/index.mjs'));
const { GoogleGenAI } = await import(sdk('@google/genai/dist/node/index.mjs'));

const PG = process.env.SLUICE_TEST_POSTGRES_URL;
const SECRET_KEY = 'test-secret-key-for-sealing-0123456789';
const RUN = Date.now().toString(36);
const b64url = (s) => Buffer.from(s).toString('base64url');
const jwt = (expS) => `${b64url('{"alg":"RS256","typ":"JWT"}')}.${b64url(JSON.stringify({ exp: expS }))}.c2lnbmF0dXJl`;

// Every token a test hands out: none may show up in an admin answer or a log line.
const SECRETS = [];
function claudeFile({ access, refresh, expiresInS }) {
  SECRETS.push(access, refresh);
  return JSON.stringify({
    claudeAiOauth: {
      accessToken: access, refreshToken: refresh, expiresAt: Date.now() + expiresInS * 1000,
      scopes: ['user:inference', 'user:profile'], subscriptionType: 'max',
    },
  }, null, 2);
}
function codexFile({ access, refresh, account }) {
  SECRETS.push(access, refresh);
  return JSON.stringify({
    OPENAI_API_KEY: null,
    tokens: { id_token: 'eyJ.id.token', access_token: access, refresh_token: refresh, account_id: account },
    last_refresh: new Date().toISOString(),
  }, null, 2);
}

let mock, gw, dir;
const subStats = async () => (await fetch(`${mock.url}/mock/subscription/stats`)).json();
const control = (what, body) => fetch(`${mock.url}/mock/subscription/${what}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});
const keyHealth = async (g, channel) =>
  (await (await admin(g, '/upstream-keys')).json()).data.filter((k) => k.channel === channel);

const A_FAR = `sk-ant-oat01-pool-a-${RUN}`;
const B_FAR = `sk-ant-oat01-pool-b-${RUN}`;
const REVOKED_RT = `sk-ant-ort01-revoked-${RUN}`;
const CODEX_ACCESS = jwt(Math.floor(Date.now() / 1000) + 86400);

function subscriptionChannel({ name, kind, keys, models, extraKeys = '' }) {
  const type = kind === 'claude' ? 'anthropic' : 'openai';
  const base = kind === 'claude' ? mock.url : `${mock.url}/backend-api/codex`;
  const token = kind === 'claude' ? `${mock.url}/v1/oauth/token` : `${mock.url}/oauth/token`;
  return `  - name: ${name}\n    type: ${type}\n    subscription: ${kind}\n    base_url: "${base}"\n` +
    `    token_url: "${token}"\n    keys: ${JSON.stringify(keys)}\n    models: ${JSON.stringify(models)}\n${extraKeys}`;
}

before(async () => {
  mock = await startMock(['--chunks', '3']);
  dir = tempDir();
  // A credential file by path (as Claude Code writes it), near expiry: refreshed before first use.
  const nearFile = join(dir, 'claude-near.json');
  writeFileSync(nearFile, claudeFile({ access: `sk-ant-oat01-near-${RUN}`, refresh: `sk-ant-ort01-near-${RUN}`, expiresInS: 60 }));
  // A pool of two accounts far from expiry, for the usage-window cool-down.
  const poolA = claudeFile({ access: A_FAR, refresh: `sk-ant-ort01-pool-a-${RUN}`, expiresInS: 86400 });
  const poolB = claudeFile({ access: B_FAR, refresh: `sk-ant-ort01-pool-b-${RUN}`, expiresInS: 86400 });
  // One account whose refresh token gets revoked, one that works.
  const revoked = claudeFile({ access: `sk-ant-oat01-revoked-${RUN}`, refresh: REVOKED_RT, expiresInS: 30 });
  const good = claudeFile({ access: `sk-ant-oat01-good-${RUN}`, refresh: `sk-ant-ort01-good-${RUN}`, expiresInS: 86400 });
  const codexPath = join(dir, 'auth.json');
  writeFileSync(codexPath, codexFile({ access: CODEX_ACCESS, refresh: `rt-codex-${RUN}`, account: `acct-${RUN}` }));
  const oneLine = (s) => JSON.stringify(JSON.parse(s));
  const yaml = `store:\n  url: "sqlite://${join(dir, 'sluice.db')}"\n  secret_key: "${SECRET_KEY}"\n` +
    gatewayYaml({ channels: [], routing: { max_retries: 3 } }).replace(/channels:\n$/, 'channels:\n') +
    subscriptionChannel({ name: 'claude', kind: 'claude', keys: [nearFile], models: ['claude-*'] }) +
    subscriptionChannel({ name: 'pool', kind: 'claude', keys: [oneLine(poolA), oneLine(poolB)], models: ['pool-*'] }) +
    subscriptionChannel({ name: 'revoking', kind: 'claude', keys: [oneLine(revoked), oneLine(good)], models: ['rev-*'] }) +
    subscriptionChannel({ name: 'codex', kind: 'chatgpt', keys: [codexPath], models: ['gpt-5*'] });
  await control('revoke', { refresh_token: REVOKED_RT });
  gw = await startGateway(yaml);
});
after(async () => {
  await gw?.stop();
  await mock?.stop();
});

test('the Anthropic SDK through a Claude subscription: the near-expiry token is refreshed first, then sent with the oauth beta flag', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  const before = await subStats();
  const msg = await client.messages.create({
    model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }],
  });
  assert.equal(msg.type, 'message');
  assert.ok(msg.content[0].text.length > 0);
  const after1 = await subStats();
  assert.equal(after1.refreshes - before.refreshes, 1, 'one refresh before the first request');
  assert.match(after1.last_bearer, /^sk-ant-oat01-mock-/, 'the request carried the refreshed token, not the old one');
  // Streaming, with a beta flag of the client's own: merged with the oauth flag, no new refresh.
  const stream = client.messages.stream({
    model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Stream please' }],
  }, { headers: { 'anthropic-beta': 'prompt-caching-2024-07-31' } });
  const final = await stream.finalMessage();
  assert.ok(final.content[0].text.length > 0);
  const after2 = await subStats();
  assert.equal(after2.refreshes, after1.refreshes, 'a fresh token is not refreshed again');
  assert.equal(after2.refused, 0);
  const rows = (await (await fetch(`${mock.url}/mock/stats`)).json());
  assert.ok(rows, 'mock stats readable');
});

test('an access token revoked before its expiry: refreshed once and the request resent; the SDK never sees the 401', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  const ask = () => client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
  await ask();
  const before = await subStats();
  assert.match(before.last_bearer, /^sk-ant-oat01-/);
  await control('revoke', { access_token: before.last_bearer });
  const msg = await ask();
  assert.equal(msg.type, 'message');
  const after1 = await subStats();
  assert.equal(after1.revoked_refusals - before.revoked_refusals, 1, 'one 401, to the revoked token');
  assert.equal(after1.refreshes - before.refreshes, 1, 'exactly one refresh');
  assert.notEqual(after1.last_bearer, before.last_bearer);
  await ask();
  const after2 = await subStats();
  assert.equal(after2.refreshes, after1.refreshes, 'the new token is kept');
  assert.equal(after2.revoked_refusals, after1.revoked_refusals);
  const keys = await keyHealth(gw, 'claude');
  assert.deepEqual(keys.map((k) => k.state), ['active'], JSON.stringify(keys));
});

test('the openai SDK through a ChatGPT subscription: Responses to the Codex endpoint with the bearer token and account id', async () => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
  const stream = await client.responses.create({ model: 'gpt-5-codex', input: 'Say hi', stream: true });
  let text = '';
  let completed = false;
  for await (const ev of stream) {
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed') completed = true;
  }
  assert.ok(completed && text.length > 0);
  const s = await subStats();
  assert.equal(s.last_bearer, CODEX_ACCESS);
  assert.equal(s.last_account, `acct-${RUN}`);
  // Not streamed by the client: streamed from the Codex endpoint (which takes nothing else) and
  // assembled; the client's max_output_tokens, which the endpoint refuses, is not sent.
  const plain = await client.responses.create({ model: 'gpt-5-codex', input: 'Again', max_output_tokens: 64 });
  assert.equal(plain.object, 'response');
  assert.equal(plain.status, 'completed');
  assert.equal(plain.output_text, TEXT);
  assert.equal(plain.usage.output_tokens, 3);
  const sent = (await mock.stats()).last_request.body;
  assert.equal(sent.stream, true);
  assert.equal(sent.store, false);
  assert.equal(sent.instructions, 'You are a helpful assistant.');
  assert.equal(sent.max_output_tokens, undefined);
  assert.equal((await subStats()).codex_refused, 0, 'the Codex endpoint refused nothing');
  // The usage window the Codex endpoint reported is on the key's health.
  const [k] = await keyHealth(gw, 'codex');
  assert.equal(k.subscription, 'chatgpt');
  assert.equal(k.usage, 0.12);
  assert.equal(k.masked, '{credential}#0');
});

// --- Every client format through the subscriptions -------------------------------------------
// The mock's answer is its first --chunks (3) words; the request log's row of each request holds
// the tokens the answer reported and its cost at the model's price ($ per million tokens).
const TEXT = 'Hello from sluice';
const PRICE = { 'gpt-5': [1.25, 10], 'claude-sonnet-4-5': [3, 15] };
const lastUpstream = async () => (await mock.stats()).last_request;
const newestLog = async () => (await (await admin(gw, '/logs?limit=1')).json()).data[0];
// The row of the request made after `before` (the newest row then), once it is written: the newest
// later row of that model, streamed or not. The log writer is asynchronous, so the previous test's
// last row can land after `before` was read; it is told apart by its model or its stream flag.
async function loggedAfter(before, { model, stream }) {
  let row;
  await waitFor(async () => {
    const rows = (await (await admin(gw, '/logs?limit=20')).json()).data;
    row = rows.find((r) => r.id > (before?.id ?? 0) && r.model === model && Boolean(r.stream) === stream);
    return row !== undefined;
  }, 5000, 25);
  return row;
}
function assertRecorded(row, { model, input, output, what }) {
  assert.equal(row.status, 200, what);
  assert.equal(row.model, model, what);
  assert.equal(row.input_tokens, input, `${what}: input tokens`);
  assert.equal(row.output_tokens, output, `${what}: output tokens`);
  const [pin, pout] = PRICE[model];
  const want = (input * pin + output * pout) / 1e6;
  assert.ok(Math.abs(row.cost_usd - want) < 1e-12, `${what}: cost ${row.cost_usd}, want ${want}`);
}
// What the Codex endpoint got: the subscription's bearer token and account id, Codex's headers,
// and a Responses body it accepts (streamed, stored nowhere, with instructions).
async function assertCodexRequest(what, { instructions = 'You are a helpful assistant.', input } = {}) {
  const r = await lastUpstream();
  assert.equal(r.method, 'POST', what);
  assert.equal(r.path, '/backend-api/codex/responses', what);
  assert.equal(r.headers.authorization, `Bearer ${CODEX_ACCESS}`, what);
  assert.equal(r.headers['chatgpt-account-id'], `acct-${RUN}`, what);
  assert.equal(r.headers['openai-beta'], 'responses=experimental', what);
  assert.equal(r.headers.originator, 'codex_cli_rs', what);
  assert.equal(r.headers['x-api-key'], undefined, what);
  assert.equal(r.headers['x-goog-api-key'], undefined, what);
  assert.equal(r.body.model, 'gpt-5', what);
  assert.equal(r.body.stream, true, what);
  assert.equal(r.body.store, false, what);
  assert.equal(r.body.instructions, instructions, what);
  assert.equal(r.body.max_output_tokens, undefined, what);
  if (input) assert.deepEqual(r.body.input, input, what);
  return r;
}
const userItem = (text) => [{ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }];
// The Claude endpoint got the subscription's token with the oauth beta flag, an Anthropic body.
async function assertClaudeRequest(what, { stream }) {
  const r = await lastUpstream();
  assert.equal(r.path, '/v1/messages', what);
  assert.match(r.headers.authorization, /^Bearer sk-ant-oat01-mock-/, `${what}: the refreshed token`);
  assert.equal(r.headers.authorization, `Bearer ${(await subStats()).last_bearer}`, what);
  assert.match(r.headers['anthropic-beta'], /(^|,)oauth-2025-04-20(,|$)/, what);
  assert.equal(r.headers['anthropic-version'], '2023-06-01', what);
  assert.equal(r.headers['x-api-key'], undefined, what);
  assert.equal(r.body.model, 'claude-sonnet-4-5', what);
  assert.equal(r.body.stream ?? false, stream, what);
  assert.deepEqual(r.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'Say hi' }] }], what);
}

test('the openai SDK chat.completions through a ChatGPT subscription: translated to the Codex endpoint, whole and streamed', async () => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
  let before = await newestLog();
  const { data: plain, response } = await client.chat.completions.create({
    model: 'gpt-5', max_tokens: 64, temperature: 0.5, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hi' }],
  }).withResponse();
  assert.equal(response.headers.get('x-sluice-channel'), 'codex');
  assert.equal(plain.object, 'chat.completion');
  assert.equal(plain.choices[0].message.content, TEXT);
  assert.equal(plain.choices[0].finish_reason, 'stop');
  assert.match(plain.id, /^resp_/);
  const r1 = await assertCodexRequest('chat, whole', { instructions: 'Be brief.', input: userItem('Say hi') });
  assert.equal(r1.body.temperature, undefined, 'the Codex endpoint takes no temperature');
  let row = await loggedAfter(before, { model: 'gpt-5', stream: false });
  assertRecorded(row, { model: 'gpt-5', input: plain.usage.prompt_tokens, output: plain.usage.completion_tokens, what: 'chat, whole' });
  assert.ok(plain.usage.prompt_tokens > 0 && plain.usage.completion_tokens === 3, JSON.stringify(plain.usage));

  before = row;
  const stream = await client.chat.completions.create({
    model: 'gpt-5', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Say hi' }],
  });
  let text = '';
  let usage;
  let finish;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, TEXT);
  assert.equal(finish, 'stop');
  await assertCodexRequest('chat, stream', { input: userItem('Say hi') });
  row = await loggedAfter(before, { model: 'gpt-5', stream: true });
  assert.equal(usage.completion_tokens, 3);
  assertRecorded(row, { model: 'gpt-5', input: usage.prompt_tokens, output: usage.completion_tokens, what: 'chat, stream' });
});

test('the Anthropic SDK through a ChatGPT subscription: messages whole and streamed', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  let before = await newestLog();
  const msg = await client.messages.create({
    model: 'gpt-5', max_tokens: 64, system: 'Answer in English.', messages: [{ role: 'user', content: 'Say hi' }],
  });
  assert.equal(msg.type, 'message');
  assert.deepEqual(msg.content, [{ type: 'text', text: TEXT }]);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.usage.output_tokens, 3);
  await assertCodexRequest('anthropic, whole', { instructions: 'Answer in English.', input: userItem('Say hi') });
  let row = await loggedAfter(before, { model: 'gpt-5', stream: false });
  assertRecorded(row, { model: 'gpt-5', input: msg.usage.input_tokens, output: msg.usage.output_tokens, what: 'anthropic, whole' });

  before = row;
  const stream = client.messages.stream({ model: 'gpt-5', max_tokens: 64, messages: [{ role: 'user', content: 'Say hi' }] });
  const final = await stream.finalMessage();
  assert.deepEqual(final.content, [{ type: 'text', text: TEXT }]);
  assert.equal(final.stop_reason, 'end_turn');
  assert.equal(final.usage.output_tokens, 3);
  await assertCodexRequest('anthropic, stream', { input: userItem('Say hi') });
  row = await loggedAfter(before, { model: 'gpt-5', stream: true });
  assertRecorded(row, { model: 'gpt-5', input: final.usage.input_tokens, output: final.usage.output_tokens, what: 'anthropic, stream' });
});

test('a tool call round trip through a ChatGPT subscription (openai SDK): function_call items out, the result back', async () => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const ask = [{ role: 'user', content: 'What is the weather in Paris? Use get_weather.' }];
  const first = await client.chat.completions.create({ model: 'gpt-5', messages: ask, tools });
  const [call] = first.choices[0].message.tool_calls;
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'example' });
  const sent = await assertCodexRequest('tools, first turn');
  assert.deepEqual(sent.body.tools, [{ type: 'function', name: 'get_weather', description: 'The weather in a city',
    parameters: tools[0].function.parameters, strict: false }]);

  const stream = await client.chat.completions.create({
    model: 'gpt-5', stream: true, tools,
    messages: [...ask, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'The tool returned: sunny');
  await assertCodexRequest('tools, second turn', { input: [
    ...userItem('What is the weather in Paris? Use get_weather.'),
    { type: 'function_call', call_id: call.id, name: 'get_weather', arguments: call.function.arguments },
    { type: 'function_call_output', call_id: call.id, output: 'sunny' },
  ] });
});

test("the Codex endpoint's error event: a whole answer is not assembled from it, a stream ends with the client's error event", async () => {
  // The mock's stream carries response.failed (a server error) after one content chunk.
  const headers = { 'content-type': 'application/json', 'x-mock-error-event-rate': '1', 'x-mock-error-event-after': '1' };
  const body = JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'Say hi' }] });
  const whole = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { ...headers, authorization: `Bearer ${MASTER}` }, body,
  });
  const answer = await whole.json();
  assert.equal(whole.status, 502, JSON.stringify(answer));
  assert.match(answer.error.message, /The server had an error while processing your request/);
  assert.equal(answer.choices, undefined, 'no answer made of the part before the error');

  const res = await fetch(`${gw.url}/anthropic/v1/messages`, {
    method: 'POST', headers: { ...headers, 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'gpt-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Say hi' }] }),
  });
  assert.equal(res.status, 200);
  const raw = await res.text();
  const events = raw.split('\n\n').filter((b) => b.trim()).map((b) => b.match(/^event: (\S+)/m)?.[1]);
  assert.equal(events[0], 'message_start', raw);
  assert.ok(events.includes('content_block_delta'), raw);
  assert.equal(events.at(-1), 'error', raw);
  assert.match(raw, /The server had an error while processing your request/);
});

// The Gemini SDK against both subscriptions: generateContent and generateContentStream.
for (const [kind, model] of [['chatgpt', 'gpt-5'], ['claude', 'claude-sonnet-4-5']]) {
  test(`the Gemini SDK through a ${kind === 'chatgpt' ? 'ChatGPT' : 'Claude'} subscription: generateContent and a stream`, async () => {
    const ai = new GoogleGenAI({ apiKey: MASTER, httpOptions: { baseUrl: `${gw.url}/gemini` } });
    let before = await newestLog();
    const res = await ai.models.generateContent({ model, contents: 'Say hi' });
    assert.equal(res.text, TEXT);
    assert.equal(res.candidates[0].finishReason, 'STOP');
    assert.equal(res.usageMetadata.candidatesTokenCount, 3);
    if (kind === 'chatgpt') await assertCodexRequest('gemini, whole', { input: userItem('Say hi') });
    else await assertClaudeRequest('gemini, whole', { stream: false });
    let row = await loggedAfter(before, { model, stream: false });
    assertRecorded(row, { model, input: res.usageMetadata.promptTokenCount, output: res.usageMetadata.candidatesTokenCount, what: 'gemini, whole' });

    before = row;
    let text = '';
    let usage;
    let finish;
    for await (const chunk of await ai.models.generateContentStream({ model, contents: 'Say hi' })) {
      text += chunk.text ?? '';
      if (chunk.usageMetadata) usage = chunk.usageMetadata;
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
    }
    assert.equal(text, TEXT);
    assert.equal(finish, 'STOP');
    assert.equal(usage.candidatesTokenCount, 3);
    if (kind === 'chatgpt') await assertCodexRequest('gemini, stream', { input: userItem('Say hi') });
    else await assertClaudeRequest('gemini, stream', { stream: true });
    row = await loggedAfter(before, { model, stream: true });
    assertRecorded(row, { model, input: usage.promptTokenCount, output: usage.candidatesTokenCount, what: 'gemini, stream' });
  });
}

test('the Codex endpoint of the mock refuses what the real one does: a request not streamed, stored, or without instructions', async () => {
  const url = `${mock.url}/backend-api/codex/responses`;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${CODEX_ACCESS}`, 'chatgpt-account-id': `acct-${RUN}` };
  const ok = { model: 'gpt-5', instructions: 'x', input: 'hi', stream: true, store: false };
  for (const [body, detail] of [
    [{ ...ok, stream: false }, 'Stream must be set to true'],
    [{ ...ok, stream: undefined }, 'Stream must be set to true'],
    [{ ...ok, store: undefined }, 'Store must be set to false'],
    [{ ...ok, store: true }, 'Store must be set to false'],
    [{ ...ok, instructions: undefined }, 'Instructions are required'],
    [{ ...ok, max_output_tokens: 10 }, 'Unsupported parameter: max_output_tokens'],
  ]) {
    const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    assert.equal(r.status, 400, detail);
    assert.deepEqual(await r.json(), { detail });
  }
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify(ok) });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/event-stream/);
});

test('an account whose usage window is used up is cooled down until its reset; the pool serves from the other', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  await control('exhaust', { token: A_FAR, reset_after_s: 900 });
  const before = await subStats();
  for (let i = 0; i < 6; i++) {
    const msg = await client.messages.create({ model: 'pool-1', max_tokens: 16, messages: [{ role: 'user', content: `n${i}` }] });
    assert.equal(msg.type, 'message');
  }
  const after = await subStats();
  // The used-up account answered 429 once; after that it rests and is not asked again.
  assert.equal(after.limited - before.limited, 1, JSON.stringify(after));
  const [a, b] = await keyHealth(gw, 'pool');
  const cooled = [a, b].find((k) => k.state === 'cooling');
  assert.ok(cooled, JSON.stringify([a, b]));
  const resetIn = cooled.cooldown_until_ms - Date.now();
  assert.ok(resetIn > 800_000 && resetIn <= 900_000, `cooled until the window's reset, ${resetIn} ms away`);
  assert.equal([a, b].filter((k) => k.state === 'active').length, 1);
});

test('a revoked refresh token disables its key with a reason to sign in again; requests fail over to the other account', async () => {
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  for (let i = 0; i < 4; i++) {
    const msg = await client.messages.create({ model: 'rev-1', max_tokens: 16, messages: [{ role: 'user', content: `r${i}` }] });
    assert.equal(msg.type, 'message');
  }
  const keys = await keyHealth(gw, 'revoking');
  const off = keys.find((k) => k.state === 'disabled');
  assert.ok(off, JSON.stringify(keys));
  assert.match(off.reason, /sign in again/);
  assert.match(off.reason, /claude \/login/);
  const s = await subStats();
  assert.ok(s.refused >= 1);
  assert.equal(s.reused, 0, 'no refresh token was ever presented twice');
});

test('secrets never appear in admin answers or logs', async () => {
  const s = await subStats();
  const seen = [...SECRETS, s.last_bearer].filter(Boolean);
  const answers = [];
  for (const path of ['/channels', '/upstream-keys', '/config', '/logs?limit=100']) {
    const r = await admin(gw, path);
    answers.push(`${path}: ${await r.text()}`);
  }
  const everything = answers.join('\n') + '\n' + gw.proc.output;
  for (const secret of seen) assert.ok(!everything.includes(secret), `a token leaked: ${secret.slice(0, 16)}...`);
  assert.ok(!/sk-ant-o[ar]t01-mock-/.test(everything), 'a refreshed token leaked');
});

test('pasted credentials through the admin API: sealed, masked, checked (attack table), and served', async () => {
  const created = await admin(gw, '/channels', {
    method: 'POST',
    body: {
      name: 'pasted', type: 'anthropic', base_url: mock.url, models: ['pasted-*'],
      subscription: 'claude', token_url: `${mock.url}/v1/oauth/token`,
    },
  });
  assert.equal(created.status, 201, await created.clone().text());
  const ch = await created.json();
  assert.equal(ch.subscription, 'claude');
  const SEC = `SECRET-${RUN}`;
  const bad = [
    ['not JSON', `{"claudeAiOauth": ${SEC}`, /JSON object/],
    ['an array', [SEC], /credential file's JSON/],
    ['a number', 42, /credential file's JSON/],
    ['another CLI', { tokens: { access_token: SEC, refresh_token: 'r', account_id: 'a' } }, /Claude Code/],
    ['CRLF in the access token', { claudeAiOauth: { accessToken: `${SEC}\r\nX-Injected: 1`, refreshToken: 'r' } }, /header cannot carry/],
    ['a space in the token', { claudeAiOauth: { accessToken: `${SEC} x`, refreshToken: 'r' } }, /header cannot carry/],
    ['NUL in the refresh token', { claudeAiOauth: { accessToken: 'a', refreshToken: `${SEC}\u0000` } }, /refresh token/],
    ['non-ASCII refresh token', { claudeAiOauth: { accessToken: 'a', refreshToken: `${SEC}\u00e9` } }, /refresh token/],
    ['no refresh token, no expiry', { claudeAiOauth: { accessToken: SEC } }, /cannot be kept signed in/],
    ['tokens of the wrong type', { claudeAiOauth: { accessToken: 7, refreshToken: { x: SEC } } }, /Claude Code/],
    ['nested too deep', '['.repeat(5000), /JSON object/],
    ['huge', { claudeAiOauth: { accessToken: 'a'.repeat(40000), refreshToken: 'r' } }, /longer than|header cannot carry|too long/],
  ];
  for (const [what, secret, says] of bad) {
    const r = await admin(gw, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret } });
    const text = await r.text();
    assert.equal(r.status, 400, `${what}: ${text}`);
    assert.match(JSON.parse(text).error.message, says, what);
    assert.ok(!text.includes(SEC), `${what}: the answer quotes the secret`);
  }
  assert.equal((await (await admin(gw, `/channels/${ch.id}/keys`)).json()).data.length, 0, 'nothing was stored');
  const access = `sk-ant-oat01-pasted-${RUN}`;
  const good = JSON.parse(claudeFile({ access, refresh: `sk-ant-ort01-pasted-${RUN}`, expiresInS: 86400 }));
  const added = await admin(gw, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret: good } });
  assert.equal(added.status, 201, await added.clone().text());
  const key = await added.json();
  assert.equal(key.masked, '{credential}');
  const client = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  await waitFor(async () => {
    try {
      await client.messages.create({ model: 'pasted-1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
      return true;
    } catch { return false; }
  }, 5000, 100);
  assert.equal((await subStats()).last_bearer, access, 'the pasted access token is what went upstream');
  const listed = await (await admin(gw, `/channels/${ch.id}/keys`)).text();
  assert.ok(!listed.includes(access) && !listed.includes(`sk-ant-ort01-pasted-${RUN}`));
  // The audit row of the write holds no secret either.
  const audit = await (await admin(gw, '/audit?limit=50')).text();
  assert.ok(!audit.includes(access) && !audit.includes(SEC));
  // The gateway still serves after all that.
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
});

test('a config whose subscription key is not a credential is refused, naming the key by position only', async () => {
  const d = tempDir();
  const file = join(d, 'bad.yaml');
  const SEC = `SECRET-${RUN}`;
  writeFileSync(file, `store:\n  url: "sqlite://${join(d, 'x.db')}"\n  secret_key: "${SECRET_KEY}"\n` +
    `channels:\n  - name: c\n    type: anthropic\n    subscription: claude\n    keys: ['{"claudeAiOauth":{"accessToken":"${SEC} x","refreshToken":"r"}}']\n    models: ["a"]\n`);
  const r = spawnSync(BIN, ['check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr + r.stdout, /keys\[0\]: not a claude credential/);
  assert.ok(!(r.stderr + r.stdout).includes(SEC));
  writeFileSync(file, `channels:\n  - name: c\n    type: openai\n    subscription: claude\n    keys: ["${join(d, 'missing.json')}"]\n    models: ["a"]\n`);
  const r2 = spawnSync(BIN, ['check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r2.status, 0);
  assert.match(r2.stderr + r2.stdout, /a claude subscription is a channel of type anthropic/);
});

test('the detector works: two instances that do not share a store spend the same refresh token twice, and the mock says so', async () => {
  // Each instance with its own SQLite file: no shared credential row, no shared lease.
  const shared = claudeFile({ access: `sk-ant-oat01-split-${RUN}`, refresh: `sk-ant-ort01-split-${RUN}`, expiresInS: 1 });
  const yaml = (n) => `store:\n  url: "sqlite://${join(dir, `split-${n}.db`)}"\n  secret_key: "${SECRET_KEY}"\n` +
    gatewayYaml({ channels: [] }) +
    subscriptionChannel({ name: 'split', kind: 'claude', keys: [JSON.stringify(JSON.parse(shared))], models: ['split-*'] });
  const g1 = await startGateway(yaml(1));
  const g2 = await startGateway(yaml(2));
  try {
    const before = await subStats();
    await Promise.all([g1, g2].map(async (g) => {
      const client = new Anthropic({ baseURL: `${g.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
      try {
        await client.messages.create({ model: 'split-1', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] });
      } catch { /* the loser's key is disabled: no other key to fail over to */ }
    }));
    const after = await subStats();
    assert.equal(after.reused - before.reused, 1, 'the second instance presented the spent refresh token');
    const states = (await Promise.all([g1, g2].map((g) => keyHealth(g, 'split')))).flat().map((k) => k.state).sort();
    assert.deepEqual(states, ['active', 'disabled']);
  } finally {
    await g1.stop();
    await g2.stop();
  }
});

test('two instances sharing one PostgreSQL and one account, hammered across expiries, never spend a refresh token twice', async () => {
  assert.ok(PG, 'SLUICE_TEST_POSTGRES_URL is not set: run this suite through tests/scripts/with-postgres.sh (tests/run.sh does)');
  const redis = await startRedis();
  // Issued access tokens live 4 s: refreshed 2 s before expiry, many times during the run.
  await control('config', { ttl_s: 4 });
  const shared = claudeFile({ access: `sk-ant-oat01-shared-${RUN}`, refresh: `sk-ant-ort01-shared-${RUN}`, expiresInS: 1 });
  const yaml = `store:\n  url: "${PG}"\n  secret_key: "${SECRET_KEY}"\nredis:\n  url: "${redis.url}"\n` +
    gatewayYaml({ channels: [] }) +
    subscriptionChannel({ name: 'shared', kind: 'claude', keys: [JSON.stringify(JSON.parse(shared))], models: ['shared-*'] });
  const g1 = await startGateway(yaml);
  const g2 = await startGateway(yaml);
  try {
    const before = await subStats();
    const statuses = [];
    const until = Date.now() + 9000;
    const worker = async (g, i) => {
      const client = new Anthropic({ baseURL: `${g.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
      let n = 0;
      while (Date.now() < until) {
        try {
          await client.messages.create({ model: 'shared-1', max_tokens: 8, messages: [{ role: 'user', content: `w${i}-${n++}` }] });
          statuses.push(200);
        } catch (e) {
          statuses.push(e.status ?? String(e));
        }
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map((i) => worker(i % 2 ? g2 : g1, i)));
    const after = await subStats();
    const failed = statuses.filter((s) => s !== 200);
    assert.deepEqual(failed, [], `every request served (${statuses.length} in all)`);
    assert.equal(after.reused - before.reused, 0, 'no refresh token was presented twice');
    assert.equal(after.refused - before.refused, 0);
    assert.equal(after.expired - before.expired, 0, 'no request went out with an expired token');
    assert.ok(after.refreshes - before.refreshes >= 3, `refreshed across several expiries (${after.refreshes - before.refreshes})`);
    for (const g of [g1, g2]) {
      const [k] = await keyHealth(g, 'shared');
      assert.equal(k.state, 'active', JSON.stringify(k));
    }
    for (const g of [g1, g2]) assert.ok(!/sk-ant-o[ar]t01-(mock|shared)-/.test(g.proc.output), 'a token in the log');
  } finally {
    await control('config', { ttl_s: 3600 });
    await g1.stop();
    await g2.stop();
    await redis.proc.kill('SIGTERM');
  }
});
