// Cache reads, cache writes and reasoning tokens through the real gateway and the real mock:
// each client format (OpenAI Chat, Responses, Anthropic, Gemini) against each provider format,
// native and translated, whole and streamed. The mock reports the counts (x-mock-usage) in its
// provider's own terms; the request log keeps them in the gateway's (input and output include
// them), the cost prices each token once at its rate, the client gets what its format carries,
// and the admin API's logs and usage show them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, readSseEvents, admin, logOf, MASTER } from '../lib/harness.mjs';

// USD per million tokens; every rate different, so a token priced at the wrong one shows.
const RATE = { input: 2, output: 8, cached_input: 0.5, cache_write: 2.5, reasoning: 10 };
const PRICING = `pricing:\n  "*-priced": {input: ${RATE.input}, output: ${RATE.output}, cached_input: ${RATE.cached_input}, `
  + `cache_write: ${RATE.cache_write}, reasoning: ${RATE.reasoning}}\n`;
const EXTRA = { cache_read: 600, cache_write: 200, reasoning: 50 };
const CHUNKS = 4;  // the mock's answer: 4 words, 4 tokens

// The provider formats, and what each reports of the extra counts (Gemini has no cache writes,
// Anthropic no reasoning count apart from output_tokens).
const UPSTREAMS = {
  openai: { model: 'oa-priced', reports: { cache_write: true, reasoning: true } },
  anthropic: { model: 'an-priced', reports: { cache_write: true, reasoning: false } },
  gemini: { model: 'ge-priced', reports: { cache_write: false, reasoning: true } },
};
const CLIENTS = ['openai', 'responses', 'anthropic', 'gemini'];
// What each client format can carry.
const CARRIES = {
  openai: { cache_write: true, reasoning: true },
  responses: { cache_write: true, reasoning: true },
  anthropic: { cache_write: true, reasoning: false },
  gemini: { cache_write: false, reasoning: true },
};

let mock, gw;
before(async () => {
  mock = await startMock([]);
  gw = await startGateway({ channels: [
    { name: 'oa', url: mock.url, models: ['oa-*'] },
    { name: 'an', type: 'anthropic', base_url: mock.url, models: ['an-*'] },
    { name: 'ge', type: 'gemini', base_url: mock.url, models: ['ge-*'] },
  ], extra: PRICING });
});
after(async () => { await gw?.stop(); await mock?.stop(); });

function send(client, model, { stream, usage }) {
  const headers = { 'content-type': 'application/json', 'x-mock-chunks': String(CHUNKS) };
  if (usage) headers['x-mock-usage'] = Object.entries(usage).map(([k, v]) => `${k}=${v}`).join(',');
  const text = 'How many tokens is this prompt?';
  if (client === 'openai') {
    return fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: text }], stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}) }) });
  }
  if (client === 'responses') {
    return fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model, input: text, stream }) });
  }
  if (client === 'anthropic') {
    return fetch(`${gw.url}/anthropic/v1/messages`, { method: 'POST',
      headers: { ...headers, 'x-api-key': MASTER, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model, max_tokens: 256, messages: [{ role: 'user', content: text }], stream }) });
  }
  const op = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return fetch(`${gw.url}/gemini/v1beta/models/${model}:${op}`, { method: 'POST', headers: { ...headers, 'x-goog-api-key': MASTER },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text }] }] }) });
}

