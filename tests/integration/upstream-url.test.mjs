// Client-chosen values in upstream URLs: the attack table. Every hostile model name goes through
// every entry route (OpenAI chat / responses / embeddings, Anthropic with and without the
// /anthropic prefix, native Gemini generateContent / streamGenerateContent with the name in the
// path, percent-encoded and raw) to every channel type, plain, as a `gemini-*` glob match and as a
// CHANNEL/MODEL pin. A recording tap in front of the real mock shows what reached the provider:
// either exactly the expected request line (the model one encoded segment of a valid name) and
// Host, or — for a name that breaks the model-name rule — nothing at all and a 400 naming the
// model in the client's format. Query values and forwarded headers are checked the same way.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startGateway, errorMessageOf, MASTER } from '../lib/harness.mjs';
import { startRecordingUpstream } from '../lib/recording-upstream.mjs';

const AZURE_VERSION = '2024-10-21';
const TYPES = ['openai', 'openai-compatible', 'mock', 'azure', 'anthropic', 'gemini'];
const wireOf = (type) => (type === 'anthropic' ? 'anthropic' : type === 'gemini' ? 'gemini' : 'openai');

// Real model names, served exactly; `gemini-*` serves the glob entries.
const EXACT = ['meta-llama/Llama-3.1-8B-Instruct', 'anthropic.claude-3-5-sonnet-20240620-v1:0', 'ft:gpt-4o-mini:org::id',
  'models/gemini-2.5-flash', 'gpt-4o-2024-08-06'];
const MODELS = ['gemini-*', ...EXACT];

// The hostile entries. Each is tried as it is, after "gemini-" (a glob match), after "up/" and
// after "up/gemini-" (a pin on the channel, which is named "up").
const ATTACKS = ['../../admin', 'a/../../x', 'x?key=evil', 'x#frag', '%2e%2e%2f', 'x%00', 'x\u0000', 'x\r\nHost: evil',
  'x y', 'x\ty', 'x\u00e9', '\u6a21\u578b', 'x'.repeat(10 * 1024), '', '.', '..', 'models/../../v1/files',
  '..%2f', '..%2F..%2Fadmin', 'x\\..\\admin', '/x', 'x/', 'x//y', 'x\u007f', 'x/./y'];
// Valid names the tap must see as one exact segment (or, openai-style, in the body); a '/' in
// them is refused by the channels that put the model in the path.
const GOOD = [...EXACT, 'gemini-2.5-flash', 'gemini-.', 'gemini-..', 'gemini-', 'gemini-a:b', 'gemini-a/b', 'gemini-~x_y.z',
  "gemini-!$&'()*+,;=@", 'up/gemini-2.5-flash', 'up/meta-llama/Llama-3.1-8B-Instruct', 'up/models/gemini-2.5-flash'];

// The documented model-name rule (README, src/routing/ModelName.hpp), as the oracle for the table.
function validName(n) {
  if (n.length < 1 || Buffer.byteLength(n) > 256) return false;
  if (!/^[\x21-\x7e]+$/.test(n) || /[?#%\\]/.test(n)) return false;
  return n.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

// One path segment: everything but RFC 3986 unreserved as %XX; a lone "." or ".." too.
function seg(s) {
  if (s === '.' || s === '..') return s.replace(/\./g, '%2E');
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

const ROUTES = [
  { id: 'openai chat', wire: 'openai', op: '/chat/completions', path: '/v1/chat/completions',
    body: (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] }) },
  { id: 'openai responses', wire: 'openai', op: '/responses', path: '/v1/responses', body: (model) => ({ model, input: 'hi' }) },
  { id: 'openai embeddings', wire: 'openai', op: '/embeddings', path: '/v1/embeddings', body: (model) => ({ model, input: 'hi' }) },
  { id: 'anthropic /anthropic/v1/messages', wire: 'anthropic', op: '/v1/messages', path: '/anthropic/v1/messages',
    body: (model) => ({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }) },
  { id: 'anthropic /v1/messages', wire: 'anthropic', op: '/v1/messages', path: '/v1/messages',
    body: (model) => ({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }) },
  { id: 'gemini generateContent (encoded)', wire: 'gemini', op: 'generateContent', gemini: 'encoded' },
  { id: 'gemini streamGenerateContent (encoded)', wire: 'gemini', op: 'streamGenerateContent', query: 'alt=sse', gemini: 'encoded' },
  { id: 'gemini generateContent (raw)', wire: 'gemini', op: 'generateContent', gemini: 'raw' },
  { id: 'gemini streamGenerateContent (raw)', wire: 'gemini', op: 'streamGenerateContent', query: 'alt=sse', gemini: 'raw' },
];
const GEMINI_BODY = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });

