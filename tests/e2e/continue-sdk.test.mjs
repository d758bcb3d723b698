// routing.on_stall: continue, read by the official SDKs: a stream cut, stalled or failed in-band
// after its first content is continued on the next channel (of another format, for two of them),
// and each SDK reads one whole answer, the same text an unbroken one has, with no error raised.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { startMock, startGateway, MASTER } from '../lib/harness.mjs';

let bad, good, gw, whole;
before(async () => {
  bad = await startMock();
  good = await startMock();
  const cut = { 'x-mock-reset-after': '3' };
  const stall = { 'x-mock-stall-after': '3' };
  const inband = { 'x-mock-error-event-rate': '1', 'x-mock-error-event-after': '3', 'x-mock-fail-status': '529' };
  gw = await startGateway({
    channels: [
      { name: 'oa-bad', type: 'openai', base_url: `${bad.url}/v1`, models: ['gpt-4o-mini'], priority: 1, headers: cut },
      { name: 'an-good', type: 'anthropic', base_url: good.url, models: ['gpt-4o-mini'], priority: 2 },
      { name: 'an-bad', type: 'anthropic', base_url: bad.url, models: ['claude-sonnet-4-5'], priority: 1, headers: stall },
      { name: 'oa-good', type: 'openai', base_url: `${good.url}/v1`, models: ['claude-sonnet-4-5'], priority: 2 },
      { name: 'ge-bad', type: 'gemini', base_url: bad.url, models: ['gemini-2.5-flash'], priority: 1, headers: inband },
      { name: 'ge-good', type: 'gemini', base_url: good.url, models: ['gemini-2.5-flash'], priority: 2 },
    ],
    routing: { on_stall: 'continue', stall_timeout: '300ms' },
  });
  const r = await fetch(`${good.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
  });
  whole = (await r.json()).choices[0].message.content;
});
after(async () => { await gw?.stop(); await good?.stop(); await bad?.stop(); });

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 });

test('openai SDK, chat: an OpenAI channel cut mid-answer, continued on an Anthropic channel', async () => {
  const s = await openai().chat.completions.create({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'hi' }] });
  let text = '', finish = null, usage = null, roles = 0;
  for await (const ch of s) {
    text += ch.choices[0]?.delta?.content ?? '';
    if (ch.choices[0]?.delta?.role) roles++;
    finish = ch.choices[0]?.finish_reason ?? finish;
    if (ch.usage) usage = ch.usage;
  }
  assert.equal(text, whole);
  assert.equal(roles, 1);
  assert.equal(finish, 'stop');
  assert.ok(usage.completion_tokens >= 8, `usage of both attempts (${usage.completion_tokens})`);
});

test('openai SDK, Responses: the same break, one response completed', async () => {
  const s = await openai().responses.create({ model: 'gpt-4o-mini', input: 'hi', stream: true });
  let text = '', completed = null;
  for await (const ev of s) {
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed') completed = ev.response;
  }
  assert.equal(text, whole);
  assert.equal(completed.output_text ?? completed.output[0].content[0].text, whole);
});

test('anthropic SDK: an Anthropic channel that stalls, continued on an OpenAI channel', async () => {
  const c = new Anthropic({ baseURL: `${gw.url}/anthropic`, apiKey: MASTER, maxRetries: 0 });
  const s = c.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'hi' }] });
  const msg = await s.finalMessage();
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].text, whole);
  assert.equal(msg.stop_reason, 'end_turn');
});

test('google SDK: a Gemini channel that reports an overload mid-answer, continued on another', async () => {
  const ai = new GoogleGenAI({ apiKey: MASTER, httpOptions: { baseUrl: `${gw.url}/gemini` } });
  const s = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi' });
  let text = '';
  for await (const ch of s) text += ch.text ?? '';
  assert.equal(text, whole);
});