// A client-format usage object in the gateway's terms.
function countsOf(client, u = {}) {
  if (client === 'openai') {
    return { input: u.prompt_tokens, output: u.completion_tokens, cached: u.prompt_tokens_details?.cached_tokens ?? 0,
      cache_write: u.prompt_tokens_details?.cache_write_tokens ?? 0, reasoning: u.completion_tokens_details?.reasoning_tokens ?? 0 };
  }
  if (client === 'responses') {
    return { input: u.input_tokens, output: u.output_tokens, cached: u.input_tokens_details?.cached_tokens ?? 0,
      cache_write: u.input_tokens_details?.cache_write_tokens ?? 0, reasoning: u.output_tokens_details?.reasoning_tokens ?? 0 };
  }
  if (client === 'anthropic') {
    const cached = u.cache_read_input_tokens ?? 0, cache_write = u.cache_creation_input_tokens ?? 0;
    return { input: u.input_tokens + cached + cache_write, output: u.output_tokens, cached, cache_write, reasoning: 0 };
  }
  const reasoning = u.thoughtsTokenCount ?? 0;
  return { input: u.promptTokenCount, output: (u.candidatesTokenCount ?? 0) + reasoning, cached: u.cachedContentTokenCount ?? 0,
    cache_write: 0, reasoning };
}

// The usage a client ends up with, read as its SDKs read it.
async function clientUsage(client, res, stream) {
  if (!stream) {
    const body = await res.json();
    return countsOf(client, client === 'gemini' ? body.usageMetadata : body.usage);
  }
  const { events, raw } = await readSseEvents(res);
  let u;
  if (client === 'openai') u = events.filter((e) => e?.usage).at(-1)?.usage;
  else if (client === 'responses') u = events.find((e) => e?.type === 'response.completed')?.response?.usage;
  else if (client === 'gemini') u = events.filter((e) => e?.usageMetadata).at(-1)?.usageMetadata;
  else {
    // message_start's usage, then each message_delta's non-null fields over it (the SDKs' accumulation).
    u = { ...events.find((e) => e?.type === 'message_start')?.message?.usage };
    for (const e of events.filter((x) => x?.type === 'message_delta'))
      for (const [k, v] of Object.entries(e.usage ?? {})) if (v !== null) u[k] = v;
  }
  assert.ok(u, `no usage in the stream:\n${raw}`);
  return countsOf(client, u);
}

const cost = (t) => ((t.input - t.cached - t.cache_write) * RATE.input + t.cached * RATE.cached_input
  + t.cache_write * RATE.cache_write + (t.output - t.reasoning) * RATE.output + t.reasoning * RATE.reasoning) / 1e6;

async function oneRequest(client, model, opts) {
  const res = await send(client, model, opts);
  assert.equal(res.status, 200, await res.clone().text());
  const seen = await clientUsage(client, res, opts.stream);
  const log = await logOf(gw, res.headers.get('x-request-id'));
  assert.ok(log, 'no log row');
  return { seen, log };
}

for (const [upstream, { model, reports }] of Object.entries(UPSTREAMS)) {
  for (const client of CLIENTS) {
    for (const stream of [false, true]) {
      const native = client === upstream || (client === 'responses' && upstream === 'openai');
      test(`${client} client, ${upstream} provider (${native ? 'native' : 'translated'}), ${stream ? 'streamed' : 'whole'}`, async () => {
        // The same request without the extra counts: the mock's own prompt size for this route.
        const base = await oneRequest(client, model, { stream });
        assert.equal(base.log.cached_tokens, 0);
        assert.equal(base.log.cache_write_tokens, 0);
        assert.equal(base.log.reasoning_tokens, 0);
        assert.equal(base.log.output_tokens, CHUNKS);
        const { seen, log } = await oneRequest(client, model, { stream, usage: EXTRA });
        const want = {
          input: base.log.input_tokens + EXTRA.cache_read + EXTRA.cache_write,
          output: CHUNKS + EXTRA.reasoning,
          cached: EXTRA.cache_read,
          cache_write: reports.cache_write ? EXTRA.cache_write : 0,
          reasoning: reports.reasoning ? EXTRA.reasoning : 0,
        };
        assert.deepEqual({ input: log.input_tokens, output: log.output_tokens, cached: log.cached_tokens,
          cache_write: log.cache_write_tokens, reasoning: log.reasoning_tokens }, want, JSON.stringify(log));
        assert.ok(Math.abs(log.cost_usd - cost(want)) < 1e-12, `cost ${log.cost_usd}, want ${cost(want)}`);
        assert.ok(Math.abs(base.log.cost_usd - cost({ ...base.log, input: base.log.input_tokens, output: CHUNKS,
          cached: 0, cache_write: 0, reasoning: 0 })) < 1e-12);
        // The client sees every count its format carries.
        assert.deepEqual(seen, { ...want, cache_write: CARRIES[client].cache_write ? want.cache_write : 0,
          reasoning: CARRIES[client].reasoning ? want.reasoning : 0 });
      });
    }
  }
}

