// The official openai SDK's calls for the rest of the OpenAI API, through the gateway to the
// mock: moderations, images (generate, edit, createVariation), speech (bytes and SSE),
// transcriptions (whole and streamed) and translations, files (create, list, retrieve, content,
// delete) and batches (create, retrieve, list, cancel). Each call is what an application writes;
// the SDK parses every answer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { startMock, startGateway, MASTER } from '../lib/harness.mjs';

let mock, gw;
before(async () => {
  mock = await startMock(['--chunks', '5']);
  gw = await startGateway({ channels: [
    { name: 'oa', type: 'openai', url: mock.url, models: ['gpt-4o-mini', 'gpt-image-1', 'dall-e-2', 'tts-1', 'whisper-1', 'omni-moderation-latest'] },
  ] });
});
after(async () => { await gw?.stop(); await mock?.stop(); });

const client = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
const audio = () => toFile(Buffer.from('RIFF$\0\0\0WAVEfmt mock audio'), 'hello.wav', { type: 'audio/wav' });

test('moderations.create', async () => {
  const r = await client().moderations.create({ model: 'omni-moderation-latest', input: ['fine', 'violence here'] });
  assert.deepEqual(r.results.map((x) => x.flagged), [false, true]);
});

test('images.generate, images.edit, images.createVariation', async () => {
  const c = client();
  const g = await c.images.generate({ model: 'gpt-image-1', prompt: 'a lighthouse at dusk', n: 2 });
  assert.equal(g.data.length, 2);
  assert.equal(Buffer.from(g.data[0].b64_json, 'base64').subarray(1, 4).toString(), 'PNG');
  const png = Buffer.from(g.data[0].b64_json, 'base64');
  const e = await c.images.edit({ model: 'gpt-image-1', image: await toFile(png, 'in.png', { type: 'image/png' }), prompt: 'add a moon' });
  assert.equal(e.data.length, 1);
  const v = await c.images.createVariation({ model: 'dall-e-2', image: await toFile(png, 'in.png', { type: 'image/png' }), n: 3 });
  assert.equal(v.data.length, 3);
});

test('audio.speech.create: the bytes, and the SSE stream of them', async () => {
  const c = client();
  const res = await c.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello from the gateway' });
  assert.equal(res.headers.get('content-type'), 'audio/mpeg');
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.ok(bytes.length >= 4096);
  assert.equal(bytes.subarray(0, 8).toString(), 'ID3mock:');
  const sse = await c.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello from the gateway', stream_format: 'sse' });
  const text = await sse.text();
  assert.match(text, /speech\.audio\.done/);
});

test('audio.transcriptions.create (whole and streamed) and audio.translations.create', async () => {
  const c = client();
  const t = await c.audio.transcriptions.create({ model: 'whisper-1', file: await audio() });
  assert.match(t.text, /^Mock transcription of hello\.wav/);
  const s = await c.audio.transcriptions.create({ model: 'whisper-1', file: await audio(), stream: true });
  let deltas = '';
  let done;
  for await (const ev of s) {
    if (ev.type === 'transcript.text.delta') deltas += ev.delta;
    if (ev.type === 'transcript.text.done') done = ev;
  }
  assert.equal(deltas, done.text);
  const tr = await c.audio.translations.create({ model: 'whisper-1', file: await audio() });
  assert.match(tr.text, /^Mock translation of hello\.wav/);
});

test('files and batches: create, list, retrieve, content, cancel, delete', async () => {
  const c = client();
  const jsonl = '{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[]}}\n';
  const f = await c.files.create({ file: await toFile(Buffer.from(jsonl), 'batch.jsonl'), purpose: 'batch' });
  assert.equal(f.filename, 'batch.jsonl');
  const listed = [];
  for await (const x of c.files.list()) listed.push(x.id);
  assert.ok(listed.includes(f.id));
  assert.equal((await c.files.retrieve(f.id)).bytes, Buffer.byteLength(jsonl));
  assert.equal(await (await c.files.content(f.id)).text(), jsonl);

  const b = await c.batches.create({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  assert.equal(b.status, 'validating');
  const b2 = await c.batches.create({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  const cancelled = await c.batches.cancel(b2.id);
  assert.equal(cancelled.status, 'cancelled');
  const got = await c.batches.retrieve(b.id);
  assert.equal(got.status, 'completed');
  const out = await (await c.files.content(got.output_file_id)).text();
  assert.equal(JSON.parse(out.trim()).custom_id, 'a');
  const batches = [];
  for await (const x of c.batches.list({ limit: 10 })) batches.push(x.id);
  assert.ok(batches.includes(b.id) && batches.includes(b2.id));
  const del = await c.files.delete(f.id);
  assert.equal(del.deleted, true);
  await assert.rejects(c.files.retrieve(f.id), (e) => e.status === 404);
});
