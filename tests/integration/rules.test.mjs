// Error rules and model fallbacks (routing.rules, routing.fallbacks): what an upstream error
// answer leads to, and the models tried once a model's channels are spent. Each channel is its
// own mock, so a test counts what reached which; a channel fails through the x-mock-* headers
// its config sends upstream.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, chat, readSse, metrics, waitFor, MASTER } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args = []) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }
const ask = (model, extra = {}) => ({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });

// The x-mock-* headers that make every answer of a channel an error of this status and body.
const failing = (status, body) => ({
  'x-mock-fail-rate': '1', 'x-mock-fail-status': String(status),
  ...(body ? { 'x-mock-fail-body': JSON.stringify(body) } : {}),
});
const openaiError = (message, code, type = 'invalid_request_error') => ({ error: { message, type, param: null, code } });
const tooLong = openaiError("This model's maximum context length is 128000 tokens.", 'context_length_exceeded');
const overloaded = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
const requests = async (m) => (await m.stats()).requests;

test('default rules: a bad request is the client\'s at once, not retried on every key and channel', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({ channels: [
    { name: 'a', url: a.url, keys: ['ka-1111111111', 'ka-2222222222'], priority: 1,
      headers: failing(400, openaiError("Invalid value for 'temperature'.", 'invalid_value')) },
    { name: 'b', url: b.url, priority: 2 },
  ] });
  const res = await chat(gw, ask('gpt-4o'));
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('x-sluice-attempts'), '1');
  assert.equal((await res.json()).error.code, 'invalid_value');
  assert.equal(await requests(a), 1);
  assert.equal(await requests(b), 0);
});

test('a fallback rule sends a too-long prompt to the fallback model, translated, plain and streamed', async () => {
  const small = await mockP(), big = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'small', url: small.url, models: ['gpt-4o'], headers: failing(400, tooLong) },
      { name: 'big', type: 'anthropic', base_url: big.url, models: ['claude-sonnet-4-5'] },
    ],
    routing: {
      rules: [{ status: [400], body: 'context_length_exceeded|prompt is too long', action: 'fallback' }],
      fallbacks: { 'gpt-4o': ['claude-sonnet-4-5'] },
    },
  });
  const res = await chat(gw, ask('gpt-4o'));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'big');
  assert.equal(res.headers.get('x-sluice-model'), 'claude-sonnet-4-5');
  assert.equal(res.headers.get('x-sluice-attempts'), '2');
  const body = await res.json();
  assert.equal(body.object, 'chat.completion');
  assert.equal(body.model, 'claude-sonnet-4-5', 'the answer names the model that served it');
  assert.equal((await big.stats()).last_request.path, '/v1/messages');
  assert.equal((await big.stats()).last_request.body.model, 'claude-sonnet-4-5');

  const s = await chat(gw, ask('gpt-4o', { stream: true }));
  assert.equal(s.status, 200);
  assert.equal(s.headers.get('x-sluice-model'), 'claude-sonnet-4-5');
  const { events } = await readSse(s);
  assert.equal(events.at(-1), '[DONE]');
  const chunks = events.slice(0, -1);
  assert.equal(chunks.filter((e) => e.choices?.[0]?.delta?.role === 'assistant').length, 1, 'one role');
  assert.equal(chunks.filter((e) => e.choices?.[0]?.finish_reason).length, 1, 'one finish');
  assert.ok(chunks.every((e) => e.model === 'claude-sonnet-4-5'));
  assert.match(await metrics(gw), /sluice_fallbacks_total\{from="gpt-4o",to="claude-sonnet-4-5"\} 2/);
});

