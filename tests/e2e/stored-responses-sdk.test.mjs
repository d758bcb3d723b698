// Stored responses through the official `openai` npm SDK: responses.create with store: true,
// retrieve, inputItems.list, delete, and previous_response_id on a translated model (an
// anthropic channel: the gateway keeps the conversation and sends it whole).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { NotFoundError, BadRequestError } from 'openai';
import WebSocket from 'ws';
import { startGateway, gatewayYaml, createKey, MASTER } from '../lib/harness.mjs';
import { startRecordingUpstream } from '../lib/recording-upstream.mjs';

let up, gw, client, other, secret;
before(async () => {
  up = await startRecordingUpstream();
  gw = await startGateway(gatewayYaml({ channels: [
    { name: 'oa', type: 'openai', url: up.url, models: ['gpt-*'] },
    { name: 'an', type: 'anthropic', base_url: up.url, models: ['claude-*'] },
  ] }));
  const key = await createKey(gw, { name: 'sdk' });
  secret = key.secret;
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key.secret, maxRetries: 0 });
  other = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
});
after(async () => { await gw?.stop(); await up?.stop(); });

const text = (r) => r.output_text;

test('create, retrieve, inputItems.list and delete on a translated model', async () => {
  const r = await client.responses.create({ model: 'claude-sonnet-4', input: 'Say hi', store: true });
  assert.match(r.id, /^resp_/);
  assert.ok(text(r).length > 0);
  const got = await client.responses.retrieve(r.id);
  assert.equal(got.id, r.id);
  assert.equal(got.output_text, r.output_text);
  const items = [];
  for await (const item of client.responses.inputItems.list(r.id)) items.push(item);
  assert.equal(items.length, 1);
  assert.equal(items[0].role, 'user');
  assert.equal(items[0].content[0].text, 'Say hi');
  await assert.rejects(other.responses.retrieve(r.id), NotFoundError, 'another key does not see it');
  await client.responses.delete(r.id);
  await assert.rejects(client.responses.retrieve(r.id), NotFoundError);
});

test('previous_response_id across a translated model, streamed and not', async () => {
  const first = await client.responses.create({ model: 'gpt-4o-mini', input: 'My name is Ada.' });
  up.clear();
  const stream = await client.responses.create({ model: 'claude-sonnet-4', previous_response_id: first.id,
    input: 'What is my name?', stream: true });
  let done;
  for await (const e of stream) if (e.type === 'response.completed') done = e.response;
  assert.ok(done?.id);
  const sent = JSON.parse(up.requests().find((q) => q.target.endsWith('/v1/messages')).body);
  assert.equal(sent.messages.length, 3, 'the provider got the whole conversation');
  assert.match(JSON.stringify(sent.messages[0]), /My name is Ada\./);
  const third = await client.responses.create({ model: 'claude-sonnet-4', previous_response_id: done.id, input: 'Thanks.' });
  assert.equal((await client.responses.retrieve(third.id)).previous_response_id, done.id);
  const items = await client.responses.inputItems.list(third.id, { order: 'asc' });
  assert.equal(items.data.length, 5);
  await assert.rejects(client.responses.create({ model: 'claude-sonnet-4', previous_response_id: 'resp_nope', input: 'x' }),
    (e) => e instanceof BadRequestError && e.code === 'previous_response_not_found');
});

test('a WebSocket turn continues a stored response its socket never saw', async () => {
  const first = await client.responses.create({ model: 'claude-sonnet-4', input: 'Remember the word: kestrel.' });
  const ws = new WebSocket(gw.url.replace(/^http/, 'ws') + '/v1/responses', { headers: { authorization: `Bearer ${secret}` } });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const turn = (msg) => new Promise((resolve) => {
    const onMessage = (data) => {
      const m = JSON.parse(data.toString());
      if (['response.completed', 'response.failed', 'error'].includes(m.type)) { ws.off('message', onMessage); resolve(m); }
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify(msg));
  });
  up.clear();
  const done = await turn({ type: 'response.create', model: 'claude-sonnet-4', previous_response_id: first.id, input: 'Which word?' });
  assert.equal(done.type, 'response.completed', JSON.stringify(done));
  const sent = JSON.parse(up.requests().find((q) => q.target.endsWith('/v1/messages')).body);
  assert.equal(sent.messages.length, 3);
  assert.match(JSON.stringify(sent.messages[0]), /kestrel/);
  // Stored (store defaults to true), so the next turn chains from it as well, and a POST too.
  const next = await turn({ type: 'response.create', model: 'claude-sonnet-4', previous_response_id: done.response.id, input: 'Spell it.' });
  assert.equal(next.type, 'response.completed');
  const items = await client.responses.inputItems.list(next.response.id);
  assert.equal(items.data.length, 5);
  // Another key's id is not found, and the socket keeps serving.
  const foreign = await other.responses.create({ model: 'claude-sonnet-4', input: 'of the master key' });
  const refused = await turn({ type: 'response.create', model: 'claude-sonnet-4', previous_response_id: foreign.id, input: 'x' });
  assert.equal(refused.type, 'error');
  assert.equal(refused.status, 400);
  assert.equal(refused.error.code, 'previous_response_not_found');
  assert.equal((await turn({ type: 'response.create', model: 'claude-sonnet-4', input: 'still here' })).type, 'response.completed');
  ws.close();
});
