// The guardrail webhook on the request path: allow / warn / block verdicts, a webhook that fails
// (500, a non-JSON answer, no answer within the timeout) under fail_open and fail_closed, what the
// webhook receives (the text after redaction, the key, configured headers), and the
// sluice_guardrail_reviews_total counter for each verdict.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startMock, startGateway, readSseEvents, metrics, metricValue, sendChat, answerText, streamText, errorMessageOf, createKey, MASTER,
} from '../lib/harness.mjs';
import { startGuardrail, BLOCK_REASON } from '../lib/guardrail-server.mjs';

const EMAIL = 'jane.doe@example.com';
const FORMATS = ['openai', 'anthropic', 'gemini'];
const NATIVE = { openai: 'gpt-4o-mini', anthropic: 'claude-sonnet-4-5', gemini: 'gemini-2.5-flash' };
const ECHO = { 'x-mock-echo': '1', 'x-mock-chunks': '12' };

let mock, hook, openGw, closedGw;
const started = [];

const channels = (url) => [
  { name: 'oa', url, models: ['gpt-*'] },
  { name: 'an', type: 'anthropic', base_url: url, models: ['claude-*'] },
  { name: 'ge', type: 'gemini', base_url: url, models: ['gemini-*'] },
];
const guardYaml = (url, onFailure) => [
  'guardrail:', `  url: "${url}/review?source=sluice"`, '  timeout: 300ms', `  on_failure: ${onFailure}`,
  '  headers: {X-Guard-Token: "guard-secret-1"}',
  'redaction:', '  enabled: true', '  key: "guardrail-test-redaction-key-0123"', '',
].join('\n');