test('the admin usage sums the cache writes and reasoning tokens, in JSON and CSV', async () => {
  const res = await admin(gw, '/usage?by=model');
  assert.equal(res.status, 200);
  const rows = (await res.json()).data;
  const oa = rows.find((r) => r.model === 'oa-priced');
  assert.ok(oa, JSON.stringify(rows));
  // 8 requests with the extra counts (4 clients x whole/streamed), 8 without.
  assert.equal(oa.cache_write_tokens, 8 * EXTRA.cache_write);
  assert.equal(oa.reasoning_tokens, 8 * EXTRA.reasoning);
  const ge = rows.find((r) => r.model === 'ge-priced');
  assert.equal(ge.cache_write_tokens, 0);
  assert.ok(ge.reasoning_tokens >= 8 * EXTRA.reasoning);
  const csv = await (await admin(gw, '/usage?by=model&format=csv')).text();
  const [header, ...lines] = csv.trim().split('\r\n');
  assert.equal(header, 'model,requests,errors,input_tokens,output_tokens,cached_tokens,cost_usd,cache_write_tokens,reasoning_tokens');
  const an = lines.find((l) => l.startsWith('an-priced,')).split(',');
  assert.equal(Number(an[7]), 8 * EXTRA.cache_write);
  assert.equal(Number(an[8]), 0);
});

test('the pricing table shows the cache write and reasoning rates', async () => {
  const models = (await (await admin(gw, '/pricing')).json()).models;
  const mine = models.find((m) => m.model === '*-priced');
  assert.equal(mine.cache_write_per_mtok, RATE.cache_write);
  assert.equal(mine.reasoning_per_mtok, RATE.reasoning);
  assert.equal(models.find((m) => m.model === 'claude-sonnet-4-5').cache_write_per_mtok, 3.75);
});

test('a translated Anthropic stream puts the input usage the provider told at its start in message_start', async () => {
  // Gemini tells the prompt's counts from its first chunk on.
  const res = await send('anthropic', 'ge-priced', { stream: true, usage: EXTRA });
  assert.equal(res.status, 200);
  const { events } = await readSseEvents(res);
  const start = events.find((e) => e?.type === 'message_start').message.usage;
  assert.equal(start.cache_read_input_tokens, EXTRA.cache_read);
  assert.ok(start.input_tokens > 0, JSON.stringify(start));
  // OpenAI tells usage only at the end: message_delta carries the input side too.
  const oa = await send('anthropic', 'oa-priced', { stream: true, usage: EXTRA });
  const oaEvents = (await readSseEvents(oa)).events;
  const delta = oaEvents.find((e) => e?.type === 'message_delta').usage;
  assert.equal(delta.cache_read_input_tokens, EXTRA.cache_read);
  assert.equal(delta.cache_creation_input_tokens, EXTRA.cache_write);
  assert.ok(delta.input_tokens > 0, JSON.stringify(delta));
});

test('a malformed x-mock-usage is the mock\'s 400, naming the header', async () => {
  const res = await fetch(`${mock.url}/v1/chat/completions`, { method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer k', 'x-mock-usage': 'thinking=3' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
  assert.equal(res.status, 400);
  assert.match((await res.json()).error.message, /x-mock-usage/);
});
