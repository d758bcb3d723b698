// The exact response cache on the request path: a repeat is a hit (x-sluice-cache, x-sluice-channel:
// cache, Age) with the same content, streams replayed from whole entries and whole answers from
// streamed ones (well-formed streams in every client format), Cache-Control / x-sluice-cache
// request controls, per-virtual-key namespaces (and cache.shared), per-channel opt-out, TTL expiry,
// uncacheable requests, metrics and the request log, and redaction tokens restored on a hit.
//
// The mock's default answer is its first N words, N = x-mock-chunks; request headers are not part
// of the cache key, so a hit is told from a fresh answer by sending a different x-mock-chunks.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  startMock, startGateway, readSseEvents, metrics, metricValue, sendChat, answerText, streamText, createKey, logOf, sleep,
  MASTER,
} from '../lib/harness.mjs';

const EMAIL = 'jane.doe@example.com';
const FORMATS = ['openai', 'anthropic', 'gemini'];
const NATIVE = { openai: 'gpt-4o-mini', anthropic: 'claude-sonnet-4-5', gemini: 'gemini-2.5-flash' };
const words = (n) => ['Hello', 'from', 'sluice', 'mock.', 'This', 'is', 'a', 'deterministic', 'answer', 'for', 'your', 'request.']
  .slice(0, n).join(' ');

let mock, gw, sharedGw;
const started = [];
let seq = 0;
const unique = (what) => `${what} #${++seq} ${Date.now()}`;

const channels = (url) => [
  { name: 'oa', url, models: ['gpt-*'] },
  { name: 'an', type: 'anthropic', base_url: url, models: ['claude-*'] },
  { name: 'ge', type: 'gemini', base_url: url, models: ['gemini-*'] },
  { name: 'nc', url, models: ['nc-*'], limits: { cache: 'false' } },
];

before(async () => {
  mock = await startMock([]);
  started.push(mock);
  gw = await startGateway({ channels: channels(mock.url), extra: [
    'cache:', '  enabled: true', '  ttl: 1h',
    'redaction:', '  enabled: true', '  key: "cache-test-redaction-key-0123456789"', '',
  ].join('\n') });
  sharedGw = await startGateway({ channels: channels(mock.url), extra: 'cache:\n  enabled: true\n  ttl: 1s\n  shared: true\n  max_entry_bytes: 8KiB\n' });
  started.push(gw, sharedGw);
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

const upstreamCount = async () => (await mock.stats()).requests;

const stores = async (g) => metricValue(await metrics(g), 'sluice_cache_stores_total');
// The entry of a miss is stored right after its answer went out, so an immediate repeat can race
// it (see the regression test at the end): wait until the store counter passes `before`.
async function waitStored(g, before, ms = 1000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await stores(g) > before) return true;
    await sleep(10);
  }
  return false;
}

// One request, read whole or streamed: {res, status, cache, channel, text, events, raw, body}.
// A successful miss or refresh waits for its entry to be stored unless `wait` is false (for
// answers that are not stored).
async function ask(g, format, { chunks = 3, stream = false, headers = {}, wait = true, ...opts }) {
  const before = wait ? await stores(g) : 0;
  const res = await sendChat(g, format, { model: NATIVE[format], stream, headers: { 'x-mock-chunks': String(chunks), ...headers }, ...opts });
  const out = { res, status: res.status, cache: res.headers.get('x-sluice-cache'), channel: res.headers.get('x-sluice-channel') };
  if (res.status !== 200) { out.body = await res.text(); return out; }
  if (stream) {
    const s = await readSseEvents(res);
    out.raw = s.text;
    out.events = s.events;
    out.text = streamText(format, s.events);
  } else {
    out.body = await res.json();
    out.text = answerText(format, out.body);
  }
  if (wait && (out.cache === 'miss' || out.cache === 'refresh')) out.stored = await waitStored(g, before);
  return out;
}

