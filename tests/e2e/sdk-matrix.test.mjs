// The official SDKs of each provider, pointed at sluice, reaching channels of their own format
// (passed through natively) and of the other format (translated), plain, streaming, and with a
// tool call that goes round trip: the model asks, the client answers, the model finishes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { startMock, startGateway, MASTER } from '../lib/harness.mjs';

let mock, gw;
before(async () => {
  mock = await startMock(['--chunks', '6']);
  gw = await startGateway({ channels: [
    { name: 'oa', type: 'openai', url: mock.url, models: ['gpt-4o-mini'] },
    { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-sonnet-4-5'] },
    { name: 'ge', type: 'gemini', base_url: mock.url, models: ['gemini-2.5-flash', 'text-embedding-004'] },
    // A chat-completions-only server (vLLM, Ollama...): Responses requests reach it as chat.
    { name: 'vllm', type: 'openai-compatible', url: mock.url, models: ['llama-3.1-8b'] },
  ] });
});
after(async () => { await gw?.stop(); await mock?.stop(); });

const weatherAsk = "What's the weather in Paris? Use the get_weather tool.";
const weatherSchema = { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] };

function openai() { return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 }); }
function anthropic() { return new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 }); }
function gemini() { return new GoogleGenAI({ apiKey: MASTER, httpOptions: { baseUrl: `${gw.url}/gemini` } }); }

for (const model of ['gpt-4o-mini', 'claude-sonnet-4-5', 'gemini-2.5-flash']) {
  test(`openai SDK -> ${model}: plain, stream, tool round trip`, async () => {
    const c = openai();
    const r = await c.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hi' }] });
    assert.ok(r.choices[0].message.content.length > 0);
    assert.ok(r.usage.completion_tokens > 0);
    let text = '';
    const s = await c.chat.completions.create({ model, stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Say hi' }] });
    let usage;
    for await (const ch of s) { text += ch.choices[0]?.delta?.content ?? ''; if (ch.usage) usage = ch.usage; }
    assert.ok(text.length > 0);
    assert.ok(usage?.completion_tokens > 0);
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: weatherSchema } }];
    const messages = [{ role: 'user', content: weatherAsk }];
    const first = await c.chat.completions.create({ model, messages, tools });
    const call = first.choices[0].message.tool_calls?.[0];
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof JSON.parse(call.function.arguments).location, 'string');
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '18 degrees and sunny' });
    // the answer to the tool result, streamed this time
    const fin = await c.chat.completions.create({ model, messages, tools, stream: true });
    let answer = '';
    let finish;
    for await (const ch of fin) { answer += ch.choices[0]?.delta?.content ?? ''; finish = ch.choices[0]?.finish_reason ?? finish; }
    assert.match(answer, /18 degrees/);
    assert.equal(finish, 'stop');
  });
}