test('fallbacks follow once every channel of the model has failed; the log names each attempt\'s model', async () => {
  const down1 = await mockP(), down2 = await mockP(), spare = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'down1', url: down1.url, models: ['gpt-4o'], headers: failing(503) },
      { name: 'down2', url: down2.url, models: ['gpt-4o'], headers: failing(502) },
      { name: 'spare', url: spare.url, models: ['gpt-4o-mini'] },
    ],
    routing: { max_retries: 3, fallbacks: { 'gpt-4o': ['no-such-model', 'gpt-4o-mini'] } },
  });
  const res = await chat(gw, ask('gpt-4o'));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'spare');
  assert.equal(res.headers.get('x-sluice-model'), 'gpt-4o-mini');
  assert.equal(res.headers.get('x-sluice-attempts'), '3');
  assert.equal((await res.json()).model, 'gpt-4o-mini');
  assert.equal((await spare.stats()).last_request.body.model, 'gpt-4o-mini');
  // The request log: three attempts, the last on the fallback model.
  const row = await waitFor(async () => (await (await fetch(`${gw.url}/admin/api/logs?limit=1`, {
    headers: { authorization: `Bearer ${MASTER}` } })).json()).data?.[0]);
  assert.ok(row, 'the request was logged');
  assert.equal(row.model, 'gpt-4o', 'the log keeps the model the client asked for');
  const attempts = row.attempts;
  assert.deepEqual(attempts.map((x) => [x.model, x.status]).sort(), [['gpt-4o', 502], ['gpt-4o', 503], ['gpt-4o-mini', 200]]);
});

test('every model spent: the client hears every attempt of every model', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, models: ['m-one'], headers: failing(503) },
      { name: 'b', url: b.url, models: ['m-two'], headers: failing(500) },
    ],
    routing: { fallbacks: { 'm-one': ['m-two'] } },
  });
  const res = await chat(gw, ask('m-one'));
  assert.equal(res.status, 502);
  assert.equal(res.headers.get('x-sluice-attempts'), '2');
  const msg = (await res.json()).error.message;
  assert.match(msg, /#1 a key .*503/);
  assert.match(msg, /falling back to m-two/);
  assert.match(msg, /#2 b key .*500/);
});

test('a fallback model the virtual key may not use is not tried', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, models: ['m-one'], headers: failing(503) },
      { name: 'b', url: b.url, models: ['m-secret'] },
    ],
    routing: { fallbacks: { 'm-one': ['m-secret'] } },
  });
  const created = await fetch(`${gw.url}/admin/api/keys`, {
    method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'narrow', allowed_models: ['m-one'] }),
  });
  assert.equal(created.status, 201);
  const { secret } = await created.json();
  const res = await chat(gw, ask('m-one'), { key: secret });
  assert.equal(res.status, 502);
  assert.match((await res.json()).error.message, /fallback m-secret: this key \(narrow\) may not use it/);
  assert.equal(await requests(b), 0);
});

test('a fallback rule with no fallback model left returns the upstream\'s answer', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, priority: 1, headers: failing(400, tooLong) },
      { name: 'b', url: b.url, priority: 2 },
    ],
    routing: { rules: [{ status: [400], body: 'context_length_exceeded', action: 'fallback' }] },
  });
  const res = await chat(gw, ask('gpt-4o'));
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, 'context_length_exceeded');
  assert.equal(await requests(b), 0, 'another channel of the same model is not tried');
});

test('retry: another key of the same channel, and the failing key is not cooled down', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, priority: 1, keys: ['ka-1111111111', 'ka-2222222222'],
        headers: { ...failing(500, openaiError('quota for this key', 'key_quota', 'server_error')), 'x-mock-fail-key': 'ka-1111111111' } },
      { name: 'b', url: b.url, priority: 2 },
    ],
    routing: { rules: [{ status: [500], body: 'key_quota', action: 'retry' }] },
  });
  const seen = [];
  for (let i = 0; i < 6; i++) {
    const res = await chat(gw, ask('gpt-4o'));
    assert.equal(res.status, 200);
    seen.push([res.headers.get('x-sluice-channel'), res.headers.get('x-sluice-attempts')]);
    await res.text();
  }
  assert.ok(seen.every(([ch]) => ch === 'a'), JSON.stringify(seen));
  assert.ok(seen.some(([, n]) => n === '2'), JSON.stringify(seen));
  assert.equal(await requests(b), 0);
  // Not cooled down: the round-robin keeps offering the key (each time it fails and the other serves).
  assert.ok((await a.stats()).by_key['ka-1111111111'] >= 3, JSON.stringify((await a.stats()).by_key));
  assert.doesNotMatch(await metrics(gw), /state="cooling"/);
});

test('cooldown for a set time: the key rests and the next channel serves meanwhile', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, priority: 1, headers: failing(529, overloaded) },
      { name: 'b', url: b.url, priority: 2 },
    ],
    routing: { rules: [{ status: [503, 529], body: 'overloaded', action: 'cooldown', for: '60s' }] },
  });
  for (let i = 0; i < 3; i++) {
    const res = await chat(gw, ask('gpt-4o'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'b');
    await res.text();
  }
  assert.equal(await requests(a), 1, 'the cooled key is not asked again');
  assert.match(await metrics(gw), /sluice_upstream_key_state\{channel="a",[^}]*state="cooling"\} 1/);
});

