// The Responses API's WebSocket mode through the official `openai` npm SDK's own client for it
// (`ResponsesWS` from openai/resources/responses/ws), given only the gateway's base URL and a
// virtual key: turns chained with previous_response_id on an openai channel (native) and on an
// anthropic and a gemini channel (translated), the SDK's typed events, and an error event that the
// SDK reports to its `error` listener while the socket keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import { startMock, startGateway, createKey } from '../lib/harness.mjs';

let mock, gw, client;

before(async () => {
  mock = await startMock(['--chunks', '3']);
  gw = await startGateway({ channels: [
    { name: 'oa', type: 'openai', url: mock.url, models: ['gpt-4o-mini'] },
    { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-sonnet-4-5'] },
    { name: 'ge', type: 'gemini', base_url: mock.url, models: ['gemini-2.5-flash'] },
  ] });
  const key = await createKey(gw, { name: 'ws-sdk' });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key.secret, maxRetries: 0 });
});
after(async () => {
  await gw?.stop();
  await mock?.stop();
});

// An open ResponsesWS whose turn() sends one response.create and resolves with the SDK's events
// up to the turn's end (response.completed or failed), or with the error the SDK reported.
async function open() {
  const rws = new ResponsesWS(client);
  await new Promise((resolve, reject) => {
    rws.socket.once('open', resolve);
    rws.socket.once('error', reject);
  });
  let current = null;
  rws.on('event', (e) => {
    if (!current) return;
    current.events.push(e);
    if (e.type === 'response.completed' || e.type === 'response.failed') { const c = current; current = null; c.resolve(c); }
  });
  rws.on('error', (err) => {
    if (!current) return;
    const c = current; current = null; c.error = err; c.resolve(c);
  });
  return {
    rws,
    turn(body) {
      return new Promise((resolve) => {
        current = { events: [], resolve };
        rws.send({ type: 'response.create', ...body });
      });
    },
    close() {
      return new Promise((resolve) => { rws.socket.once('close', (code) => resolve(code)); rws.close(); });
    },
  };
}

const textOf = (events) => events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');

for (const [model, upstreamPath] of [
  ['gpt-4o-mini', '/v1/responses'],
  ['claude-sonnet-4-5', '/v1/messages'],
  ['gemini-2.5-flash', '/v1beta/models/gemini-2.5-flash:streamGenerateContent'],
]) {
  test(`openai SDK ResponsesWS -> ${model}: two turns on one socket, chained with previous_response_id`, async () => {
    const s = await open();
    const a = await s.turn({ model, input: 'Say hi', store: false });
    assert.equal(a.error, undefined, a.error?.message);
    assert.deepEqual([a.events[0].type, a.events.at(-1).type], ['response.created', 'response.completed']);
    assert.match(textOf(a.events), /Hello/);
    const first = a.events.at(-1).response;
    assert.match(first.id, /^resp_/);
    assert.equal(first.status, 'completed');
    assert.ok(first.usage.output_tokens > 0, 'usage in the completed event');

    // Only the new input: the gateway sends the provider the whole conversation.
    const b = await s.turn({ model, input: 'Again, please', store: false, previous_response_id: first.id });
    assert.equal(b.error, undefined, b.error?.message);
    assert.equal(b.events.at(-1).type, 'response.completed');
    const last = (await mock.stats()).last_request;
    assert.ok(last.path.startsWith(upstreamPath), `${last.path} is not ${upstreamPath}`);
    const sent = JSON.stringify(last.body);
    for (const piece of ['Say hi', 'Hello from sluice', 'Again, please']) assert.ok(sent.includes(piece), `${piece} missing upstream: ${sent}`);
    assert.equal(await s.close(), 1000);
  });
}

test('openai SDK ResponsesWS: an error event reaches the SDK\'s error listener and the socket serves the next turn', async () => {
  const s = await open();
  const bad = await s.turn({ model: 'no-such-model', input: 'x' });
  assert.ok(bad.error, 'the SDK reported an error');
  assert.equal(bad.error.error?.type, 'error');
  assert.equal(bad.error.error?.status, 404);
  assert.equal(bad.error.error?.error?.code, 'model_not_found', JSON.stringify(bad.error.error));
  const ok = await s.turn({ model: 'gpt-4o-mini', input: 'Say hi' });
  assert.equal(ok.error, undefined, ok.error?.message);
  assert.equal(ok.events.at(-1).type, 'response.completed');
  assert.equal(await s.close(), 1000);
});
