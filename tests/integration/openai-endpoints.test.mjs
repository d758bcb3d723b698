// The rest of the OpenAI API through the gateway: moderations, images, speech, transcriptions
// and translations, files and batches. Two recording upstreams in front of real mocks show what
// reached each provider byte for byte: the method, the path with its id, the channel's own key,
// the client's body unchanged. A call without a model goes to the x-sluice-channel channel or the
// caller's first OpenAI-format channel; a call about a file or batch goes to the channel that
// made it. Hostile ids and methods are refused before any byte leaves.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, createKey, logOf, parseSse, MASTER } from '../lib/harness.mjs';
import { startRecordingUpstream } from '../lib/recording-upstream.mjs';

let alpha;
let beta;
let gw;

before(async () => {
  alpha = await startRecordingUpstream(['--chunks', '4']);
  beta = await startRecordingUpstream(['--chunks', '4']);
  // One worker: one upstream pool, so each tap's requests are in the order they were sent.
  gw = await startGateway({
    server: { workers: 1 },
    channels: [
      // The anthropic channel sorts first by priority and serves no OpenAI endpoint: calls
      // without a model pass it over.
      { name: 'claude', type: 'anthropic', base_url: alpha.url, keys: ['k-claude'], models: ['claude-*'], priority: 0 },
      { name: 'alpha', url: alpha.url, keys: ['k-alpha'], models: ['gpt-4o*', 'tts-*', 'whisper-*', 'dall-e-*'], priority: 1 },
      { name: 'beta', url: beta.url, keys: ['k-beta'], models: ['gpt-image-*'], priority: 2 },
    ],
    extra: 'pricing:\n  gpt-image-1: {input: 5, output: 40}\n',
  });
});

after(async () => {
  await gw?.stop();
  await alpha?.stop();
  await beta?.stop();
});

const auth = (key = MASTER) => ({ authorization: `Bearer ${key}` });
const post = (path, body, headers = {}, key) =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { ...auth(key), 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const last = (up) => up.requests().at(-1);
const header = (req, name) => req.headers.find(([k]) => k.toLowerCase() === name)?.[1];

function form(fields, file) {
  const fd = new FormData();
  for (const [k, v] of fields) {
    if (k === file?.field) fd.append(k, new Blob([file.bytes]), file.name);
    else fd.append(k, v);
  }
  return fd;
}

test('moderations without a model: the first OpenAI-format channel by priority, its key, the body as sent', async () => {
  alpha.clear();
  const body = { input: ['a calm day', 'some violence'] };
  const res = await post('/v1/moderations', body);
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('x-sluice-channel'), 'alpha');
  const answer = await res.json();
  assert.deepEqual(answer.results.map((r) => r.flagged), [false, true]);
  const up = last(alpha);
  assert.equal(`${up.method} ${up.target}`, 'POST /v1/moderations');
  assert.equal(header(up, 'authorization'), 'Bearer k-alpha');
  assert.equal(up.body.toString(), JSON.stringify(body));
  const row = await logOf(gw, res.headers.get('x-request-id'));
  assert.equal(row.channel, 'alpha');
  assert.equal(row.status, 200);
});

test('images/generations routes by its model; the answer comes back whole', async () => {
  beta.clear();
  const res = await post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'a lighthouse', n: 2 });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'beta');
  const answer = await res.json();
  assert.equal(answer.data.length, 2);
  assert.deepEqual([...Buffer.from(answer.data[0].b64_json, 'base64').subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  assert.equal(`${last(beta).method} ${last(beta).target}`, 'POST /v1/images/generations');
  // The provider's usage is counted and priced (USD per million tokens).
  const row = await logOf(gw, res.headers.get('x-request-id'));
  assert.equal(row.input_tokens, 10);
  assert.equal(row.output_tokens, 200);
  assert.ok(Math.abs(row.cost_usd - (10 * 5 + 200 * 40) / 1e6) < 1e-9, `cost ${row.cost_usd}`);
});