// A stream is well-formed for its format: SSE framing, the opening and closing events, a finish.
function assertWellFormed(format, r, what) {
  assert.match(r.res.headers.get('content-type') ?? '', /^text\/event-stream/, what);
  assert.ok(r.raw.endsWith('\n\n'), `${what}: the stream ends on an event boundary`);
  for (const block of r.raw.split('\n\n').filter((b) => b.trim())) {
    assert.ok(block.split('\n').every((l) => /^(data|event|id|retry):/.test(l) || l.startsWith(':')), `${what}: SSE lines: ${block}`);
  }
  const ev = r.events;
  if (format === 'openai') {
    assert.equal(ev.at(-1), '[DONE]', `${what}: ends with [DONE]`);
    const chunks = ev.slice(0, -1);
    assert.ok(chunks.every((e) => e.object === 'chat.completion.chunk'), what);
    assert.equal(new Set(chunks.map((e) => e.id)).size, 1, `${what}: one id`);
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    assert.equal(chunks.filter((e) => e.choices?.[0]?.finish_reason).length, 1, `${what}: one finish_reason`);
    assert.equal(chunks.find((e) => e.choices?.[0]?.finish_reason).choices[0].finish_reason, 'stop');
  } else if (format === 'anthropic') {
    const types = ev.map((e) => e.type);
    assert.equal(types[0], 'message_start', what);
    assert.equal(types.at(-1), 'message_stop', what);
    assert.ok(types.includes('content_block_start') && types.includes('content_block_stop'), `${what}: ${types}`);
    const delta = ev.find((e) => e.type === 'message_delta');
    assert.equal(delta?.delta?.stop_reason, 'end_turn', what);
    assert.ok(types.indexOf('content_block_stop') < types.indexOf('message_delta'), what);
    // Every event named in `event:` matches its data's type.
    for (const block of r.raw.split('\n\n').filter((b) => b.trim())) {
      const name = block.match(/^event: (\S+)/m)?.[1];
      const data = JSON.parse(block.match(/^data: (.*)$/m)[1]);
      assert.equal(name, data.type, `${what}: event name`);
    }
  } else {
    assert.equal(ev.at(-1).candidates[0].finishReason, 'STOP', what);
    assert.equal(ev.filter((e) => e.candidates?.[0]?.finishReason).length, 1, `${what}: one finishReason`);
  }
}

test('a repeat is a hit: same content, x-sluice-channel: cache, Age, no upstream request (every format)', async () => {
  for (const format of FORMATS) {
    const user = unique(`repeat ${format}`);
    const n0 = await upstreamCount();
    const a = await ask(gw, format, { user, chunks: 4 });
    assert.equal(a.status, 200);
    assert.equal(a.cache, 'miss', format);
    assert.notEqual(a.channel, 'cache');
    assert.equal(a.text, words(4));
    const b = await ask(gw, format, { user, chunks: 9 });
    assert.equal(b.status, 200);
    assert.equal(b.cache, 'hit', format);
    assert.equal(b.channel, 'cache');
    assert.match(b.res.headers.get('age') ?? '', /^\d+$/, `${format}: Age`);
    assert.equal(b.text, words(4), `${format}: the stored answer, not a fresh one`);
    assert.equal(await upstreamCount(), n0 + 1, `${format}: the hit did not reach the upstream`);
    if (format === 'openai') {
      // The entry keeps the token counts (not the *_details breakdowns the canonical form drops).
      const counts = (u) => ({ p: u.prompt_tokens, c: u.completion_tokens, t: u.total_tokens });
      assert.deepEqual(counts(b.body.usage), counts(a.body.usage));
      assert.equal(b.body.choices[0].finish_reason, a.body.choices[0].finish_reason);
    }
  }
});

