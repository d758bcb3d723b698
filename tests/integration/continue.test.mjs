// routing.on_stall: continue. A stream that is cut, stalls or reports an error after the client
// began to read it is resumed on the next candidate: that channel gets the request plus the text
// already sent as the assistant's partial turn (a prefill for Anthropic channels, a continue
// instruction for the others), and its answer is spliced into the client's stream as one
// answer: one start, one role, one finish, the text in order and whole. The mock continues a
// partial answer the way a model does (the rest of its sentence), so the client's text equals
// an unbroken answer's byte for byte only if the continuation carried exactly what was sent.
// In every client format, natively and translated both ways.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, parseSse, lastLogRow, MASTER } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args = []) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }

// The answer an unbroken request gets: the mock's sentence in its default 8 pieces.
async function wholeAnswer(mock) {
  const r = await fetch(`${mock.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
  });
  return (await r.json()).choices[0].message.content;
}

// One streamed request per client format; `read` checks the stream is one well-formed answer and
// gives its text and usage.
const formats = {
  openai: {
    send: (gw, model) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
    }),
    read(events) {
      assert.equal(events.at(-1).data, '[DONE]');
      const chunks = events.slice(0, -1).map((e) => e.data);
      assert.ok(chunks.every((c) => !c.error), 'no error chunk');
      assert.equal(chunks.filter((c) => c.choices?.[0]?.delta?.role).length, 1, 'one role');
      assert.equal(chunks.filter((c) => c.choices?.[0]?.finish_reason).length, 1, 'one finish');
      assert.equal(new Set(chunks.map((c) => c.id)).size, 1, 'one id');
      const usage = chunks.at(-1).usage;
      return { text: chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join(''), output: usage?.completion_tokens };
    },
    failed: (events) => events.find((e) => e.data?.error)?.data.error,
  },
  responses: {
    send: (gw, model) => fetch(`${gw.url}/v1/responses`, {
      method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, input: 'hi' }),
    }),
    read(events) {
      const types = events.map((e) => e.data.type);
      assert.equal(types.filter((t) => t === 'response.created').length, 1, 'one created');
      assert.equal(types.filter((t) => t === 'response.output_item.added').length, 1, 'one message item');
      assert.equal(types.at(-1), 'response.completed');
      assert.ok(!types.includes('response.failed') && !types.includes('error'));
      const seq = events.map((e) => e.data.sequence_number);
      assert.deepEqual(seq, seq.map((_, i) => i), 'sequence numbers in order');
      const text = events.filter((e) => e.data.type === 'response.output_text.delta').map((e) => e.data.delta).join('');
      const done = events.at(-1).data.response;
      assert.equal(done.output[0].content[0].text, text, 'the completed response holds the whole text');
      return { text, output: done.usage.output_tokens };
    },
    failed: (events) => events.find((e) => e.data.type === 'response.failed' || e.data.type === 'error')?.data,
  },
  anthropic: {
    send: (gw, model) => fetch(`${gw.url}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': MASTER, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    }),
    read(events) {
      const names = events.map((e) => e.event);
      assert.equal(names.filter((n) => n === 'message_start').length, 1, 'one message_start');
      assert.equal(names.filter((n) => n === 'content_block_start').length, 1, 'one text block');
      assert.equal(names.filter((n) => n === 'message_delta').length, 1, 'one message_delta');
      assert.equal(names.at(-1), 'message_stop');
      assert.ok(!names.includes('error'));
      const text = events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text).join('');
      return { text, output: events.find((e) => e.event === 'message_delta').data.usage.output_tokens };
    },
    failed: (events) => events.find((e) => e.event === 'error')?.data.error,
  },
  gemini: {
    send: (gw, model) => fetch(`${gw.url}/v1beta/models/${model}:streamGenerateContent?alt=sse`, {
      method: 'POST', headers: { 'x-goog-api-key': MASTER, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    }),
    read(events) {
      const chunks = events.map((e) => e.data);
      assert.ok(chunks.every((c) => !c.error), 'no error chunk');
      assert.equal(chunks.filter((c) => c.candidates?.[0]?.finishReason).length, 1, 'one finish');
      const text = chunks.map((c) => (c.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('')).join('');
      return { text, output: chunks.at(-1).usageMetadata?.candidatesTokenCount };
    },
    failed: (events) => events.find((e) => e.data?.error)?.data.error,
  },
};

const channelType = { openai: 'openai', responses: 'openai', anthropic: 'anthropic', gemini: 'gemini' };
const base = (type, m) => (type === 'openai' ? m.url + '/v1' : m.url);

const breaks = {
  cut: { headers: { 'x-mock-reset-after': '3' }, routing: {}, why: /upstream stream broke/ },
  stall: { headers: { 'x-mock-stall-after': '3' }, routing: { stall_timeout: '300ms' }, why: /stalled: no bytes for 300ms/ },
  'error event': {
    headers: { 'x-mock-error-event-rate': '1', 'x-mock-error-event-after': '3', 'x-mock-fail-status': '529' },
    routing: {}, why: /in-band error \d+ after the response started: .*overloaded/i,
  },
};

// `bad` breaks after three pieces of the answer; `good` comes next.
async function setup(badType, goodType, fault, model) {
  const bad = await mockP(), good = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'bad', type: badType, base_url: base(badType, bad), models: [model], priority: 1, headers: fault.headers },
      { name: 'good', type: goodType, base_url: base(goodType, good), models: [model], priority: 2 },
    ],
    routing: { on_stall: 'continue', timeouts: { first_byte: '3s' }, ...fault.routing },
  });
  return { bad, good, gw };
}