test('audio/speech: the audio bytes stream through as the provider sent them, and as SSE events', async () => {
  const body = { model: 'tts-1', input: 'hello there', voice: 'alloy' };
  const direct = await fetch(`${alpha.mock.url}/v1/audio/speech`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const want = Buffer.from(await direct.arrayBuffer());
  const res = await post('/v1/audio/speech', body);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'audio/mpeg');
  assert.equal(res.headers.get('x-sluice-channel'), 'alpha');
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(want));

  const sse = await post('/v1/audio/speech', { ...body, stream_format: 'sse' });
  assert.match(sse.headers.get('content-type'), /text\/event-stream/);
  const events = parseSse(await sse.text()).map((e) => e.data);
  assert.equal(events.at(-1).type, 'speech.audio.done');
  const audio = Buffer.concat(events.filter((e) => e.type === 'speech.audio.delta').map((e) => Buffer.from(e.audio, 'base64')));
  assert.ok(audio.equals(want));
  const row = await logOf(gw, sse.headers.get('x-request-id'));
  assert.equal(row.model, 'tts-1');
  assert.equal(row.channel, 'alpha');
});

test('transcriptions and translations: multipart bodies reach the model\'s channel unchanged, the model part after the file', async () => {
  alpha.clear();
  const bytes = Buffer.from('RIFF....WAVEfmt fake audio bytes \r\n--not-a-boundary\r\n');
  const fd = form([['file', null], ['model', 'whisper-1'], ['response_format', 'json']], { field: 'file', name: 'a.wav', bytes });
  const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: auth(), body: fd });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('x-sluice-channel'), 'alpha');
  assert.equal((await res.json()).text, `Mock transcription of a.wav (${bytes.length} bytes).`);
  const up = last(alpha);
  assert.equal(`${up.method} ${up.target}`, 'POST /v1/audio/transcriptions');
  assert.match(header(up, 'content-type'), /^multipart\/form-data; boundary=/);
  assert.ok(up.body.includes(bytes.toString()), 'the file part byte for byte');

  const streamed = await fetch(`${gw.url}/v1/audio/transcriptions`, {
    method: 'POST', headers: auth(),
    body: form([['model', 'whisper-1'], ['stream', 'true'], ['file', null]], { field: 'file', name: 'b.wav', bytes }),
  });
  const events = parseSse(await streamed.text()).map((e) => e.data);
  assert.equal(events.filter((e) => e.type === 'transcript.text.delta').map((e) => e.delta).join(''), events.at(-1).text);

  const tr = await fetch(`${gw.url}/v1/audio/translations`, {
    method: 'POST', headers: auth(), body: form([['model', 'whisper-1'], ['file', null]], { field: 'file', name: 'c.wav', bytes }),
  });
  assert.match((await tr.json()).text, /^Mock translation of c\.wav/);

  const bad = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: '{}' });
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error.message, /multipart\/form-data/);
});

test('files and batches: every later call about an id goes to the channel that made it', async () => {
  alpha.clear();
  beta.clear();
  const jsonl = '{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini"}}\n' +
    '{"custom_id":"r2","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini"}}\n';
  // Uploaded to beta by the header (the first channel would be alpha).
  const up = await fetch(`${gw.url}/v1/files`, {
    method: 'POST', headers: { ...auth(), 'x-sluice-channel': 'beta' },
    body: form([['purpose', 'batch'], ['file', null]], { field: 'file', name: 'in.jsonl', bytes: Buffer.from(jsonl) }),
  });
  assert.equal(up.status, 200, await up.clone().text());
  const file = await up.json();
  assert.match(file.id, /^file-/);
  assert.equal(header(last(beta), 'x-sluice-channel'), undefined, 'the gateway\'s own header never goes upstream');

  const get = (path, method = 'GET') => fetch(`${gw.url}${path}`, { method, headers: auth() });
  let res = await get(`/v1/files/${file.id}`);
  assert.equal(res.headers.get('x-sluice-channel'), 'beta');
  assert.equal((await res.json()).filename, 'in.jsonl');
  assert.equal(`${last(beta).method} ${last(beta).target}`, `GET /v1/files/${file.id}`);
  assert.equal(header(last(beta), 'content-length'), undefined);
  res = await get(`/v1/files/${file.id}/content`);
  assert.equal(await res.text(), jsonl);

  const created = await post('/v1/batches', { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  assert.equal(created.status, 200, await created.clone().text());
  assert.equal(created.headers.get('x-sluice-channel'), 'beta');
  const batch = await created.json();
  res = await get(`/v1/batches/${batch.id}`);
  const done = await res.json();
  assert.equal(done.status, 'completed');
  // The output file was never uploaded through the gateway: learned from the batch.
  res = await get(`/v1/files/${done.output_file_id}/content`);
  assert.equal(res.headers.get('x-sluice-channel'), 'beta');
  const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.custom_id), ['r1', 'r2']);

  res = await fetch(`${gw.url}/v1/batches?limit=5`, { headers: { ...auth(), 'x-sluice-channel': 'beta' } });
  assert.ok((await res.json()).data.some((b) => b.id === batch.id));
  assert.equal(last(beta).target, '/v1/batches?limit=5');
  res = await get(`/v1/batches/${batch.id}/cancel`, 'POST');
  assert.equal(res.status, 400, 'the provider\'s answer (a completed batch cannot be cancelled), relayed');

  res = await get(`/v1/files/${file.id}`, 'DELETE');
  assert.deepEqual(await res.json(), { id: file.id, object: 'file', deleted: true });
  assert.equal(alpha.requests().length, 0, 'nothing about these went to the other channel');
});