// Sends raw bytes and reads the whole answer (the request says Connection: close).
function rawExchange(port, bytes) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks = [];
    const timer = setTimeout(() => { sock.destroy(); reject(new Error('no answer within 10 s')); }, 10000);
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', (e) => { clearTimeout(timer); reject(e); });
    sock.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      const end = text.indexOf('\r\n\r\n');
      let body = null;
      try { body = JSON.parse(Buffer.from(text.slice(end + 4), 'latin1').toString('utf8')); } catch {}
      resolve({ status: m ? Number(m[1]) : 0, body, text });
    });
    sock.write(bytes);
  });
}

function rawPost(port, target, body, headers = {}) {
  const h = { host: `127.0.0.1:${port}`, 'content-type': 'application/json', 'x-goog-api-key': MASTER, 'x-api-key': MASTER,
    'anthropic-version': '2023-06-01', connection: 'close', ...headers, 'content-length': Buffer.byteLength(body) };
  const head = `POST ${target} HTTP/1.1\r\n` + Object.entries(h).map(([k, v]) => `${k}: ${v}`).join('\r\n') + '\r\n\r\n';
  return rawExchange(port, Buffer.concat([Buffer.from(head, 'utf8'), Buffer.from(body)]));
}

async function send(gw, route, name) {
  if (route.gemini) {
    const m = route.gemini === 'raw' ? name : seg(name);
    const target = `/gemini/v1beta/models/${m}:${route.op}${route.query ? '?' + route.query : ''}`;
    return rawPost(gw.port, target, GEMINI_BODY);
  }
  const res = await fetch(gw.url + route.path, {
    method: 'POST', body: JSON.stringify(route.body(name)),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}`, 'x-api-key': MASTER,
      'anthropic-version': '2023-06-01' },
  });
  const text = await res.text();
  let body = null;
  try { body = JSON.parse(text); } catch {}
  return { status: res.status, body, text };
}

// What the name means to a channel "up" of `type` serving MODELS: the upstream model, or why
// no upstream request may happen ({status}).
function outcome(type, route, name) {
  if (!validName(name)) return { status: 400 };
  let model = name;
  if (name.startsWith('up/')) model = name.slice(3);
  const served = EXACT.includes(model) || model.startsWith('gemini-');
  if (!served) return { status: 404 };
  const pathModel = type === 'gemini' && model.startsWith('models/') ? model.slice(7) : model;
  if ((type === 'gemini' || type === 'azure') && pathModel.includes('/')) return { status: 400 };
  const up = wireOf(type);
  if (route.op === '/embeddings' && up !== 'openai') return { status: 501 };
  const translated = route.wire !== up || (route.op === '/responses' && type !== 'openai');
  let target = type === 'azure' ? `/openai/deployments/${seg(pathModel)}` : up === 'openai' ? '/v1' : '';
  if (up === 'openai') target += translated ? '/chat/completions' : route.op;
  if (up === 'anthropic') target += '/v1/messages';
  if (up === 'gemini') target += `/v1beta/models/${seg(pathModel)}:${translated ? 'generateContent' : route.op}`;
  if (type === 'azure') target += `?api-version=${AZURE_VERSION}`;
  else if (!translated && route.query) target += `?${route.query}`;
  return { target, model: up === 'gemini' ? null : model };
}

// A raw name in the request line that the URL itself changes (a '?' starts the query, a space
// or control byte ends the line) never reaches routing, nor does an empty one in either form
// (":generateContent" alone is no route): the gateway answers 4xx (the HTTP layer or "no
// route") and nothing goes upstream. A raw byte past ASCII is refused by the HTTP layer too: a
// request target is ASCII (RFC 9112 section 3.2), so such a name must be percent-encoded.
function rawCut(name) { return name === '' || /[?\s\x00-\x1f\x7f-\uffff]/.test(name); }

let up;
before(async () => { up = await startRecordingUpstream(); });
after(async () => { await up?.stop(); });

function gatewayFor(type) {
  const base = wireOf(type) === 'openai' && type !== 'azure' ? `${up.url}/v1` : up.url;
  return startGateway(`server:
  listen: "127.0.0.1:0"
  workers: 1
auth:
  master_key: "${MASTER}"
routing:
  max_retries: 0
  discovery_interval: 0s  # the recording upstream must see only the requests under test
channels:
  - name: up
    type: ${type}
    base_url: "${base}"
    keys: ["k-upstream-0001"]
    models: ${JSON.stringify(MODELS)}
${type === 'azure' ? `    api_version: "${AZURE_VERSION}"\n` : ''}`);
}

const show = (n) => JSON.stringify(n.length > 40 ? n.slice(0, 40) + `...(${n.length})` : n);

async function check(gw, type, route, name, problems) {
  up.clear();
  const cut = route.gemini && (name === '' || (route.gemini === 'raw' && rawCut(name)));
  const want = cut ? { cut: true } : outcome(type, route, name);
  const res = await send(gw, route, name);
  const got = up.requests();
  const where = `${type} <- ${route.id} ${show(name)}`;
  if (want.target) {
    if (got.length === 0) { problems.push(`${where}: nothing reached upstream (status ${res.status}: ${res.text.slice(0, 200)})`); return; }
    for (const r of got) {
      const line = `${r.method} ${r.target} ${r.version}`;
      if (r.malformed || line !== `POST ${want.target} HTTP/1.1`) problems.push(`${where}: upstream got ${JSON.stringify(line)}, want POST ${want.target}`);
      if (r.headers.filter(([k]) => k.toLowerCase() === 'host').length !== 1 || r.header('host') !== `127.0.0.1:${up.port}`)
        problems.push(`${where}: upstream Host ${JSON.stringify(r.header('host'))}`);
      if (want.model !== null) {
        let m;
        try { m = JSON.parse(r.body).model; } catch {}
        if (m !== want.model) problems.push(`${where}: upstream body model ${JSON.stringify(m)}, want ${JSON.stringify(want.model)}`);
      }
    }
    return;
  }
  if (got.length) problems.push(`${where}: upstream got ${got.map((r) => JSON.stringify(`${r.method} ${r.target}`)).join(', ')}; want nothing`);
  if (want.cut) {
    if (res.status < 400 || res.status >= 500) problems.push(`${where}: status ${res.status}, want a 4xx`);
    return;
  }
  if (res.status !== want.status) { problems.push(`${where}: status ${res.status}, want ${want.status}: ${res.text.slice(0, 200)}`); return; }
  if (want.status === 400) {
    try {
      // An empty model keeps the parser's own answer (missing_model); it names the model too.
      const msg = errorMessageOf(route.wire, 400, res.body, name === '' ? 'missing_model' : 'invalid_model');
      if (!/"model"/.test(msg)) problems.push(`${where}: the 400 does not name the model: ${msg}`);
    } catch (e) { problems.push(`${where}: ${e.message}`); }
  }
}

test('the oracle agrees with the table: every attack entry breaks the model-name rule', () => {
  for (const a of ATTACKS) assert.equal(validName(a), false, show(a));
  for (const g of GOOD) assert.equal(validName(g), true, show(g));
});

for (const type of TYPES) {
  test(`hostile and real model names toward a ${type} channel, through every entry route`, async () => {
    const gw = await gatewayFor(type);
    const problems = [];
    try {
      const names = [...GOOD];
      for (const a of ATTACKS) names.push(a, `gemini-${a}`, `up/${a}`, `up/gemini-${a}`);
      for (const route of ROUTES)
        for (const name of names) await check(gw, type, route, name, problems);
      // The gateway keeps serving after all of it.
      up.clear();
      const ok = await send(gw, ROUTES[wireOf(type) === 'gemini' ? 5 : wireOf(type) === 'anthropic' ? 3 : 0], 'gemini-2.5-flash');
      assert.equal(ok.status, 200, ok.text);
    } finally {
      await gw.stop();
    }
    assert.deepEqual(problems.slice(0, 40), [], `${problems.length} problems`);
  });
}

test('query values are re-encoded one by one; the client key and control characters never travel', async () => {
  const an = await gatewayFor('anthropic');
  const ge = await gatewayFor('gemini');
  const body = JSON.stringify({ model: 'gemini-2.5-flash', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
  const cases = [
    [an, '/v1/messages?beta=true', body, '/v1/messages?beta=true'],
    [an, '/anthropic/v1/messages?beta=true', body, '/v1/messages?beta=true'],
    [an, `/anthropic/v1/messages?beta=true&key=${MASTER}`, body, '/v1/messages?beta=true'],
    [an, `/v1/messages?%6bey=${MASTER}&beta=true`, body, '/v1/messages?beta=true'],
    [an, '/v1/messages?beta=x#y', body, '/v1/messages?beta=x%23y'],
    [an, '/v1/messages?beta=a/../../b&&x', body, '/v1/messages?beta=a%2F..%2F..%2Fb&x'],
    [an, '/v1/messages?beta=a+b%20c', body, '/v1/messages?beta=a%20b%20c'],
    // Raw bytes past ASCII never get this far (the HTTP layer refuses them); escaped ones stay escaped.
    [an, '/v1/messages?b%c3%a9ta=%C3%A9', body, '/v1/messages?b%C3%A9ta=%C3%A9'],
    [an, '/v1/messages?beta=%0d%0aHost:%20evil', body, 400],
    [an, '/v1/messages?beta=%00', body, 400],
    [an, '/v1/messages?beta=%zz', body, 400],
    [an, '/v1/messages?beta=%', body, 400],
    [ge, '/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&x=1?2', GEMINI_BODY,
      '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&x=1%3F2'],
    [ge, `/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=${MASTER}`, GEMINI_BODY,
      '/v1beta/models/gemini-2.5-flash:generateContent'],
    [ge, '/gemini/v1beta/models/gemini-2.5-flash:generateContent?x=%7f', GEMINI_BODY, 400],
  ];
  const problems = [];
  try {
    for (const [gw, target, b, want] of cases) {
      up.clear();
      const res = await rawPost(gw.port, target, b);
      const got = up.requests();
      if (typeof want === 'number') {
        if (res.status !== want || got.length) problems.push(`${target}: status ${res.status}, ${got.length} upstream requests; want 400 and none`);
        else {
          const wire = gw === ge ? 'gemini' : 'anthropic';
          try { errorMessageOf(wire, 400, res.body, 'invalid_query'); } catch (e) { problems.push(`${target}: ${e.message}`); }
        }
        continue;
      }
      const lines = got.map((r) => `${r.method} ${r.target} ${r.version}`);
      if (lines.length !== 1 || lines[0] !== `POST ${want} HTTP/1.1`) problems.push(`${target}: upstream got ${JSON.stringify(lines)}, want POST ${want}`);
    }
  } finally {
    await an.stop();
    await ge.stop();
  }
  assert.deepEqual(problems, []);
});

test('forwarded headers cannot add a line: folded, bare-LF, bare-CR and NUL values are refused; others reach the upstream as sent', async () => {
  const gw = await gatewayFor('anthropic');
  const body = JSON.stringify({ model: 'gemini-2.5-flash', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
  // [extra header line(s), status wanted, the x-note value the upstream must get (accepted ones)]
  const cases = [
    ['x-note: a\r\n Host: evil.example', 400], ['x-note: a\nHost: evil.example', 400],
    ['x-note: a\rHost: evil.example', 400], ['x-note: a\u0000Host: evil.example', 400],
    ['x-note: a\r\n\tX-Injected: 1', 400],
    ['x-note: a\tb', 200, 'a\tb'], ['x-note: caf\u00e9', 200, 'caf\u00e9'],
  ];
  const problems = [];
  try {
    for (const [extra, want, note] of cases) {
      up.clear();
      const head = `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: ${MASTER}\r\n` +
        `anthropic-version: 2023-06-01\r\nconnection: close\r\n${extra}\r\ncontent-length: ${body.length}\r\n\r\n`;
      const res = await rawExchange(gw.port, Buffer.from(head + body, 'latin1'));
      const got = up.requests();
      const where = JSON.stringify(extra);
      if (res.status !== want) problems.push(`${where}: status ${res.status}, want ${want}`);
      if (want !== 200) {
        if (got.length) problems.push(`${where}: refused, yet ${got.length} upstream requests`);
        continue;
      }
      if (got.length !== 1) { problems.push(`${where}: ${got.length} upstream requests, want 1`); continue; }
      const r = got[0];
      const hosts = r.headers.filter(([k]) => k.toLowerCase() === 'host').map(([, v]) => v);
      if (r.malformed || hosts.length !== 1 || hosts[0] !== `127.0.0.1:${up.port}` || r.header('x-injected') !== undefined)
        problems.push(`${where}: upstream head ${JSON.stringify(r.rawHead)}`);
      if (r.header('x-note') !== note) problems.push(`${where}: upstream x-note ${JSON.stringify(r.header('x-note'))}, want ${JSON.stringify(note)}`);
    }
  } finally {
    await gw.stop();
  }
  assert.deepEqual(problems, []);
});