test('a stream is served from a whole entry, and a whole answer from a streamed entry; replays are well-formed', async () => {
  for (const format of FORMATS) {
    // whole entry -> stream replay
    const u1 = unique(`whole-then-stream ${format}`);
    const w = await ask(gw, format, { user: u1, chunks: 5 });
    assert.equal(w.cache, 'miss');
    const s = await ask(gw, format, { user: u1, chunks: 2, stream: true });
    assert.equal(s.cache, 'hit', format);
    assert.equal(s.channel, 'cache');
    assert.match(s.res.headers.get('age') ?? '', /^\d+$/, `${format}: Age on a streamed hit`);
    assertWellFormed(format, s, `${format} stream from a whole entry`);
    assert.equal(s.text, w.text, `${format}: same content byte for byte`);

    // streamed entry -> whole and stream replays
    const u2 = unique(`stream-then-whole ${format}`);
    const live = await ask(gw, format, { user: u2, chunks: 7, stream: true });
    assert.equal(live.cache, 'miss');
    assert.equal(live.text, words(7));
    assertWellFormed(format, live, `${format} live stream`);
    const whole = await ask(gw, format, { user: u2, chunks: 2 });
    assert.equal(whole.cache, 'hit', format);
    assert.equal(whole.text, live.text, `${format}: whole from a streamed entry`);
    const again = await ask(gw, format, { user: u2, chunks: 2, stream: true });
    assert.equal(again.cache, 'hit');
    assertWellFormed(format, again, `${format} stream from a streamed entry`);
    assert.equal(again.text, live.text);
    const textEvents = (r) => r.events.filter((e) => streamText(format, [e]).length > 0).length;
    assert.equal(textEvents(again), textEvents(live), `${format}: the replay keeps the original's text events`);
  }
});

test('a replayed stream reads correctly through the openai SDK', async () => {
  const sdk = fileURLToPath(new URL('../e2e/node_modules/openai/index.mjs', import.meta.url));
  assert.ok(existsSync(sdk), 'tests/e2e/node_modules has no openai SDK: run (cd tests/e2e && npm ci) (tests/run.sh does)');
  const { default: OpenAI } = await import(sdk);
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });
  const user = unique('sdk');
  const before = await stores(gw);
  const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: user }] },
    { headers: { 'x-mock-chunks': '6' } });
  assert.ok(await waitStored(gw, before), 'stored');
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: user }] }).withResponse();
  assert.equal(stream.response.headers.get('x-sluice-cache'), 'hit');
  let text = '', usage = null, finish = null;
  for await (const chunk of stream.data) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, first.choices[0].message.content);
  assert.equal(finish, 'stop');
  assert.deepEqual(usage && { p: usage.prompt_tokens, c: usage.completion_tokens },
    { p: first.usage.prompt_tokens, c: first.usage.completion_tokens }, 'include_usage gets the stored usage');
});

test('Cache-Control: no-store and x-sluice-cache: bypass skip the cache both ways', async () => {
  const user = unique('no-store');
  assert.equal((await ask(gw, 'openai', { user, chunks: 3 })).cache, 'miss');
  for (const headers of [{ 'cache-control': 'no-store' }, { 'x-sluice-cache': 'bypass' }]) {
    const n0 = await upstreamCount();
    const r = await ask(gw, 'openai', { user, chunks: 6, headers, wait: false });
    assert.equal(r.status, 200);
    assert.ok([null, 'bypass'].includes(r.cache), `${JSON.stringify(headers)}: x-sluice-cache ${r.cache}`);
    assert.notEqual(r.channel, 'cache');
    assert.equal(r.text, words(6), 'a fresh answer');
    assert.equal(await upstreamCount(), n0 + 1);
  }
  const after = await ask(gw, 'openai', { user, chunks: 9 });
  assert.equal(after.cache, 'hit');
  assert.equal(after.text, words(3), 'the stored answer was not replaced');
});

test('Cache-Control: no-cache and x-sluice-cache: refresh re-fetch and replace the entry', async () => {
  const user = unique('refresh');
  assert.equal((await ask(gw, 'openai', { user, chunks: 3 })).cache, 'miss');
  for (const [headers, n] of [[{ 'cache-control': 'no-cache' }, 6], [{ 'x-sluice-cache': 'refresh' }, 8]]) {
    const n0 = await upstreamCount();
    const r = await ask(gw, 'openai', { user, chunks: n, headers });
    assert.equal(r.cache, 'refresh', JSON.stringify(headers));
    assert.notEqual(r.channel, 'cache');
    assert.equal(r.text, words(n));
    assert.equal(await upstreamCount(), n0 + 1);
    const hit = await ask(gw, 'openai', { user, chunks: 2 });
    assert.equal(hit.cache, 'hit');
    assert.equal(hit.text, words(n), `the entry now holds the refreshed answer (${JSON.stringify(headers)})`);
  }
});

