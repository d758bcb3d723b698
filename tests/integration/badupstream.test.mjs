// Providers that misbehave, and requests that cannot be translated: clear errors in the
// client's format, streams that end properly, and a gateway that keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startMock, startGateway, chat, readSse, MASTER } from '../lib/harness.mjs';

let bad, badPort, mock, gw;
before(async () => {
  // An "Anthropic" and an "OpenAI" upstream that answer 200 with nonsense.
  bad = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const stream = body.includes('"stream":true');
      if (stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: message_start\ndata: {not json at all\n\n');
        res.end('data: \x00\xff garbage without a blank line');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"this is": "not a provider response"');
      }
    });
  });
  await new Promise((r) => bad.listen(0, '127.0.0.1', r));
  badPort = bad.address().port;
  mock = await startMock([]);
  gw = await startGateway({ channels: [
    { name: 'badan', type: 'anthropic', base_url: `http://127.0.0.1:${badPort}`, models: ['claude-broken'] },
    { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-sonnet-4-5'] },
    { name: 'oa', type: 'openai', url: mock.url, models: ['gpt-4o-mini'] },
  ], routing: { max_retries: 0 } });
});
after(async () => { await gw?.stop(); await mock?.stop(); bad?.close(); });

async function stillServing() {
  const r = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(r.status, 200);
  await r.json();
}

test('a translated stream of garbage ends with an error event and [DONE], not a hang', async () => {
  const res = await chat(gw, { model: 'claude-broken', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.status, 200);
  const { events } = await readSse(res);
  assert.match(events.at(-2).error.message, /malformed/);
  assert.equal(events.at(-1), '[DONE]');
  await stillServing();
});

test('a non-stream answer that is not a provider response is a 502 in the client format', async () => {
  const res = await chat(gw, { model: 'claude-broken', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.status, 502);
  const body = await res.json();
  assert.match(body.error.message, /could not be translated/);
  const an = await fetch(`${gw.url}/anthropic/v1/messages`, { method: 'POST',
    headers: { 'x-api-key': MASTER, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 10, messages: [] }) });
  assert.equal(an.status, 400);
  const ab = await an.json();
  assert.equal(ab.type, 'error');
  assert.equal(ab.error.type, 'invalid_request_error');
  assert.match(ab.error.message, /messages/);
  await stillServing();
});

test('requests that cannot be expressed for the upstream get a 400 naming the field', async () => {
  // n > 1 has no Anthropic equivalent.
  const res = await chat(gw, { model: 'claude-sonnet-4-5', n: 2, messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.status, 400);
  const err = (await res.json()).error;
  assert.match(err.message, /\bn\b/);
  // Wrong types and empty content in the client's own format.
  const wrong = await chat(gw, { model: 'claude-sonnet-4-5', messages: 'hello' });
  assert.equal(wrong.status, 400);
  await wrong.text();
  const empty = await chat(gw, { model: 'claude-sonnet-4-5', messages: [] });
  assert.equal(empty.status, 400);
  await empty.text();
  await stillServing();
});