for (const [name, f] of Object.entries(formats)) {
  for (const [kind, fault] of Object.entries(breaks)) {
    test(`${name}: a stream ${kind === 'error event' ? 'that reports an error' : kind} after content is continued on the next channel as one answer`, async () => {
      const type = channelType[name];
      const model = name === 'anthropic' ? 'claude-sonnet-4-5' : name === 'gemini' ? 'gemini-2.5-pro' : 'gpt-4o';
      const { bad, good, gw } = await setup(type, type, fault, model);
      const res = await f.send(gw, model);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-sluice-channel'), 'bad', 'committed with the first content');
      const { text, output } = f.read(parseSse(await res.text()));
      assert.equal((await bad.stats()).requests, 1);
      assert.equal((await good.stats()).requests, 1);
      const whole = await wholeAnswer(good);
      assert.equal(text, whole, 'the text of an unbroken answer, nothing repeated or lost');
      // The usage of both attempts: the broken one's output as reported or estimated from its text.
      assert.ok(output >= 5 + 1, `output tokens summed (${output})`);
      const row = await lastLogRow(gw);
      assert.equal(row.status, 200);
      assert.equal(row.attempts.length, 2);
      assert.match(row.attempts[0].error, fault.why);
      assert.match(row.attempts[0].error, /continued on the next candidate/);
      assert.equal(row.attempts[1].channel, 'good');
      assert.equal(row.attempts[1].error, null);
    });
  }
}

test('translated both ways: an OpenAI client, an OpenAI channel cut, an Anthropic channel continues from a prefill', async () => {
  const { good, gw } = await setup('openai', 'anthropic', breaks.cut, 'gpt-4o');
  const res = await formats.openai.send(gw, 'gpt-4o');
  const { text, output } = formats.openai.read(parseSse(await res.text()));
  assert.equal(text, await wholeAnswer(good));
  // The first attempt reported no usage (OpenAI sends it last): its text, 4 bytes a token.
  const firstText = (await wholeAnswer(good)).split(' ').slice(0, 3).join(' ');
  assert.equal(output, Math.ceil(Buffer.byteLength(firstText) / 4) + 5);
});

test('translated: an Anthropic client, its channel stalls, a Gemini channel continues from a continue instruction', async () => {
  const { good, gw } = await setup('anthropic', 'gemini', breaks.stall, 'claude-sonnet-4-5');
  const res = await formats.anthropic.send(gw, 'claude-sonnet-4-5');
  const { text } = formats.anthropic.read(parseSse(await res.text()));
  assert.equal(text, await wholeAnswer(good));
});