test('virtual keys do not share entries', async () => {
  const a = await createKey(gw, { name: 'cache-a' });
  const b = await createKey(gw, { name: 'cache-b' });
  const user = unique('per-key');
  const a1 = await ask(gw, 'openai', { user, chunks: 3, key: a.secret });
  assert.equal(a1.cache, 'miss');
  const a2 = await ask(gw, 'openai', { user, chunks: 5, key: a.secret });
  assert.equal(a2.cache, 'hit');
  assert.equal(a2.text, words(3));
  const b1 = await ask(gw, 'openai', { user, chunks: 5, key: b.secret });
  assert.equal(b1.cache, 'miss', "key B is not served key A's answer");
  assert.equal(b1.text, words(5));
  const m1 = await ask(gw, 'openai', { user, chunks: 7 });
  assert.equal(m1.cache, 'miss', 'nor is the master key');
  const b2 = await ask(gw, 'openai', { user, chunks: 2, key: b.secret });
  assert.equal(b2.cache, 'hit');
  assert.equal(b2.text, words(5), "key B's own entry");
});

test('cache.shared: every caller shares entries', async () => {
  const a = await createKey(sharedGw, { name: 'shared-a' });
  const b = await createKey(sharedGw, { name: 'shared-b' });
  const user = unique('shared');
  assert.equal((await ask(sharedGw, 'openai', { user, chunks: 3, key: a.secret })).cache, 'miss');
  const hb = await ask(sharedGw, 'openai', { user, chunks: 6, key: b.secret });
  assert.equal(hb.cache, 'hit');
  assert.equal(hb.text, words(3));
  const hm = await ask(sharedGw, 'openai', { user, chunks: 6 });
  assert.equal(hm.cache, 'hit');
});

test('a channel with cache: false is never cached', async () => {
  const user = unique('no-cache channel');
  const n0 = await upstreamCount();
  for (const chunks of [3, 5]) {
    const r = await ask(gw, 'openai', { user, chunks, model: 'nc-1', wait: false });
    assert.equal(r.status, 200);
    assert.equal(r.channel, 'nc');
    assert.notEqual(r.cache, 'hit');
    assert.equal(r.text, words(chunks));
  }
  assert.equal(await upstreamCount(), n0 + 2);
});

test('TTL: an entry past its ttl is a miss', async () => {
  const user = unique('ttl');
  assert.equal((await ask(sharedGw, 'openai', { user, chunks: 3 })).cache, 'miss');
  const hit = await ask(sharedGw, 'openai', { user, chunks: 4 });
  assert.equal(hit.cache, 'hit');
  assert.equal(hit.text, words(3));
  await sleep(1500);
  const late = await ask(sharedGw, 'openai', { user, chunks: 5 });
  assert.equal(late.cache, 'miss', 'expired after ttl: 1s');
  assert.equal(late.text, words(5));
});

test('n=2 is uncacheable: relayed each time, nothing stored', async () => {
  const user = unique('n2');
  const n0 = await upstreamCount();
  for (let i = 0; i < 2; i++) {
    const r = await ask(gw, 'openai', { user, chunks: 3, extra: { n: 2 }, wait: false });
    assert.equal(r.status, 200);
    assert.equal(r.cache, 'uncacheable');
    assert.equal(r.body.choices.length, 2);
  }
  assert.equal(await upstreamCount(), n0 + 2);
  // n: 1 is the default: cached, and the same entry as no n at all.
  const one = await ask(gw, 'openai', { user, chunks: 3, extra: { n: 1 } });
  assert.equal(one.cache, 'miss');
  const none = await ask(gw, 'openai', { user, chunks: 6 });
  assert.equal(none.cache, 'hit');
});

