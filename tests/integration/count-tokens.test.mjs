// Token counting for a model whose provider cannot count (OpenAI has no count call): Anthropic's
// /v1/messages/count_tokens and Gemini's countTokens answer with an estimate marked
// x-sluice-token-count: estimate, never 0, and nothing goes upstream. A model on a channel of
// the client's own format is counted by the provider as before.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, MASTER } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });

const anthropicHeaders = { 'x-api-key': MASTER, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };

test('count_tokens and countTokens on an OpenAI channel: an estimate, marked, nothing sent upstream', async () => {
  const mock = await startMock(); started.push(mock);
  const gw = await startGateway({ channels: [
    { name: 'oa', type: 'openai', url: mock.url, models: ['gpt-4o'] },
    { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-sonnet-4-5'] },
  ] }); started.push(gw);
  const text = 'Hello there, how are you doing today? '.repeat(10);  // 380 bytes: 95 tokens + 3
  const r = await fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders,
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] }) });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-sluice-token-count'), 'estimate');
  assert.deepEqual(await r.json(), { input_tokens: 98 });

  const g = await fetch(`${gw.url}/v1beta/models/gpt-4o:countTokens`, { method: 'POST',
    headers: { 'x-goog-api-key': MASTER, 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text }] }] }) });
  assert.equal(g.status, 200);
  assert.equal(g.headers.get('x-sluice-token-count'), 'estimate');
  assert.deepEqual(await g.json(), { totalTokens: 98 });
  assert.equal((await mock.stats()).requests, 0, 'nothing went upstream');

  // A channel of the client's format counts natively: no estimate header.
  const n = await fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders,
    body: JSON.stringify({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: text }] }) });
  assert.equal(n.status, 200);
  assert.equal(n.headers.get('x-sluice-token-count'), null);
  assert.ok((await n.json()).input_tokens > 0);
  assert.equal((await mock.stats()).requests, 1);
});

test('hostile count requests: refused in the caller\'s format, the gateway keeps serving', async () => {
  const mock = await startMock(); started.push(mock);
  const gw = await startGateway({ channels: [{ name: 'oa', type: 'openai', url: mock.url, models: ['gpt-*'] }] }); started.push(gw);
  const cases = [
    ['not json', 400],
    [JSON.stringify([1, 2]), 400],
    [JSON.stringify({ model: 'gpt-4o/../../admin', messages: [] }), 400],
    [JSON.stringify({ model: 'no-such-model', messages: [] }), 404],
  ];
  for (const [body, status] of cases) {
    const r = await fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders, body });
    assert.equal(r.status, status, body);
    const j = await r.json();
    assert.equal(j.type, 'error', `Anthropic's error shape for ${body}`);
  }
  const ok = await fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders,
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x'.repeat(1000) }] }) });
  assert.deepEqual(await ok.json(), { input_tokens: 253 });
  assert.equal((await mock.stats()).requests, 0);
});
