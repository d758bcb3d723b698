// Native passthrough: a client reaching a channel of its own format keeps every field, header
// and query parameter it sent; the gateway's own errors come in the client's format.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, readSse, MASTER } from '../lib/harness.mjs';

let mock, gw;
before(async () => {
  mock = await startMock(['--chunks', '4']);
  gw = await startGateway({ channels: [
    { name: 'an', type: 'anthropic', base_url: mock.url, keys: ['sk-ant-upstream-0001'], models: ['claude-*', 'claude-sonnet-4-5'] },
    { name: 'ge', type: 'gemini', base_url: mock.url, keys: ['AIza-upstream-0001'], models: ['gemini-*', 'gemini-2.5-flash'] },
    { name: 'oa', type: 'openai', url: mock.url, keys: ['sk-oa-upstream-0001'], models: ['gpt-*'] },
  ] });
});
after(async () => { await gw?.stop(); await mock?.stop(); });

test('Anthropic passthrough keeps unknown fields, anthropic-beta and ?beta=true, and swaps the key', async () => {
  await mock.reset();
  const body = { model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }],
    context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] }, metadata: { user_id: 'u1' } };
  const res = await fetch(`${gw.url}/v1/messages?beta=true`, { method: 'POST', body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', 'x-api-key': MASTER, 'anthropic-version': '2023-06-01',
      'anthropic-beta': 'context-management-2025-06-27' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'an');
  const { text } = await readSse(res).catch(async () => ({ text: '' }));
  assert.match(text, /event: message_stop/);
  const s = await mock.stats();
  const last = s.last_request;
  assert.deepEqual(last.body.context_management, body.context_management);
  assert.deepEqual(last.body.metadata, body.metadata);
  assert.equal(last.headers['anthropic-beta'], 'context-management-2025-06-27');
  assert.equal(last.headers['x-api-key'], 'sk-ant-upstream-0001');
  assert.equal(last.path, '/v1/messages');
  assert.equal(last.query, 'beta=true');
  assert.ok(!JSON.stringify(s).includes(MASTER));
});

test('Gemini passthrough: model from the path, key from the channel, the client key= removed', async () => {
  await mock.reset();
  const res = await fetch(`${gw.url}/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=${MASTER}`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { thinkingConfig: { thinkingBudget: 0 } } }) });
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.match(text, /^data: /);
  const s = await mock.stats();
  assert.deepEqual(Object.keys(s.by_key), ['AIza-upstream-0001']);
  assert.deepEqual(s.last_request.body.generationConfig, { thinkingConfig: { thinkingBudget: 0 } });
  assert.equal(s.last_request.query, 'alt=sse');
  assert.ok(!JSON.stringify(s).includes(MASTER), 'the client key never reaches the provider');
});

test("the gateway's own errors come in each client's format", async () => {
  const an = await fetch(`${gw.url}/anthropic/v1/messages`, { method: 'POST', body: '{}', headers: { 'x-api-key': 'wrong' } });
  assert.equal(an.status, 401);
  const anb = await an.json();
  assert.equal(anb.type, 'error');
  assert.equal(anb.error.type, 'authentication_error');
  const ge = await fetch(`${gw.url}/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=wrong`, { method: 'POST', body: '{}' });
  assert.equal(ge.status, 401);
  const geb = await ge.json();
  assert.equal(geb.error.status, 'UNAUTHENTICATED');
  assert.equal(geb.error.code, 401);
  const nf = await fetch(`${gw.url}/anthropic/v1/messages`, { method: 'POST', headers: { 'x-api-key': MASTER },
    body: JSON.stringify({ model: 'llama-3', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }) });
  assert.equal(nf.status, 404);
  assert.equal((await nf.json()).error.type, 'not_found_error');
  const badJson = await fetch(`${gw.url}/anthropic/v1/messages`, { method: 'POST', headers: { 'x-api-key': MASTER }, body: '{"model":' });
  assert.equal(badJson.status, 400);
  assert.equal((await badJson.json()).error.type, 'invalid_request_error');
});

test('listings in each format show what the channels serve', async () => {
  const an = await (await fetch(`${gw.url}/anthropic/v1/models`, { headers: { 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' } })).json();
  assert.ok(Array.isArray(an.data) && an.data.every((m) => m.type === 'model'));
  const ge = await (await fetch(`${gw.url}/gemini/v1beta/models?key=${MASTER}`)).json();
  assert.ok(ge.models.some((m) => m.name === 'models/gemini-2.5-flash'));
  const oa = await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${MASTER}` } })).json();
  assert.equal(oa.object, 'list');
});