test('hostile ids, methods and channel names: refused before anything reaches a provider', async () => {
  alpha.clear();
  beta.clear();
  const cases = [
    ['GET', '/v1/files/..%2f..%2fadmin', 400], ['GET', '/v1/files/a%00b', 400], ['GET', `/v1/files/${'x'.repeat(200)}`, 400],
    ['GET', "/v1/files/a'b", 400], ['GET', '/v1/files/%E6%A8%A1', 400], ['GET', '/v1/files/a%20b/content', 400],
    ['GET', '/v1/files/a%2Fb', 400], ['GET', '/v1/files/abc/other', 404], ['GET', '/v1/batches/abc/cancel', 405],
    ['PUT', '/v1/files', 405], ['DELETE', '/v1/batches/batch_1', 405], ['GET', '/v1/moderations', 405],
  ];
  for (const [method, path, status] of cases) {
    const res = await fetch(`${gw.url}${path}`, { method, headers: auth() });
    assert.equal(res.status, status, `${method} ${path}`);
    const body = await res.json();
    assert.equal(typeof body.error.message, 'string', `${method} ${path}: OpenAI's error shape`);
  }
  for (const [name, status] of [['nope', 404], ['claude', 400], ['x\u00e9', 404]]) {
    const res = await fetch(`${gw.url}/v1/files`, { headers: { ...auth(), 'x-sluice-channel': encodeURIComponent(name) } });
    assert.equal(res.status, status, name);
  }
  const res = await post('/v1/audio/speech', { model: '../../admin', input: 'x', voice: 'alloy' });
  assert.equal(res.status, 400);
  assert.equal(alpha.requests().length + beta.requests().length, 0);
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
});

test('a virtual key: its allowed models and channels apply to every endpoint', async () => {
  const { secret } = await createKey(gw, { name: 'speech-only', allowed_models: ['tts-*'] });
  let res = await post('/v1/audio/speech', { model: 'tts-1', input: 'hi', voice: 'alloy' }, {}, secret);
  assert.equal(res.status, 200);
  res = await post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'x' }, {}, secret);
  assert.equal(res.status, 403);
  assert.equal((await res.json()).error.code, 'model_not_allowed');
  const { secret: alphaOnly } = await createKey(gw, { name: 'alpha-only', allowed_channels: ['alpha'] });
  res = await fetch(`${gw.url}/v1/files`, { headers: { ...auth(alphaOnly), 'x-sluice-channel': 'beta' } });
  assert.equal(res.status, 403);
  res = await fetch(`${gw.url}/v1/files`, { headers: auth(alphaOnly) });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'alpha');
  res = await fetch(`${gw.url}/v1/files`, { headers: auth('sk-wrong') });
  assert.equal(res.status, 401);
});

