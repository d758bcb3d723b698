// Relaying through the gateway: streaming and not, usage handling, models, pinning, logs, metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, chat, readSse, metrics, waitForAccessLine, MASTER } from '../lib/harness.mjs';

let mock, gw;
before(async () => {
  mock = await startMock(['--chunks', '5']);
  gw = await startGateway({ channels: [
    { name: 'main', url: mock.url, keys: ['sk-upstream-main-1'], models: ['gpt-4o-mini', 'mock-*'] },
    { name: 'other', url: mock.url, keys: ['sk-upstream-other-1'], models: ['other-model'] },
  ] });
});
after(async () => { await gw?.stop(); await mock?.stop(); });

test('non-streaming chat completion is relayed with its usage and routing headers', async () => {
  const res = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'main');
  assert.equal(res.headers.get('x-sluice-attempts'), '1');
  assert.match(res.headers.get('x-request-id'), /^req_[0-9a-f]{16}$/);
  assert.ok(res.headers.get('x-upstream-request-id'), "the provider's own request id is kept");
  const body = await res.json();
  assert.equal(body.object, 'chat.completion');
  assert.equal(body.model, 'gpt-4o-mini');
  assert.ok(body.choices[0].message.content.length > 0);
  assert.ok(body.usage.prompt_tokens > 0);
});

test('streaming relays every chunk and [DONE]; the usage chunk the gateway asked for is removed', async () => {
  await mock.reset();
  const res = await chat(gw, { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /text\/event-stream/);
  const { text, events } = await readSse(res);
  assert.equal(events.at(-1), '[DONE]');
  const chunks = events.slice(0, -1);
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
  assert.ok(chunks.every((c) => c.choices.length > 0), 'no usage-only chunk reaches a client that did not ask');
  assert.ok(!text.includes('"usage"'), 'no usage:null fields either');
  const content = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
  assert.ok(content.length > 0);
  // ...but the gateway did ask upstream, so it can count tokens.
  const stats = await mock.stats();
  assert.equal(stats.last_request.body.stream_options.include_usage, true);
  const id = res.headers.get('x-request-id');
  const line = await waitForAccessLine(gw, (l) => l.request_id === id);
  assert.ok(line.output_tokens > 0, 'usage counted from the stream');
});

test('a client that asks for usage gets the usage chunk untouched', async () => {
  const res = await chat(gw, { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'hi' }] });
  const { events } = await readSse(res);
  const usage = events.filter((e) => e !== '[DONE]' && e.usage);
  assert.equal(usage.length, 1);
  assert.deepEqual(usage[0].choices, []);
  assert.ok(usage[0].usage.completion_tokens > 0);
});

test('the upstream key is the channel key, never the client key', async () => {
  await mock.reset();
  await (await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })).json();
  const stats = await mock.stats();
  assert.deepEqual(Object.keys(stats.by_key), ['sk-upstream-main-1']);
  assert.ok(!JSON.stringify(stats).includes(MASTER));
});

test('CHANNEL/MODEL pins a channel and sends the bare model name upstream', async () => {
  await mock.reset();
  const res = await chat(gw, { model: 'other/other-model', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'other');
  await res.json();
  const stats = await mock.stats();
  assert.equal(stats.last_request.body.model, 'other-model');
  assert.deepEqual(Object.keys(stats.by_key), ['sk-upstream-other-1']);
});

test('glob models match; /v1/models lists exact names and CHANNEL/MODEL forms', async () => {
  const res = await chat(gw, { model: 'mock-anything', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.status, 200);
  await res.text();
  const list = await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${MASTER}` } })).json();
  assert.equal(list.object, 'list');
  const ids = list.data.map((m) => m.id);
  for (const id of ['gpt-4o-mini', 'main/gpt-4o-mini', 'other-model', 'other/other-model']) assert.ok(ids.includes(id), id);
});

test('completions and embeddings are relayed', async () => {
  const h = { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` };
  const c = await fetch(`${gw.url}/v1/completions`, { method: 'POST', headers: h,
    body: JSON.stringify({ model: 'gpt-4o-mini', prompt: 'Say this is a test' }) });
  assert.equal(c.status, 200);
  assert.equal((await c.json()).object, 'text_completion');
  const e = await fetch(`${gw.url}/v1/embeddings`, { method: 'POST', headers: h,
    body: JSON.stringify({ model: 'mock-embed', input: ['a', 'b'] }) });
  assert.equal(e.status, 200);
  const ej = await e.json();
  assert.equal(ej.data.length, 2);
  assert.ok(Array.isArray(ej.data[0].embedding));
});

test('other auth styles work: x-api-key, x-goog-api-key, ?key=', async () => {
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
  for (const [url, headers] of [
    [`${gw.url}/v1/chat/completions`, { 'x-api-key': MASTER }],
    [`${gw.url}/v1/chat/completions`, { 'x-goog-api-key': MASTER }],
    [`${gw.url}/v1/chat/completions?key=${MASTER}`, {}],
  ]) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    assert.equal(res.status, 200, JSON.stringify(headers));
    await res.text();
  }
});

test('every request leaves one access-log line without secrets, and /metrics counts it', async () => {
  const before = gw.accessLines().length;
  const res = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
  const id = res.headers.get('x-request-id');
  await res.text();
  const line = await waitForAccessLine(gw, (l) => l.request_id === id);
  assert.ok(line, 'access line present');
  assert.ok(gw.accessLines().length > before);
  for (const k of ['channel', 'model', 'status', 'attempts', 'ttfb_ms', 'duration_ms', 'input_tokens', 'output_tokens'])
    assert.ok(k in line, k);
  assert.equal(line.channel, 'main');
  assert.ok(!gw.proc.output.includes('sk-upstream-main-1'), 'upstream key never logged');
  assert.ok(!gw.proc.output.includes(MASTER), 'master key never logged');
  const m = await metrics(gw);
  assert.match(m, /sluice_requests_total\{channel="main",model="gpt-4o-mini",status="200"\} \d+/);
  assert.match(m, /sluice_ttfb_seconds_bucket\{channel="main",le="\+Inf"\} \d+/);
  assert.match(m, /sluice_request_duration_seconds_count\{channel="main"\} \d+/);
  assert.match(m, /sluice_active_streams \d+/);
  assert.match(m, /sluice_upstream_key_state\{channel="main",key="[^"]+",state="active"\} 1/);
});

test('healthz and HEAD / answer without auth', async () => {
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
  assert.equal((await fetch(`${gw.url}/`, { method: 'HEAD' })).status, 200);
});

test('40 concurrent streams on keep-alive connections all complete', async () => {
  const results = await Promise.all(Array.from({ length: 40 }, async () => {
    const r = await chat(gw, { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const { events } = await readSse(r);
    return events.at(-1);
  }));
  assert.ok(results.every((e) => e === '[DONE]'));
});
