// A bedrock channel: the official openai, @anthropic-ai/sdk and @google/genai SDKs as clients of
// sluice, which translates to AWS Converse / ConverseStream, signs each attempt with SigV4 and
// decodes the binary event stream; the upstream is `sluice mock`, which verifies every signature.
// The mock's verifier is proved first by AWS's own SDK (@aws-sdk/client-bedrock-runtime).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
// The SDK streams over HTTP/2 by default; the mock (like the gateway) speaks HTTP/1.1.
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMock, startGateway, gatewayYaml, tempDir, chat, readSse, admin, waitFor, MASTER } from '../lib/harness.mjs';

// Shaped like AWS keys; the secrets hold '/' and '+' as real ones do.
const KEY_A = { id: 'AKIAMOCKKEYAAAAAAAAA', secret: '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' };
const KEY_B = { id: 'AKIAMOCKKEYBBBBBBBBB', secret: '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' };
const TEMP = { id: 'ASIAMOCKTEMPORARYKEY', secret: 'tempSecret/ForSessionTokens+0000000000000', token: 'FwoGZXIvYXdzEXAMPLEsessionTOKEN/with+chars==' };
const SECRETS = [KEY_A.secret, KEY_B.secret, TEMP.secret, TEMP.token];
const awsKey = (k, secret = k.secret) => `${k.id}:${secret}${k.token ? ':' + k.token : ''}`;
const MODEL = 'anthropic.claude-3-5-sonnet-20241022-v2:0';
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