for (const model of ['claude-sonnet-4-5', 'gpt-4o-mini', 'gemini-2.5-flash']) {
  test(`anthropic SDK -> ${model}: plain, stream, tool round trip`, async () => {
    const c = anthropic();
    const r = await c.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hi' }] });
    assert.equal(r.type, 'message');
    assert.ok(r.content[0].text.length > 0);
    assert.ok(r.usage.output_tokens > 0);
    const stream = c.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hi' }] });
    let text = '';
    stream.on('text', (t) => { text += t; });
    const final = await stream.finalMessage();
    assert.ok(text.length > 0);
    assert.equal(final.stop_reason, 'end_turn');
    const tools = [{ name: 'get_weather', description: 'Weather for a city', input_schema: weatherSchema }];
    const messages = [{ role: 'user', content: weatherAsk }];
    const first = await c.messages.stream({ model, max_tokens: 256, messages, tools }).finalMessage();
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.equal(typeof use.input.location, 'string');
    messages.push({ role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18 degrees and sunny' }] });
    const fin = await c.messages.create({ model, max_tokens: 256, messages, tools });
    assert.equal(fin.stop_reason, 'end_turn');
    assert.match(fin.content.map((b) => b.text ?? '').join(''), /18 degrees/);
  });
}

// Claude Code and the Anthropic SDK read the prompt's size and the cache from the accumulated
// usage (message_start, then message_delta's fields over it): whatever the provider, the final
// message carries the cache reads and writes, and input_tokens without them.
for (const model of ['claude-sonnet-4-5', 'gpt-4o-mini', 'gemini-2.5-flash']) {
  test(`anthropic SDK -> ${model}: the streamed usage carries the cache counts`, async () => {
    const c = anthropic();
    const headers = { 'x-mock-usage': 'cache_read=600,cache_write=200,reasoning=50' };
    const params = { model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hi' }] };
    const whole = await c.messages.create(params, { headers });
    const final = await c.messages.stream(params, { headers }).finalMessage();
    for (const u of [whole.usage, final.usage]) {
      assert.equal(u.cache_read_input_tokens, 600, JSON.stringify(u));
      // Gemini reports no cache writes: they stay in the prompt's count, so in input_tokens here.
      const gem = model.startsWith('gemini');
      assert.equal(u.cache_creation_input_tokens, gem ? 0 : 200, JSON.stringify(u));
      assert.ok(u.input_tokens > (gem ? 200 : 0) && u.input_tokens < (gem ? 400 : 200), JSON.stringify(u));
      assert.equal(u.output_tokens, 6 + 50, JSON.stringify(u));  // thinking is inside output_tokens
    }
    assert.equal(final.usage.input_tokens, whole.usage.input_tokens);
  });
}

test('openai SDK: cache reads, cache writes and reasoning tokens from an Anthropic or Gemini channel', async () => {
  const c = openai();
  const headers = { 'x-mock-usage': 'cache_read=600,cache_write=200,reasoning=50' };
  for (const model of ['claude-sonnet-4-5', 'gemini-2.5-flash']) {
    const r = await c.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hi' }] }, { headers });
    assert.equal(r.usage.prompt_tokens_details.cached_tokens, 600);
    assert.ok(r.usage.prompt_tokens > 800);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    if (model.startsWith('claude')) {
      assert.equal(r.usage.prompt_tokens_details.cache_write_tokens, 200);
    } else {
      assert.equal(r.usage.completion_tokens_details.reasoning_tokens, 50);
    }
    const resp = await c.responses.create({ model, input: 'Say hi' }, { headers });
    assert.equal(resp.usage.input_tokens_details.cached_tokens, 600);
    assert.equal(resp.usage.output_tokens_details.reasoning_tokens, model.startsWith('gemini') ? 50 : 0);
  }
});

test('anthropic SDK: count_tokens and typed errors', async () => {
  const c = anthropic();
  const n = await c.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hello there' }] });
  assert.ok(n.input_tokens > 0);
  // A model whose provider cannot count: an estimate, marked as one.
  const est = await c.messages.countTokens({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there' }] })
    .withResponse();
  assert.equal(est.data.input_tokens, 6);
  assert.equal(est.response.headers.get('x-sluice-token-count'), 'estimate');
  const bad = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: 'sk-wrong', maxRetries: 0 });
  await assert.rejects(bad.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.status === 401);
  await assert.rejects(c.messages.create({ model: 'nope', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.NotFoundError);
});

for (const model of ['gpt-4o-mini', 'claude-sonnet-4-5']) {
  test(`gemini SDK -> ${model}: generateContent, stream, function call round trip (translated)`, async () => {
    const ai = gemini();
    const r = await ai.models.generateContent({ model, contents: 'Say hi' });
    assert.ok(r.text.length > 0);
    assert.ok(r.usageMetadata.candidatesTokenCount > 0);
    let text = '';
    for await (const ch of await ai.models.generateContentStream({ model, contents: 'Say hi' })) text += ch.text ?? '';
    assert.ok(text.length > 0);
    const decl = { name: 'get_weather', description: 'Weather for a city', parameters: weatherSchema };
    const contents = [{ role: 'user', parts: [{ text: weatherAsk }] }];
    const cfg = { tools: [{ functionDeclarations: [decl] }] };
    const first = await ai.models.generateContent({ model, contents, config: cfg });
    const fc = first.functionCalls?.[0];
    assert.equal(fc?.name, 'get_weather');
    assert.equal(typeof fc.args.location, 'string');
    contents.push(first.candidates[0].content, { role: 'user', parts: [{ functionResponse: { id: fc.id, name: 'get_weather', response: { result: '18 degrees and sunny' } } }] });
    let answer = '';
    for await (const ch of await ai.models.generateContentStream({ model, contents, config: cfg })) answer += ch.text ?? '';
    assert.match(answer, /18 degrees/);
  });
}

for (const model of ['gpt-4o-mini', 'llama-3.1-8b', 'claude-sonnet-4-5', 'gemini-2.5-flash']) {
  test(`openai SDK responses API -> ${model}: create, stream, function call round trip`, async () => {
    const c = openai();
    const r = await c.responses.create({ model, input: 'Say hi' });
    assert.equal(r.status, 'completed');
    assert.ok(r.output_text.length > 0);
    assert.ok(r.usage.output_tokens > 0);
    let text = '';
    let completed;
    const s = await c.responses.create({ model, input: 'Say hi', stream: true });
    for await (const ev of s) {
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    assert.ok(text.length > 0);
    assert.ok(completed?.usage?.output_tokens > 0);
    const tools = [{ type: 'function', name: 'get_weather', description: 'Weather for a city', parameters: weatherSchema }];
    const first = await c.responses.create({ model, input: weatherAsk, tools });
    const call = first.output.find((o) => o.type === 'function_call');
    assert.equal(call?.name, 'get_weather');
    const input = [{ role: 'user', content: weatherAsk }, call, { type: 'function_call_output', call_id: call.call_id, output: '18 degrees and sunny' }];
    const fin = await c.responses.create({ model, input, tools });
    assert.match(fin.output_text, /18 degrees/);
  });
}

test('gemini SDK -> gemini: generateContent, stream, countTokens, embedContent, function call round trip', async () => {
  const ai = gemini();
  const r = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Say hi' });
  assert.ok(r.text.length > 0);
  assert.ok(r.usageMetadata.candidatesTokenCount > 0);
  let text = '';
  for await (const ch of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Say hi' })) text += ch.text ?? '';
  assert.ok(text.length > 0);
  const n = await ai.models.countTokens({ model: 'gemini-2.5-flash', contents: 'Hello there' });
  assert.ok(n.totalTokens > 0);
  const e = await ai.models.embedContent({ model: 'text-embedding-004', contents: 'Hello' });
  assert.ok(e.embeddings[0].values.length > 0);
  const decl = { name: 'get_weather', description: 'Weather for a city', parameters: weatherSchema };
  const contents = [{ role: 'user', parts: [{ text: weatherAsk }] }];
  const first = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents, config: { tools: [{ functionDeclarations: [decl] }] } });
  const fc = first.functionCalls?.[0];
  assert.equal(fc?.name, 'get_weather');
  contents.push(first.candidates[0].content, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: '18 degrees and sunny' } } }] });
  const fin = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents, config: { tools: [{ functionDeclarations: [decl] }] } });
  assert.match(fin.text, /18 degrees/);
});

test('gemini SDK: a bad key is refused in Google\'s error format', async () => {
  const ai = new GoogleGenAI({ apiKey: 'wrong', httpOptions: { baseUrl: `${gw.url}/gemini` } });
  await assert.rejects(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }), (e) => /401|UNAUTHENTICATED|not valid/.test(String(e.message ?? e)));
});
