// JSON nesting: real tool and structured-output schemas nest deeper than Boost.JSON's default
// limit (32). The gateway takes bodies nested up to 256 levels, relays a 128-level tool schema
// unchanged natively and translated, and answers a deeper body (up to 10^5 '[') with a 400 in
// the caller's format saying it is nested deeper than the limit, then keeps serving. Run on a
// plain gateway and on one with redaction, screening and the cache on, so every parse is met.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, sendChat, errorMessageOf, MASTER } from '../lib/harness.mjs';

const LIMIT = 256;
let mock, plain, guarded;
const started = [];

before(async () => {
  mock = await startMock([]);
  started.push(mock);
  const channels = [
    { name: 'oa', url: mock.url, models: ['gpt-deep'] },
    { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-deep'] },
    { name: 'ge', type: 'gemini', base_url: mock.url, models: ['gemini-deep'] },
  ];
  plain = await startGateway({ channels });
  guarded = await startGateway({ channels, extra: [
    'redaction:', '  enabled: true', '  key: "deep-json-test-redaction-key-0123456789"',
    'screening:', '  action: warn',
    'cache:', '  enabled: true', '  ttl: 1h', '',
  ].join('\n') });
  started.push(plain, guarded);
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

// A JSON schema `levels` objects deep: arrays of arrays of ... of strings.
function schema(levels) {
  let s = { type: 'string', description: 'leaf' };
  for (let i = 1; i < levels; i++) s = { type: 'array', items: s };
  return { type: 'object', properties: { v: s }, required: ['v'] };  // +2 levels: the tool's parameters
}

const MODELS = { openai: 'gpt-deep', anthropic: 'claude-deep', gemini: 'gemini-deep' };
const FORMATS = ['openai', 'anthropic', 'gemini'];

// The tool's schema as the upstream received it.
function upstreamSchema(format, body) {
  if (format === 'openai') return body.tools[0].function.parameters;
  if (format === 'anthropic') return body.tools[0].input_schema;
  const d = body.tools[0].functionDeclarations[0];
  return d.parametersJsonSchema ?? d.parameters;
}

function rawPost(gw, format, body, model) {
  const headers = { 'content-type': 'application/json' };
  let path = '/v1/chat/completions';
  if (format === 'openai') headers.authorization = `Bearer ${MASTER}`;
  if (format === 'anthropic') { headers['x-api-key'] = MASTER; headers['anthropic-version'] = '2023-06-01'; path = '/anthropic/v1/messages'; }
  if (format === 'gemini') { headers['x-goog-api-key'] = MASTER; path = `/gemini/v1beta/models/${model}:generateContent`; }
  return fetch(`${gw.url}${path}`, { method: 'POST', headers, body });
}

// A request in `format` whose body nests `depth` levels in all: an extra field holding arrays.
function nestedBody(format, depth) {
  const deep = '['.repeat(depth - 1) + ']'.repeat(depth - 1);
  if (format === 'openai') return `{"model":"${MODELS.openai}","messages":[{"role":"user","content":"hi"}],"x":${deep}}`;
  if (format === 'anthropic') return `{"model":"${MODELS.anthropic}","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"x":${deep}}`;
  return `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"x":${deep}}`;
}

async function stillServes(gw, format) {
  const res = await sendChat(gw, format, { model: MODELS[format], user: 'still there?' });
  const text = await res.text();
  assert.equal(res.status, 200, text);
}

for (const [label, gwOf] of [['plain', () => plain], ['redaction, screening and cache on', () => guarded]]) {
  test(`${label}: a 128-level tool schema reaches every provider unchanged, from every client format`, async () => {
    const gw = gwOf();
    const tool = { type: 'function', function: { name: 'deep_tool', description: 'deep', parameters: schema(128) } };
    for (const client of FORMATS) {
      for (const up of FORMATS) {
        await mock.reset();
        const res = await sendChat(gw, client, { model: MODELS[up], user: `deep ${client} to ${up}, from bob@example.com`, tools: [tool] });
        const text = await res.text();
        assert.equal(res.status, 200, `${client} -> ${up}: ${text.slice(0, 500)}`);
        const last = (await mock.stats()).last_request;
        assert.equal(typeof last.body, 'object', `${client} -> ${up}: the upstream body is JSON`);
        assert.deepEqual(upstreamSchema(up, last.body), tool.function.parameters, `${client} -> ${up}: the schema arrived as sent`);
      }
    }
  });

  test(`${label}: a body nested ${LIMIT} levels is served; ${LIMIT + 1} and 10^5 get a 400 in the caller's format`, async () => {
    const gw = gwOf();
    for (const format of FORMATS) {
      const ok = await rawPost(gw, format, nestedBody(format, LIMIT), MODELS[format]);
      const okText = await ok.text();
      assert.equal(ok.status, 200, `${format} at the limit: ${okText.slice(0, 300)}`);
      for (const depth of [LIMIT + 1, 100_000]) {
        const res = await rawPost(gw, format, nestedBody(format, depth), MODELS[format]);
        const body = await res.json();
        assert.equal(res.status, 400, `${format} ${depth}: ${JSON.stringify(body)}`);
        const msg = errorMessageOf(format, 400, body, 'invalid_json');
        assert.match(msg, new RegExp(`nested deeper than ${LIMIT} levels`), msg);
      }
      // Only '[': never closed, 10^5 deep.
      const res = await rawPost(gw, format, '['.repeat(100_000), MODELS[format]);
      assert.equal(res.status, 400);
      assert.match(errorMessageOf(format, 400, await res.json(), 'invalid_json'), /nested deeper than/);
      await stillServes(gw, format);
    }
  });
}