before(async () => {
  mock = await startMock([]);
  hook = await startGuardrail();
  started.push(mock, hook);
  openGw = await startGateway({ channels: channels(mock.url), extra: guardYaml(hook.url, 'fail_open') });
  closedGw = await startGateway({ channels: channels(mock.url), extra: guardYaml(hook.url, 'fail_closed') });
  started.push(openGw, closedGw);
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

async function ask(g, format, opts) {
  const res = await sendChat(g, format, { model: NATIVE[format], headers: ECHO, ...opts });
  const out = { res, status: res.status, guard: res.headers.get('x-sluice-guardrail') };
  if (res.status !== 200) { out.body = await res.json(); return out; }
  if (opts.stream) out.text = streamText(format, (await readSseEvents(res)).events);
  else out.text = answerText(format, await res.json());
  return out;
}

test('allow: served untouched; the webhook gets the request, its id, model, key and configured headers', async () => {
  for (const format of FORMATS) {
    const user = `ALLOW this ${format} question`;
    const n0 = hook.received.length;
    const r = await ask(openGw, format, { user, system: 'You are terse.' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.text, user);
    assert.equal(r.guard, null, 'no header on allow');
    assert.equal(hook.received.length, n0 + 1, 'one review per request');
    const got = hook.received.at(-1);
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/review?source=sluice');
    assert.match(got.headers['content-type'], /application\/json/);
    assert.equal(got.headers['x-guard-token'], 'guard-secret-1');
    assert.equal(got.body.phase, 'request');
    assert.equal(got.body.request_id, r.res.headers.get('x-request-id'));
    assert.equal(got.body.model, NATIVE[format]);
    assert.equal(got.body.key, null, 'the master key has no virtual key');
    assert.deepEqual(got.body.messages, [{ role: 'system', text: 'You are terse.' }, { role: 'user', text: user }]);
  }
  const { secret, key } = await createKey(openGw, { name: 'team-guard' });
  const r = await ask(openGw, 'openai', { user: 'ALLOW keyed', key: secret });
  assert.equal(r.status, 200);
  assert.deepEqual(hook.find('ALLOW keyed').at(-1).body.key, { id: key.id, name: 'team-guard' });
});

test('warn: served with x-sluice-guardrail: warn, whole and streamed', async () => {
  for (const format of FORMATS) {
    for (const stream of [false, true]) {
      const user = `WARN about this (${format})`;
      const r = await ask(openGw, format, { user, stream });
      assert.equal(r.status, 200);
      assert.equal(r.guard, 'warn', `${format} stream=${stream}`);
      assert.equal(r.text, user);
    }
  }
});

test('block: 400 guardrail_blocked with the reason, in each format; nothing goes upstream', async () => {
  const before = (await mock.stats()).requests;
  for (const g of [openGw, closedGw]) {
    for (const format of FORMATS) {
      for (const stream of [false, true]) {
        const r = await ask(g, format, { user: `please BLOCK this (${format})`, stream });
        assert.equal(r.status, 400, `${format}`);
        const msg = errorMessageOf(format, 400, r.body, 'guardrail_blocked');
        assert.ok(msg.includes(BLOCK_REASON), msg);
      }
    }
  }
  assert.equal((await mock.stats()).requests, before);
});

test('the webhook reviews the text after redaction: tokens, never the e-mail', async () => {
  for (const format of FORMATS) {
    const user = `ALLOW a mail to ${EMAIL} (${format})`;
    const r = await ask(openGw, format, { user });
    assert.equal(r.status, 200);
    assert.equal(r.text, user, 'the client still gets its value back');
    const got = hook.received.at(-1);
    const text = got.body.messages.find((m) => m.role === 'user').text;
    assert.ok(text.includes('[[sluice:EMAIL:'), text);
    assert.ok(!got.raw.includes(EMAIL), `the webhook must not see the e-mail: ${got.raw}`);
  }
});

test('fail_open: a failing, garbled or silent webhook lets the request through with x-sluice-guardrail: unavailable', async () => {
  for (const word of ['ERROR', 'GARBAGE', 'HANG']) {
    for (const format of FORMATS) {
      const user = `${word} in the guardrail (${format})`;
      const r = await ask(openGw, format, { user, stream: format === 'anthropic' });
      assert.equal(r.status, 200, `${word} ${format}: ${JSON.stringify(r.body)}`);
      assert.equal(r.guard, 'unavailable', `${word} ${format}`);
      assert.equal(r.text, user);
    }
  }
});

test('fail_closed: a failing, garbled or silent webhook refuses with 503 guardrail_unavailable in each format', async () => {
  const before = (await mock.stats()).requests;
  for (const word of ['ERROR', 'GARBAGE', 'HANG']) {
    for (const format of FORMATS) {
      const r = await ask(closedGw, format, { user: `${word} in the guardrail (${format})`, stream: format === 'gemini' });
      assert.equal(r.status, 503, `${word} ${format}`);
      const msg = errorMessageOf(format, 503, r.body, 'guardrail_unavailable');
      assert.match(msg, /guardrail/);
      if (word === 'HANG') assert.match(msg, /300 ms/, `the timeout is named: ${msg}`);
    }
  }
  assert.equal((await mock.stats()).requests, before, 'nothing reached the upstream');
  // After failures the webhook and the gateway keep working.
  const ok = await ask(closedGw, 'openai', { user: 'ALLOW after the failures' });
  assert.equal(ok.status, 200);
  assert.equal(ok.text, 'ALLOW after the failures');
});

test('sluice_guardrail_reviews_total counts every verdict, failures and timeouts apart', async () => {
  const m0 = await metrics(closedGw);
  const plan = { ALLOW: 3, WARN: 2, BLOCK: 1, ERROR: 2, GARBAGE: 1, HANG: 2 };
  for (const [word, n] of Object.entries(plan)) {
    for (let i = 0; i < n; i++) {
      const r = await ask(closedGw, 'openai', { user: `${word} #${i}` });
      assert.equal(r.status, { ALLOW: 200, WARN: 200, BLOCK: 400 }[word] ?? 503, `${word} #${i}`);
    }
  }
  const m1 = await metrics(closedGw);
  const d = (verdict) => metricValue(m1, 'sluice_guardrail_reviews_total', { verdict })
    - metricValue(m0, 'sluice_guardrail_reviews_total', { verdict });
  assert.deepEqual({ allow: d('allow'), warn: d('warn'), block: d('block'), failed: d('failed'), timeout: d('timeout') },
    { allow: 3, warn: 2, block: 1, failed: 3, timeout: 2 });
});

test('the webhook gets every turn in order; a request refused by redaction never reaches it', async () => {
  const res = await fetch(`${openGw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}`, ...ECHO },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [
      { role: 'system', content: 'Be brief.' }, { role: 'user', content: 'ALLOW first turn' },
      { role: 'assistant', content: 'first answer' }, { role: 'user', content: 'ALLOW second turn' }] }),
  });
  assert.equal(res.status, 200);
  await res.text();
  assert.deepEqual(hook.received.at(-1).body.messages, [
    { role: 'system', text: 'Be brief.' }, { role: 'user', text: 'ALLOW first turn' },
    { role: 'assistant', text: 'first answer' }, { role: 'user', text: 'ALLOW second turn' }]);
  const n0 = hook.received.length;
  const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----';
  const blocked = await ask(openGw, 'openai', { user: `WARN ${pem}` });
  assert.equal(blocked.status, 400);
  assert.equal(blocked.body.error.code, 'redaction_blocked');
  assert.equal(hook.received.length, n0, 'the private key was never sent to the webhook');
});

