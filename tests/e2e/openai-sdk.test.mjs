// The official `openai` npm SDK, pointed at sluice with only baseURL and apiKey changed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startMock, startGateway, MASTER } from '../lib/harness.mjs';

let mock, flaky, gw, client;
before(async () => {
  mock = await startMock(['--chunks', '6']);
  flaky = await startMock(['--fail-rate', '0.5', '--fail-status', '502']);
  gw = await startGateway({ channels: [
    { name: 'flaky', url: flaky.url, models: ['gpt-4o-mini', 'text-embedding-3-small'], priority: 1 },
    { name: 'mock', url: mock.url, models: ['gpt-4o-mini', 'text-embedding-3-small', 'mock-*'], priority: 1 },
  ] });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
});
after(async () => { await gw?.stop(); await mock?.stop(); await flaky?.stop(); });

test('chat.completions.create', async () => {
  for (let i = 0; i < 10; i++) {
    const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi' }] });
    assert.equal(r.object, 'chat.completion');
    assert.ok(r.choices[0].message.content.length > 0);
    assert.ok(r.usage.total_tokens > 0);
  }
});

test('streaming with the SDK iterator, with and without include_usage', async () => {
  for (let i = 0; i < 10; i++) {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true,
      messages: [{ role: 'user', content: 'Say hi' }] });
    let text = '', chunks = 0, sawUsage = false;
    for await (const c of stream) {
      chunks++;
      if (c.usage) sawUsage = true;
      text += c.choices[0]?.delta?.content ?? '';
    }
    assert.ok(chunks >= 6);
    assert.ok(text.length > 0);
    assert.equal(sawUsage, false);
  }
  const s2 = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true,
    stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Say hi' }] });
  let usage;
  for await (const c of s2) if (c.usage) usage = c.usage;
  assert.ok(usage.completion_tokens > 0);
});

test('withResponse exposes the routing headers', async () => {
  const { response } = await client.chat.completions
    .create({ model: 'mock/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).withResponse();
  assert.equal(response.headers.get('x-sluice-channel'), 'mock');
});

test('embeddings.create (float and base64, which the SDK decodes)', async () => {
  const r = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['hello', 'world'] });
  assert.equal(r.data.length, 2);
  assert.ok(r.data[0].embedding.length > 0);
  assert.ok(r.data[0].embedding.every((x) => typeof x === 'number'));
});

test('models.list', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes('gpt-4o-mini'));
  assert.ok(ids.includes('mock/gpt-4o-mini'));
});

test('errors surface as the SDK\'s typed errors', async () => {
  const bad = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create({ model: 'gpt-4o-mini', messages: [] }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  await assert.rejects(client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && /nope/.test(e.message));
});

test('a stream broken mid-way makes the SDK throw, not hang', async () => {
  const stream = await client.chat.completions.create({ model: 'mock/gpt-4o-mini', stream: true,
    messages: [{ role: 'user', content: 'x' }] }, { headers: { 'x-mock-reset-after': '2' } });
  await assert.rejects(async () => { for await (const _ of stream) { /* drain */ } }, (e) => /mid-stream|broke/.test(e.message));
});