// Uploads of kStreamedBodyFrom (1 MiB) or more stream through: the provider gets the client's
// bytes as they arrive, whatever their framing, and a body past max_body_bytes is cut with a 413
// before the provider has all of it.
test('large uploads stream through: Content-Length and chunked bodies reach the provider byte for byte', async () => {
  alpha.clear();
  const big = Buffer.alloc(3 * 1024 * 1024 + 17);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31 + 7) & 0xff;
  let res = await fetch(`${gw.url}/v1/files`, {
    method: 'POST', headers: auth(),
    body: form([['purpose', 'fine-tune'], ['file', null]], { field: 'file', name: 'big.bin', bytes: big }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const file = await res.json();
  assert.equal(file.bytes, big.length);
  assert.equal(res.headers.get('x-sluice-channel'), 'alpha');
  // Found by path: requests() lists them connection by connection, and the pool may carry the
  // next request on an older connection than this one's.
  const sent = (path) => alpha.requests().filter((q) => q.target.split('?')[0] === path).at(-1);
  const up = sent('/v1/files');
  assert.match(header(up, 'content-length'), /^\d+$/);
  res = await fetch(`${gw.url}/v1/files/${file.id}/content`, { headers: auth() });
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(big), 'the content the provider kept is the upload');

  // Chunked, as a client streaming from a pipe sends it; the model after the file, past the
  // read-ahead: a call without a model (the first channel), since the master key may use any.
  const boundary = 'sluice-test-boundary';
  const parts = [
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="long.wav"\r\nContent-Type: audio/wav\r\n\r\n`),
    big,
    Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${boundary}--\r\n`),
  ];
  async function* pieces() { for (const p of parts) for (let i = 0; i < p.length; i += 100000) yield p.subarray(i, i + 100000); }
  res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
    method: 'POST', duplex: 'half', body: pieces(),
    headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal((await res.json()).text, `Mock transcription of long.wav (${big.length} bytes).`);
  const chunked = sent('/v1/audio/transcriptions');
  assert.equal(header(chunked, 'transfer-encoding'), 'chunked');
  assert.equal(Buffer.from(chunked.body, 'utf8').length > 0, true);

  // A key held to some models: the model must come before a large file.
  const { secret } = await createKey(gw, { name: 'whisper-only', allowed_models: ['whisper-*'] });
  res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
    method: 'POST', headers: auth(secret), body: form([['file', null], ['model', 'whisper-1']], { field: 'file', name: 'a.wav', bytes: big }),
  });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, 'model_after_file');
  res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
    method: 'POST', headers: auth(secret), body: form([['model', 'whisper-1'], ['file', null]], { field: 'file', name: 'a.wav', bytes: big }),
  });
  assert.equal(res.status, 200);
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
});

test('a streamed upload past max_body_bytes: 413, and the provider never gets a whole body', async () => {
  const small = await startGateway({
    server: { workers: 1, max_body_bytes: '2MiB' },
    channels: [{ name: 'alpha', url: alpha.url, keys: ['k-alpha'], models: ['whisper-*'] }],
  });
  try {
    alpha.clear();
    const big = Buffer.alloc(3 * 1024 * 1024, 0x61);
    const res = await fetch(`${small.url}/v1/files`, {
      method: 'POST', headers: auth(), body: form([['purpose', 'batch'], ['file', null]], { field: 'file', name: 'x.jsonl', bytes: big }),
    });
    assert.equal(res.status, 413);
    assert.match((await res.json()).error.message, /exceeds the limit/);
    // The head and what was sent stay partial: the tap frames no complete request.
    assert.equal(alpha.requests().filter((r) => r.target === '/v1/files' && r.body.length >= big.length).length, 0);
    const files = await (await fetch(`${alpha.mock.url}/v1/files`)).json();
    assert.ok(!files.data.some((f) => f.filename === 'x.jsonl'), 'the provider kept nothing');
    // Chunked: no length to refuse up front; the stream is cut where it passes the limit.
    const boundary = 'b-over';
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\n` +
      'Content-Disposition: form-data; name="file"; filename="y.jsonl"\r\n\r\n');
    async function* pieces() { yield head; for (let i = 0; i < big.length; i += 65536) yield big.subarray(i, i + 65536); }
    const cut = await fetch(`${small.url}/v1/files`, {
      method: 'POST', duplex: 'half', body: pieces(), headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    assert.equal(cut.status, 413);
    const after = await (await fetch(`${alpha.mock.url}/v1/files`)).json();
    assert.ok(!after.data.some((f) => f.filename === 'y.jsonl'), 'the provider kept nothing');
    assert.equal((await fetch(`${small.url}/healthz`)).status, 200);
  } finally {
    await small.stop();
  }
});