test('hits show in /metrics and in the request log with channel "cache"', async () => {
  const m0 = await metrics(gw);
  const user = unique('metrics');
  const miss = await ask(gw, 'openai', { user, chunks: 4 });
  assert.equal(miss.cache, 'miss');
  const ids = [];
  for (const stream of [false, true, false]) {
    const r = await ask(gw, 'openai', { user, chunks: 4, stream });
    assert.equal(r.cache, 'hit');
    ids.push(r.res.headers.get('x-request-id'));
  }
  const m1 = await metrics(gw);
  const d = (name, labels) => metricValue(m1, name, labels) - metricValue(m0, name, labels);
  assert.equal(d('sluice_cache_requests_total', { result: 'hit' }), 3);
  assert.equal(d('sluice_cache_requests_total', { result: 'miss' }), 1);
  assert.equal(d('sluice_cache_stores_total'), 1);
  assert.ok(d('sluice_cache_saved_usd_total') > 0, 'hits of a priced model count what they saved');
  for (const id of ids) {
    const row = await logOf(gw, id);
    assert.ok(row, `log row for ${id}`);
    assert.equal(row.channel, 'cache');
    assert.equal(row.status, 200);
    assert.equal(row.output_tokens, miss.body.usage.completion_tokens);
  }
  const missRow = await logOf(gw, miss.res.headers.get('x-request-id'));
  assert.equal(missRow.channel, 'oa');
});

test('redaction + cache: a cached answer holding tokens is restored on the hit', async () => {
  const user = `Repeat ${EMAIL} ${unique('redact')}`;
  const echo = { 'x-mock-echo': '1', 'x-mock-chunks': '40' };
  for (const format of FORMATS) {
    const n0 = await upstreamCount();
    const a = await ask(gw, format, { user, headers: echo });
    assert.equal(a.status, 200);
    assert.equal(a.cache, 'miss', format);
    assert.equal(a.text, user);
    for (const stream of [false, true]) {
      const h = await ask(gw, format, { user, stream, headers: echo });
      assert.equal(h.cache, 'hit', `${format} stream=${stream}: the same e-mail makes the same token`);
      assert.equal(h.channel, 'cache');
      assert.equal(h.text, user, `${format} stream=${stream}: restored from the entry`);
    }
    assert.equal(await upstreamCount(), n0 + 1);
  }
  // Another key's identical request is a miss, and gets its own value back.
  const k = await createKey(gw, { name: 'cache-redact' });
  const other = await ask(gw, 'openai', { user, headers: echo, key: k.secret });
  assert.equal(other.cache, 'miss');
  assert.equal(other.text, user);
});