test('silent webhooks do not hold up other requests; an unreachable webhook is a failure too', async () => {
  // Several reviews hanging at once, and an allowed request among them: all complete.
  const results = await Promise.all([
    ...Array.from({ length: 4 }, (_, i) => ask(openGw, 'openai', { user: `HANG together ${i}` })),
    ask(openGw, 'openai', { user: 'ALLOW among the hanging' }),
  ]);
  assert.deepEqual(results.map((r) => [r.status, r.guard]), [...Array(4).fill([200, 'unavailable']), [200, null]]);
  assert.equal(results.at(-1).text, 'ALLOW among the hanging');

  const down = await startGateway({ channels: channels(mock.url),
    extra: 'guardrail:\n  url: "http://127.0.0.1:1/review"\n  timeout: 300ms\n  on_failure: fail_closed\n' });
  started.push(down);
  const m0 = await metrics(down);
  for (const format of FORMATS) {
    const r = await ask(down, format, { user: 'ALLOW but nobody listens' });
    assert.equal(r.status, 503, format);
    assert.match(errorMessageOf(format, 503, r.body, 'guardrail_unavailable'), /guardrail/);
  }
  const m1 = await metrics(down);
  const d = (verdict) => metricValue(m1, 'sluice_guardrail_reviews_total', { verdict })
    - metricValue(m0, 'sluice_guardrail_reviews_total', { verdict });
  assert.equal(d('failed') + d('timeout'), 3);
  assert.equal(d('allow'), 0);
});

// Regression (fixed): guardrail.review_response is accepted by the config ("also review non-streamed
// answers before they are sent", Config.hpp) but nothing on the request path reads it
// (Safety::reviewResponse() has no caller): the webhook never gets a phase "response" review,
// and an answer it would block reaches the client.
test('review_response: true reviews a non-streamed answer before it is sent', async () => {
  const g = await startGateway({ channels: channels(mock.url), extra: [
    'guardrail:', `  url: "${hook.url}/review"`, '  timeout: 300ms', '  on_failure: fail_closed', '  review_response: true', '',
  ].join('\n') });
  started.push(g);
  const ok = await ask(g, 'openai', { user: 'ALLOW and a harmless answer' });
  assert.equal(ok.status, 200);
  const reviews = hook.received.filter((r) => r.body?.phase === 'response' && r.body?.response?.includes('ALLOW and a harmless answer'));
  assert.equal(reviews.length, 1, 'the answer was sent to the webhook for review (phase "response")');
  assert.equal(reviews[0].body.request_id, ok.res.headers.get('x-request-id'));
  // The request passes its own review; the answer (the echo) is blocked by the response review.
  const blocked = await ask(g, 'openai', { user: 'ALLOW but the answer says resp-block' });
  assert.notEqual(blocked.status, 200, 'an answer the webhook blocks does not reach the client');
});