test('disable: the key is switched off on an answer that says so', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, priority: 1,
        headers: failing(400, openaiError('Your organization has been disabled.', 'organization_deactivated')) },
      { name: 'b', url: b.url, priority: 2 },
    ],
    routing: { rules: [{ body: 'organization_deactivated', action: 'disable' }] },
  });
  for (let i = 0; i < 2; i++) {
    const res = await chat(gw, ask('gpt-4o'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'b');
    await res.text();
  }
  assert.equal(await requests(a), 1);
  assert.match(await metrics(gw), /sluice_upstream_key_state\{channel="a",[^}]*state="disabled"\} 1/);
});

test('first match wins: return before the built-in failover, only for the body it names', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, priority: 1 },
      { name: 'b', url: b.url, priority: 2 },
    ],
    routing: { rules: [{ status: 503, body: 'maintenance', action: 'return' }, { status: [503], action: 'failover' }] },
  });
  const named = await chat(gw, ask('gpt-4o'), { headers: failing(503, openaiError('down for maintenance', 'maintenance', 'server_error')) });
  assert.equal(named.status, 503);
  assert.equal(named.headers.get('x-sluice-attempts'), '1');
  assert.equal((await named.json()).error.code, 'maintenance');
  await a.reset(); await b.reset();
  const other = await chat(gw, ask('gpt-4o'), { headers: failing(503) });
  assert.equal(other.status, 502, 'both channels tried');
  assert.equal(other.headers.get('x-sluice-attempts'), '2');
  await other.text();
});

test('a rule\'s pattern sees a key the provider quoted only masked', async () => {
  const a = await mockP(), b = await mockP();
  const gw = await gwP({
    channels: [
      { name: 'a', url: a.url, priority: 1, keys: ['sk-live-secretsecret1234'], headers: { ...failing(401), 'x-mock-echo-key': '1' } },
      { name: 'b', url: b.url, priority: 2 },
    ],
    // Would return the 401 (with the key in it) if the pattern could see the key.
    routing: { rules: [{ status: [401], body: 'secretsecret', action: 'return' }] },
  });
  const res = await chat(gw, ask('gpt-4o'));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-sluice-channel'), 'b');
  assert.doesNotMatch(await res.text(), /secretsecret/);
});

test('config: a rule without an action, an unknown action, a bad pattern and a misplaced `for` are refused', async () => {
  const { spawnSync } = await import('node:child_process');
  const { writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tempDir, BIN } = await import('../lib/harness.mjs');
  const cases = [
    ['rules: [{status: [400]}]', /routing.rules\[0\]: a rule needs an action/],
    ['rules: [{status: [400], action: explode}]', /routing.rules\[0\].action: expected retry, failover, cooldown, disable, fallback or return, got "explode"/],
    ['rules: [{body: "(", action: return}]', /routing.rules\[0\].body: not a valid RE2 pattern/],
    ['rules: [{status: [400], action: return, for: 10s}]', /routing.rules\[0\].for: only a cooldown rule takes a duration/],
    ['rules: [{status: [200], action: return}]', /routing.rules\[0\].status\[0\]: must be from 400 to 599, got 200/],
    ['rules: [{status: [429], action: cooldown, when: now}]', /unknown key "when" in routing.rules\[0\]/],
    ['fallbacks: {gpt-4o: [gpt-4o]}', /routing.fallbacks.gpt-4o\[0\]: a model cannot be its own fallback/],
    ['fallbacks: {gpt-4o: claude}', /routing.fallbacks.gpt-4o: expected a list of strings/],
  ];
  for (const [routing, want] of cases) {
    const file = join(tempDir(), 'sluice.yaml');
    writeFileSync(file, `routing:\n  ${routing}\nchannels:\n  - {name: a, type: openai, base_url: "http://127.0.0.1:1/v1", keys: [k], models: ["*"]}\n`);
    const r = spawnSync(BIN, ['check', '-c', file], { encoding: 'utf8' });
    assert.notEqual(r.status, 0, routing);
    assert.match(r.stderr + r.stdout, want, routing);
  }
});