const started = [];
let mock, backup, gw;
const mockArgs = ['--chunks', '5', '--aws-key', awsKey(KEY_A), '--aws-key', awsKey(KEY_B), '--aws-key', awsKey(TEMP)];
before(async () => {
  mock = await startMock(mockArgs);
  backup = await startMock(['--chunks', '3']);
  started.push(mock, backup);
  gw = await startGateway({ channels: [
    { name: 'bedrock', type: 'bedrock', base_url: mock.url, region: 'us-east-1', keys: [awsKey(KEY_A)],
      models: ['anthropic.claude-*', 'us.anthropic.*', 'amazon.nova-*', 'meta.llama*', 'attack-*', 'arn:aws:bedrock:*'],
      priority: 1 },
    { name: 'backup', url: backup.url, models: ['anthropic.claude-*'], priority: 2 },
  ], routing: { max_retries: 2, cooldown_default: '1s' } });  // a throttled key is back within the test
  started.push(gw);
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
const aws = (k, endpoint = mock.url) => new BedrockRuntimeClient({
  region: 'us-east-1', endpoint, maxAttempts: 1, requestHandler: new NodeHttpHandler(),
  credentials: { accessKeyId: k.id, secretAccessKey: k.secret, ...(k.token ? { sessionToken: k.token } : {}) },
});
const converseInput = { modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Say hi' }] }] };

test("the mock's SigV4 verifier: AWS's own SDK passes, a wrong secret, key id or token does not", async () => {
  const ok = await aws(KEY_A).send(new ConverseCommand(converseInput));
  assert.equal(ok.stopReason, 'end_turn');
  assert.ok(ok.output.message.content[0].text.length > 0);
  assert.ok(ok.usage.inputTokens > 0 && ok.usage.outputTokens > 0);
  const st = await mock.stats();
  assert.equal(st.last_request.path, '/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse');

  const streamed = await aws(TEMP).send(new ConverseStreamCommand(converseInput));
  let text = '', stop, usage;
  for await (const ev of streamed.stream) {
    if (ev.contentBlockDelta?.delta?.text) text += ev.contentBlockDelta.delta.text;
    if (ev.messageStop) stop = ev.messageStop.stopReason;
    if (ev.metadata) usage = ev.metadata.usage;
  }
  assert.ok(text.length > 0, 'the SDK decoded the mock event stream (its CRCs included)');
  assert.equal(stop, 'end_turn');
  assert.ok(usage.outputTokens > 0);

  for (const [k, name] of [[{ ...KEY_A, secret: KEY_B.secret }, 'InvalidSignatureException'],
    [{ id: 'AKIAUNKNOWNKEY000000', secret: KEY_A.secret }, 'UnrecognizedClientException'],
    [{ ...TEMP, token: 'not-the-token' }, 'UnrecognizedClientException'],
    [{ id: TEMP.id, secret: TEMP.secret }, 'UnrecognizedClientException']]) {
    await assert.rejects(aws(k).send(new ConverseCommand(converseInput)), (e) => {
      assert.equal(e.name, name);
      assert.equal(e.$metadata.httpStatusCode, 403);
      return true;
    });
  }
});

test('openai SDK: plain and streaming text, usage and finish reasons through a bedrock channel', async () => {
  await mock.reset();
  const r = await openai().chat.completions.create({ model: MODEL, messages: [{ role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Say hi' }], max_tokens: 100 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, MODEL);
  assert.ok(r.id.length > 0);
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
  const last = (await mock.stats()).last_request;
  assert.equal(last.path, '/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse');
  assert.match(last.headers.authorization, new RegExp(`^AWS4-HMAC-SHA256 Credential=${KEY_A.id}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=[0-9a-f]{64}$`));
  assert.equal(last.body.inferenceConfig.maxTokens, 100);
  assert.equal(last.body.system[0].text, 'Be brief.');

  const stream = await openai().chat.completions.create({ model: MODEL, stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Say hi' }] });
  let text = '', finish, usage, chunks = 0;
  for await (const c of stream) {
    chunks++;
    text += c.choices[0]?.delta?.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
    if (c.usage) usage = c.usage;
  }
  assert.ok(chunks >= 5);
  assert.ok(text.length > 0);
  assert.equal(finish, 'stop');
  assert.ok(usage.completion_tokens > 0);
  assert.equal((await mock.stats()).last_request.path, '/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse-stream');

  const capped = await openai().chat.completions.create({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'Say hi' }] });
  assert.equal(capped.choices[0].finish_reason, 'length');
});

test('openai SDK: a tool call round trip and an image', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const first = await openai().chat.completions.create({ model: MODEL, tools,
    messages: [{ role: 'user', content: 'Use the get_weather tool for Paris' }] });
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  const call = first.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'example' });
  const upstream = (await mock.stats()).last_request.body;
  assert.equal(upstream.toolConfig.tools[0].toolSpec.name, 'get_weather');

  const second = await openai().chat.completions.create({ model: MODEL, tools, messages: [
    { role: 'user', content: 'Use the get_weather tool for Paris' }, first.choices[0].message,
    { role: 'tool', tool_call_id: call.id, content: 'Sunny, 21C' }] });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.match(second.choices[0].message.content, /The tool returned: Sunny, 21C/);
  const sent = (await mock.stats()).last_request.body.messages;
  assert.equal(sent[1].content[0].toolUse.toolUseId, call.id);
  assert.equal(sent[2].content[0].toolResult.toolUseId, call.id);

  // Streamed tool calls arrive as OpenAI deltas.
  const stream = await openai().chat.completions.create({ model: MODEL, tools, stream: true,
    messages: [{ role: 'user', content: 'Use the get_weather tool for Paris' }] });
  let args = '', name, finish;
  for await (const c of stream) {
    const tc = c.choices[0]?.delta?.tool_calls?.[0];
    if (tc?.function?.name) name = tc.function.name;
    args += tc?.function?.arguments ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(name, 'get_weather');
  assert.deepEqual(JSON.parse(args), { city: 'example' });
  assert.equal(finish, 'tool_calls');

  const img = await openai().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [
    { type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_1PX}` } }] }] });
  assert.ok(img.choices[0].message.content.length > 0);
  const block = (await mock.stats()).last_request.body.messages[0].content[1];
  assert.deepEqual(block, { image: { format: 'png', source: { bytes: PNG_1PX } } });

  // An image by URL cannot go to Bedrock: the client hears why, in its own format.
  await assert.rejects(openai().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [
    { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }] }), (e) => {
    assert.equal(e.status, 400);
    assert.match(e.message, /inline bytes/);
    return true;
  });
});

test('@anthropic-ai/sdk: messages, a stream, and thinking with its signature', async () => {
  const c = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  const m = await c.messages.create({ model: MODEL, max_tokens: 200, messages: [{ role: 'user', content: 'Say hi' }] });
  assert.equal(m.type, 'message');
  assert.equal(m.stop_reason, 'end_turn');
  assert.ok(m.content[0].text.length > 0);
  assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);

  const thought = await c.messages.create({ model: MODEL, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'Say hi' }] });
  assert.equal(thought.content[0].type, 'thinking');
  assert.match(thought.content[0].thinking, /think/);
  assert.ok(thought.content[0].signature.length > 0);
  const fields = (await mock.stats()).last_request.body.additionalModelRequestFields;
  assert.deepEqual(fields.thinking, { type: 'enabled', budget_tokens: 1024 });

  const stream = c.messages.stream({ model: MODEL, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'Say hi' }] });
  let text = '', thinking = '';
  stream.on('text', (t) => { text += t; });
  stream.on('thinking', (t) => { thinking += t; });
  const final = await stream.finalMessage();
  assert.ok(text.length > 0);
  assert.match(thinking, /think/);
  assert.equal(final.stop_reason, 'end_turn');
  assert.ok(final.content.find((b) => b.type === 'thinking').signature.length > 0);
  assert.ok(final.usage.output_tokens > 0);
});

test('@google/genai: generateContent and a stream through a bedrock channel', async () => {
  const ai = new GoogleGenAI({ apiKey: MASTER, httpOptions: { baseUrl: `${gw.url}/gemini` } });
  const r = await ai.models.generateContent({ model: 'amazon.nova-pro-v1:0', contents: 'Say hi' });
  assert.ok(r.text.length > 0);
  assert.equal(r.candidates[0].finishReason, 'STOP');
  assert.ok(r.usageMetadata.candidatesTokenCount > 0);
  assert.equal((await mock.stats()).last_request.path, '/model/amazon.nova-pro-v1%3A0/converse');
  let text = '', chunks = 0;
  for await (const c of await ai.models.generateContentStream({ model: 'meta.llama3-70b-instruct-v1:0', contents: 'Say hi' })) {
    chunks++;
    text += c.text ?? '';
  }
  assert.ok(chunks >= 2);
  assert.ok(text.length > 0);
  assert.equal((await mock.stats()).last_request.path, '/model/meta.llama3-70b-instruct-v1%3A0/converse-stream');
});

// A throttled key cools down (cooldown_default 1s here): wait until the bedrock channel serves again.
async function bedrockServesAgain() {
  const back = await waitFor(async () => {
    const r = await chat(gw, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
    await r.text();
    return r.headers.get('x-sluice-channel') === 'bedrock';
  }, 15000, 100);
  assert.ok(back, 'the bedrock key came back from its cooldown');
}

test('Bedrock errors: throttling fails over, a validation error is the client\'s, exceptions in the stream', async () => {
  // ThrottlingException (429) on the bedrock channel: the backup channel answers, the client sees no error.
  // The knob headers reach every channel tried: x-mock-fail-key aims them at the bedrock key only.
  const only = { 'x-mock-fail-key': KEY_A.id };
  const fail = (status) => ({ ...only, 'x-mock-fail-rate': '1', 'x-mock-fail-status': String(status) });
  let res = await chat(gw, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { headers: fail(429) });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'backup');
  await res.text();
  // ServiceUnavailable (503) and ModelNotReady-style 5xx: the same.
  res = await chat(gw, { model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] }, { headers: fail(503) });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'backup');
  await res.text();
  await bedrockServesAgain();
  // ValidationException (400): the request itself is wrong; the client hears it in its own format.
  res = await chat(gw, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { headers: fail(400) });
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.error.type, 'invalid_request_error');
  assert.match(body.error.message, /not valid/);
  // A throttlingException frame before any content: the attempt fails unseen, the backup answers.
  await bedrockServesAgain();
  res = await chat(gw, { model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] },
    { headers: { ...only, 'x-mock-error-event-rate': '1', 'x-mock-error-event-after': '0', 'x-mock-fail-status': '429' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'backup');
  await res.text();
  await bedrockServesAgain();
  // A modelStreamErrorException after the answer began: the stream ends with the client format's error event.
  res = await chat(gw, { model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] },
    { headers: { 'x-mock-error-event-rate': '1', 'x-mock-error-event-after': '2' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'bedrock');
  let { events } = await readSse(res);
  assert.ok(events.some((e) => e?.choices?.[0]?.delta?.content), 'content came first');
  assert.ok(events.some((e) => e?.error && /modelStreamErrorException/.test(e.error.message)), JSON.stringify(events.slice(-3)));
  // A connection cut mid-stream: the client's stream ends with an error event, as for any provider.
  res = await chat(gw, { model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] },
    { headers: { 'x-mock-reset-after': '2' } });
  assert.equal(res.status, 200);
  ({ events } = await readSse(res));
  assert.ok(events.some((e) => e?.error?.code === 'upstream_stream_broken'), JSON.stringify(events.slice(-2)));
});

test('a ModelErrorException (424) fails over; a bedrock stream cut mid-way is continued on the next channel', async () => {
  const only = { 'x-mock-fail-key': KEY_A.id };
  let res = await chat(gw, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] },
    { headers: { ...only, 'x-mock-fail-rate': '1', 'x-mock-fail-status': '424' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'backup');
  await res.text();
  await bedrockServesAgain();

  const g = await startGateway({ channels: [
    { name: 'bedrock', type: 'bedrock', base_url: mock.url, region: 'us-east-1', keys: [awsKey(KEY_A)],
      models: ['anthropic.claude-*'], priority: 1 },
    { name: 'backup', url: backup.url, models: ['anthropic.claude-*'], priority: 2 },
  ], routing: { max_retries: 2, on_stall: 'continue' } });
  started.push(g);
  res = await chat(g, { model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] },
    { headers: { ...only, 'x-mock-reset-after': '2' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'bedrock');
  const { events } = await readSse(res);
  assert.equal(events.at(-1), '[DONE]');
  assert.ok(!events.some((e) => e?.error), JSON.stringify(events.slice(-3)));
  const text = events.map((e) => e?.choices?.[0]?.delta?.content ?? '').join('');
  assert.ok(text.length > 0);
  assert.equal((await backup.stats()).last_request.body.messages.at(-2).role, 'assistant', 'the backup continued the answer');
});

test('a session token is signed and sent; a key pool with a wrong secret disables that key, the other serves', async () => {
  const m = await startMock(mockArgs);
  started.push(m);
  const g = await startGateway({ channels: [
    { name: 'temp', type: 'bedrock', base_url: m.url, region: 'us-east-1', keys: [awsKey(TEMP)], models: ['temp.*'] },
    { name: 'pool', type: 'bedrock', base_url: m.url, region: 'us-west-2',
      keys: [awsKey(KEY_A, KEY_B.secret), awsKey(KEY_B)], models: ['pool.*'] },
  ], routing: { max_retries: 2 } });
  started.push(g);
  let res = await chat(g, { model: 'temp.model-v1:0', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  const last = (await m.stats()).last_request;
  assert.equal(last.headers['x-amz-security-token'], TEMP.token);
  assert.match(last.headers.authorization, /SignedHeaders=host;x-amz-date;x-amz-security-token,/);

  for (let i = 0; i < 12; i++) {
    res = await chat(g, { model: 'pool.model', stream: i % 2 === 1, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.status, 200, `request ${i}`);
    await res.text();
  }
  const st = await m.stats();
  assert.ok(st.by_key[KEY_B.id] >= 12, JSON.stringify(st.by_key));
  assert.ok(st.by_key[KEY_A.id] >= 1 && st.by_key[KEY_A.id] <= 2, 'the bad key was tried, then left alone');
  const channels = (await (await admin(g, '/channels')).json()).data;
  const pool = channels.find((c) => c.name === 'pool');
  assert.equal(pool.type, 'bedrock');
  assert.equal(pool.region, 'us-west-2');
  const keys = await (await admin(g, '/upstream-keys')).json();
  const bad = keys.data.find((k) => k.channel === 'pool' && k.state === 'disabled');
  assert.ok(bad, JSON.stringify(keys.data));
  assert.match(bad.reason, /403/);
  assert.ok(keys.data.some((k) => k.channel === 'pool' && k.state === 'active'));
  // No secret anywhere: the admin API, the request log, the gateway's output (stdout and stderr).
  const adminText = JSON.stringify(channels) + JSON.stringify(keys) + (await (await admin(g, '/logs?limit=500')).text());
  for (const s of SECRETS) {
    assert.ok(!adminText.includes(s), 'a secret in the admin API');
    assert.ok(!g.proc.output.includes(s), 'a secret in the gateway output');
  }
});

test('a bedrock channel and its key added through the admin API: the key sealed at rest, masked, used signed', async () => {
  const dir = tempDir();
  const db = join(dir, 'sluice.db');
  const g = await startGateway(`store:\n  url: "sqlite://${db}"\n  secret_key: "bedrock-test-store-key-0123456789abcdef"\n` +
    gatewayYaml({ channels: [{ name: 'yaml', url: backup.url, models: ['gpt-4o-mini'] }] }));
  started.push(g);
  let r = await admin(g, '/channels', { method: 'POST', body: { name: 'db-bedrock', type: 'bedrock', base_url: mock.url,
    region: 'us-east-1', models: ['amazon.nova-lite-v1:0'] } });
  assert.equal(r.status, 201, await r.clone().text());
  const ch = await r.json();
  assert.equal(ch.region, 'us-east-1');
  r = await admin(g, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret: awsKey(KEY_B) } });
  const created = await r.text();
  assert.equal(r.status, 201, created);
  assert.ok(!created.includes(KEY_B.secret));
  let status = 0;
  for (let i = 0; i < 40 && status !== 200; i++) {
    const res = await chat(g, { model: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: 'hi' }] });
    status = res.status;
    await res.text();
    if (status !== 200) await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.equal(status, 200, 'the stored key signed a request the mock verified');
  const bytes = readFileSync(db).toString('latin1') + (() => { try { return readFileSync(`${db}-wal`).toString('latin1'); } catch { return ''; } })();
  assert.ok(!bytes.includes(KEY_B.secret), 'the secret is sealed in the store');
  const listed = await (await admin(g, `/channels/${ch.id}/keys`)).text();
  assert.ok(!listed.includes(KEY_B.secret));
  // A malformed bedrock key is refused when loaded, never shown.
  r = await admin(g, `/channels/${ch.id}/keys`, { method: 'POST', body: { secret: 'not-an-aws-key-but-long-enough' } });
  await r.text();
  assert.ok(!g.proc.output.includes('not-an-aws-key-but-long-enough'));
  assert.ok(!g.proc.output.includes(KEY_B.secret));
});

test('the secret is never in the request log, the admin API or the gateway output', async () => {
  const text = (await (await admin(gw, '/channels')).text()) + (await (await admin(gw, '/logs?limit=500')).text()) +
    (await (await admin(gw, '/upstream-keys')).text()) + (await (await admin(gw, '/config')).text());
  for (const s of SECRETS) {
    assert.ok(!text.includes(s));
    assert.ok(!gw.proc.output.includes(s));
  }
  assert.ok(text.includes('bedrock'));
});

// Attack table: what a client puts in the model name reaches the upstream path as exactly one
// encoded segment, and the signature (which covers the path, encoded once more) still verifies.
// The model-name rule (before any routing) already refuses '..', '%', '?', '#', spaces, control
// and non-ASCII bytes and names past 256 bytes: those never reach a byte upstream.
const attacks = [
  ['attack-a/b', '/model/attack-a%2Fb/converse'],
  ['attack-x/../../admin', null],
  ['attack-v2:0', '/model/attack-v2%3A0/converse'],
  ['attack-&x=1;y,z', '/model/attack-%26x%3D1%3By%2Cz/converse'],
  ['attack-<script>"\'`', '/model/attack-%3Cscript%3E%22%27%60/converse'],
  ['attack-$(id)|*+@!', '/model/attack-%24%28id%29%7C%2A%2B%40%21/converse'],
  ['arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0',
    '/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-haiku-20241022-v1%3A0/converse'],
  ['attack-../../admin', null], ['attack-a%2Fb', null], ['attack-q?x=1', null], ['attack-h#frag', null],
  ['attack-sp ace', null], ['attack-\u00fcn\u00ef', null], ['attack-cr\rlf', null], ['attack-nl\nx', null],
  ['attack-nul\u0000x', null], ['attack-' + 'x'.repeat(5000), null],
];
for (const [model, path] of attacks) {
  test(`attack table: model ${JSON.stringify(model.slice(0, 60))} -> ${path ?? '400, nothing sent'}`, async () => {
    await mock.reset();
    const res = await chat(gw, { model, messages: [{ role: 'user', content: 'hi' }] });
    const text = await res.text();
    if (path === null) {
      assert.equal(res.status, 400, text);
      assert.equal(JSON.parse(text).error.code, 'invalid_model');
      assert.equal((await mock.stats()).requests, 0, 'no byte upstream');
    } else {
      assert.equal(res.status, 200, text);  // the mock verified the signature over this path
      const st = await mock.stats();
      assert.equal(st.requests, 1);
      assert.equal(st.last_request.path, path);
      assert.equal(st.last_request.query, '');
    }
    const again = await chat(gw, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(again.status, 200, 'the gateway keeps serving');
    await again.text();
  });
}