test('a Responses client on an OpenAI channel that is cut: continued on an Anthropic channel', async () => {
  const { good, gw } = await setup('openai', 'anthropic', breaks.cut, 'gpt-4o');
  const res = await formats.responses.send(gw, 'gpt-4o');
  const { text } = formats.responses.read(parseSse(await res.text()));
  assert.equal(text, await wholeAnswer(good));
});

test('a stream that breaks twice is continued twice', async () => {
  const a = await mockP(), b = await mockP(), c = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', base_url: a.url + '/v1', priority: 1, headers: { 'x-mock-reset-after': '2' } },
      { name: 'b', base_url: b.url + '/v1', priority: 2, headers: { 'x-mock-reset-after': '2' } },
      { name: 'c', base_url: c.url + '/v1', priority: 3 },
    ],
    routing: { on_stall: 'continue', max_retries: 3 },
  });
  const { text } = formats.openai.read(parseSse(await (await formats.openai.send(gw, 'gpt-4o')).text()));
  assert.equal(text, await wholeAnswer(c));
  const row = await lastLogRow(gw);
  assert.deepEqual(row.attempts.map((x) => x.channel), ['a', 'b', 'c']);
});

test('with no candidate left, the stream ends with the format\'s error event, never as if whole', async () => {
  for (const [name, f] of Object.entries(formats)) {
    const type = channelType[name];
    const model = name === 'anthropic' ? 'claude-sonnet-4-5' : name === 'gemini' ? 'gemini-2.5-pro' : 'gpt-4o';
    const only = await mockP();
    const gw = await gwP({
      channels: [{ name: 'only', type, base_url: base(type, only), models: [model], headers: breaks.cut.headers }],
      routing: { on_stall: 'continue' },
    });
    const text = await (await f.send(gw, model)).text();
    const events = parseSse(text);
    // Not ended as if whole: no finish (OpenAI's translated streams close with [DONE] after the
    // error chunk, as every translated stream does).
    assert.ok(!events.some((e) => e.event === 'message_stop' || e.data?.type === 'response.completed' ||
      e.data?.choices?.[0]?.finish_reason || e.data?.candidates?.[0]?.finishReason), `${name}: not ended as if whole`);
    const err = f.failed(events);
    assert.ok(err, `${name}: an error event`);
    assert.match(err.message ?? err.response?.error?.message, /no candidate could continue it/);
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
  }
});

test('a break inside a tool call\'s arguments is not continued: the error event, the next channel untouched', async () => {
  const { good, gw } = await setup('openai', 'openai', { headers: { 'x-mock-reset-after': '2' } }, 'gpt-4o');
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'use the get_weather tool for Paris' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
    }),
  });
  const events = parseSse(await res.text());
  assert.ok(events.some((e) => e.data?.choices?.[0]?.delta?.tool_calls), 'the call began');
  const err = formats.openai.failed(events);
  assert.match(err.message, /not continued/);
  assert.equal((await good.stats()).requests, 0);
});

test('on_stall: error (the default) still ends a cut stream with the error event, not continued', async () => {
  const bad = await mockP(), good = await mockP();
  const gw = await gwP({  // no on_stall: the default
    channels: [
      { name: 'bad', base_url: bad.url + '/v1', priority: 1, headers: breaks.cut.headers },
      { name: 'good', base_url: good.url + '/v1', priority: 2 },
    ],
  });
  const events = parseSse(await (await formats.openai.send(gw, 'gpt-4o')).text());
  assert.match(formats.openai.failed(events).message, /not retried/);
  assert.equal((await good.stats()).requests, 0);
});

test('with stall_timeout off, a stream silent past the idle timeout is continued too', async () => {
  const bad = await mockP(), good = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'bad', base_url: bad.url + '/v1', priority: 1, headers: { 'x-mock-stall-after': '3' } },
      { name: 'good', base_url: good.url + '/v1', priority: 2 },
    ],
    routing: { on_stall: 'continue', timeouts: { idle: '400ms' } },
  });
  const { text } = formats.openai.read(parseSse(await (await formats.openai.send(gw, 'gpt-4o')).text()));
  assert.equal(text, await wholeAnswer(good));
  const row = await lastLogRow(gw);
  assert.match(row.attempts[0].error, /idle past the idle timeout .*continued on the next candidate/);
});