test('the key: another model, temperature or system prompt is a miss; member order and spacing are not', async () => {
  const user = unique('key');
  const body = (extra) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: user }], ...extra });
  const post = async (b, chunks) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: typeof b === 'string' ? b : JSON.stringify(b),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}`, 'x-mock-chunks': String(chunks) } });
    const j = await res.json();
    return { cache: res.headers.get('x-sluice-cache'), text: j.choices?.[0]?.message?.content };
  };
  assert.equal((await post(body({ temperature: 0.5 }), 3)).cache, 'miss');
  // Same request, members reordered, spaced, and 0.5 spelled 5e-1: the same entry.
  const same = await post(`{ "temperature": 5e-1,  "messages": [{"content": ${JSON.stringify(user)}, "role": "user"}], "model": "gpt-4o-mini" }`, 6);
  assert.deepEqual(same, { cache: 'hit', text: words(3) });
  assert.equal((await post(body({ temperature: 0.7 }), 6)).cache, 'miss', 'another temperature');
  assert.equal((await post(body({ temperature: 0.5, model: 'gpt-4.1' }), 6)).cache, 'miss', 'another model');
  assert.equal((await post({ ...body({ temperature: 0.5 }), messages: [{ role: 'system', content: 'x' }, { role: 'user', content: user }] }, 6)).cache,
    'miss', 'another system prompt');
});

test('failed answers are not stored: an upstream 400, a stream broken mid-way', async () => {
  const user = unique('errors');
  const bad = await ask(gw, 'openai', { user, headers: { 'x-mock-fail-rate': '1', 'x-mock-fail-status': '400' } });
  assert.equal(bad.status, 400);
  const ok = await ask(gw, 'openai', { user, chunks: 4 });
  assert.equal(ok.status, 200);
  assert.equal(ok.cache, 'miss', 'the 400 was not cached');
  assert.equal(ok.text, words(4));

  const u2 = unique('broken stream');
  const before = await stores(gw);
  const res = await sendChat(gw, 'openai', { model: 'gpt-4o-mini', user: u2, stream: true, headers: { 'x-mock-chunks': '8', 'x-mock-reset-after': '2' } });
  assert.equal(res.status, 200);
  const { events } = await readSseEvents(res);
  assert.ok(events.some((e) => e?.error?.code === 'upstream_stream_broken'), 'the client saw the stream break');
  assert.equal(await waitStored(gw, before, 300), false, 'nothing stored');
  const next = await ask(gw, 'openai', { user: u2, chunks: 5, stream: true });
  assert.equal(next.cache, 'miss', 'the broken stream was not cached');
  assert.equal(next.text, words(5));
  assert.equal((await ask(gw, 'openai', { user: u2, chunks: 2 })).text, words(5), 'the complete one was');
});

test('answers over max_entry_bytes are relayed but not stored', async () => {
  const user = unique('big');
  const big = { 'x-mock-chunk-bytes': '1000' };
  const before = await stores(sharedGw);
  const a = await ask(sharedGw, 'openai', { user, chunks: 20, headers: big, wait: false });
  assert.equal(a.status, 200);
  assert.equal(a.cache, 'miss');
  assert.equal(await waitStored(sharedGw, before, 300), false, 'not stored');
  assert.ok(a.text.length >= 20000, `${a.text.length} bytes`);
  const b = await ask(sharedGw, 'openai', { user, chunks: 20, headers: big, wait: false });
  assert.equal(b.cache, 'miss', 'a 20 KB answer is over max_entry_bytes: 8KiB');
  const small = unique('small');
  assert.equal((await ask(sharedGw, 'openai', { user: small, chunks: 3 })).cache, 'miss');
  assert.equal((await ask(sharedGw, 'openai', { user: small, chunks: 3 })).cache, 'hit', 'a small one is stored');
});

// Gemini's streamGenerateContent without alt=sse answers one JSON array (not SSE).
async function askArray(g, model, user, chunks) {
  const res = await sendChat(g, 'gemini', { model, user, stream: true, sse: false, headers: { 'x-mock-chunks': String(chunks) } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const arr = JSON.parse(await res.text());
  assert.ok(Array.isArray(arr), 'a JSON array');
  assert.equal(arr.at(-1).candidates[0].finishReason, 'STOP');
  return { cache: res.headers.get('x-sluice-cache'), text: streamText('gemini', arr), elements: arr.length };
}

test('Gemini JSON-array streams (translated channel): recorded and replayed with the whole content', async () => {
  const user = unique('gemini array translated');
  const live = await askArray(gw, 'gpt-4o-mini', user, 7);
  assert.equal(live.cache, 'miss');
  assert.equal(live.text, words(7));
  const again = await askArray(gw, 'gpt-4o-mini', user, 2);
  assert.equal(again.cache, 'hit');
  assert.equal(again.text, words(7));
  const whole = await ask(gw, 'gemini', { user, chunks: 2, model: 'gpt-4o-mini' });
  assert.equal(whole.cache, 'hit');
  assert.equal(whole.text, words(7));
});

// Regression (fixed): on a native `gemini` channel, a streamGenerateContent request without alt=sse
// is relayed as a whole body (Proxy.cpp: the upstream's content type is not text/event-stream,
// so relayWhole) and the entry recorded from that JSON array (Recorder::fromWhole) holds only the
// first element's text: every later hit (array, SSE or whole) answers "Hello" instead of
// "Hello from sluice mock. This is a". The live answer itself is complete.
test('a Gemini JSON-array stream from a gemini channel is cached with its whole content', async () => {
  const user = unique('gemini array native');
  const live = await askArray(gw, 'gemini-2.5-flash', user, 7);
  assert.equal(live.cache, 'miss');
  assert.equal(live.text, words(7));
  const failures = [];
  const again = await askArray(gw, 'gemini-2.5-flash', user, 2);
  if (again.cache !== 'hit' || again.text !== words(7)) failures.push(`array replay: ${again.cache} ${JSON.stringify(again.text)}`);
  const whole = await ask(gw, 'gemini', { user, chunks: 2 });
  if (whole.cache !== 'hit' || whole.text !== words(7)) failures.push(`whole replay: ${whole.cache} ${JSON.stringify(whole.text)}`);
  const sse = await ask(gw, 'gemini', { user, chunks: 2, stream: true });
  if (sse.cache !== 'hit' || sse.text !== words(7)) failures.push(`sse replay: ${sse.cache} ${JSON.stringify(sse.text)}`);
  assert.deepEqual(failures, [], `expected every replay to hold ${JSON.stringify(words(7))}`);
});

// Regression (fixed; a race): the entry of a miss is put in the cache after the answer's last byte
// went out (protectAndRelay: cache->put after relayWithFailover returns), so a client that repeats
// a request as soon as it has the answer sometimes gets a second miss and a second upstream call
// (about 5 in 100 whole answers here). Limits are settled before the last byte for this very
// reason (Relay::beginSettle); the cache entry is not. Nondeterministic: 200 tries.
test('an immediate repeat of a cached answer is a hit (the entry is stored before the answer ends)', async () => {
  const misses = [];
  for (let i = 0; i < 200; i++) {
    const user = unique('race');
    const a = await ask(gw, 'openai', { user, wait: false });
    assert.equal(a.cache, 'miss');
    const b = await ask(gw, 'openai', { user, wait: false });
    if (b.cache !== 'hit') misses.push(i);
  }
  assert.deepEqual(misses, [], `${misses.length} of 200 immediate repeats missed`);
});

// Regression: a Bedrock answer served from the cache had an empty id (and model). AWS Converse
// names neither; the live translation gives the answer msg_bdrk_<request id>, but the entry was
// recorded from the upstream's bytes without it, so every replay said "id": "".
test('a Bedrock answer served from the cache carries the id and model the live answer had, in every client format', async () => {
  const bgw = await startGateway({ channels: [{
    name: 'br', type: 'bedrock', base_url: mock.url, region: 'us-east-1',
    keys: ['AKIAMOCKACCESSKEY001:mock/secret+AccessKey0000000000000000000'], models: ['anthropic.claude-*'],
  }], extra: 'cache:\n  enabled: true\n  ttl: 1h\n' });
  started.push(bgw);
  const model = 'anthropic.claude-sonnet-4';
  const idOf = (format, r) => {
    if (r.events) {
      const first = r.events[0];
      return format === 'openai' ? first.id : format === 'anthropic' ? first.message.id : first.responseId;
    }
    return format === 'gemini' ? r.body.responseId : r.body.id;
  };
  const modelOf = (format, r) => {
    if (format === 'gemini') return (r.events ? r.events[0] : r.body).modelVersion;
    if (r.events) return format === 'openai' ? r.events[0].model : r.events[0].message.model;
    return r.body.model;
  };
  for (const format of FORMATS) {
    for (const stream of [false, true]) {
      const what = `${format} ${stream ? 'stream' : 'whole'}`;
      const user = unique(`bedrock ${what}`);
      const live = await ask(bgw, format, { model, user, stream });
      assert.equal(live.status, 200, `${what}: ${live.body}`);
      assert.equal(live.cache, 'miss', what);
      assert.ok(live.stored, `${what}: stored`);
      const id = idOf(format, live);
      assert.match(id, /^msg_bdrk_\S+$/, `${what}: the live answer's id`);
      const hit = await ask(bgw, format, { model, user, stream, chunks: 2 });
      assert.equal(hit.cache, 'hit', what);
      assert.equal(hit.text, live.text, what);
      assert.equal(idOf(format, hit), id, `${what}: the replay carries the live answer's id`);
      assert.equal(modelOf(format, hit), modelOf(format, live), `${what}: and its model`);
      assert.equal(modelOf(format, hit), model, what);
    }
  }
});
