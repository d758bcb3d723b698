// Request smuggling and ambiguous framing at the front door (http/Framing.hpp): raw bytes on a
// real socket to the real gateway, whose one channel points at the recording upstream (a TCP tap
// before the real `sluice mock`) so each case asserts exactly which requests reached the provider.
//
// Every case's bytes are followed, in the same write, by a sentinel `GET /healthz` with
// `Connection: close`: a refused request must get one error response (400 in OpenAI's error shape,
// `Connection: close`) and the connection must close with the sentinel unanswered, because nothing
// after a refused request is parsed; an accepted one gets its answers, then the sentinel's.
//
// The table (tests/lib/smuggling-cases.mjs) is ported from the published request-smuggling
// catalogs: the HTTP desync guardian corpus, smuggler.py's permutations, the HTTP Garden payloads.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startGateway, chat } from '../lib/harness.mjs';
import { startRecordingUpstream } from '../lib/recording-upstream.mjs';
import { cases, SENTINEL } from '../lib/smuggling-cases.mjs';

let up, gw;
before(async () => {
  up = await startRecordingUpstream();
  gw = await startGateway({
    channels: [{ name: 'rec', url: up.url, models: ['gpt-4o-mini'] }],
    server: { max_body_bytes: '64KiB', max_header_bytes: '8KiB', header_timeout: '3s' },
    routing: { max_retries: 0 },
  });
});
after(async () => { await gw?.stop(); await up?.stop(); });

// ---------------------------------------------------------------- running a case

// Splits the gateway's output into responses: [{status, headers, body}].
function parseResponses(buf) {
  const out = [];
  let off = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', off, 'latin1');
    if (end < 0) break;
    const lines = buf.subarray(off, end).toString('latin1').split('\r\n');
    const status = Number(lines[0].split(' ')[1]);
    const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    let p = end + 4;
    let body = '';
    if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const le = buf.indexOf('\r\n', p, 'latin1');
        if (le < 0) return out;
        const size = parseInt(buf.subarray(p, le).toString('latin1'), 16);
        if (size === 0) { p = le + 4; break; }
        body += buf.subarray(le + 2, le + 2 + size).toString('utf8');
        p = le + 2 + size + 2;
      }
    } else {
      const n = Number(headers['content-length'] ?? 0);
      body = buf.subarray(p, p + n).toString('utf8');
      p += n;
    }
    out.push({ status, headers, body });
    off = p;
  }
  return out;
}

// Sends `bytes` then the sentinel in one write; reads until the gateway closes (or a deadline).
function exchange(bytes, ms = 10000) {
  return new Promise((resolve) => {
    const chunks = [];
    const s = net.connect(gw.port, '127.0.0.1', () => s.write(Buffer.from(bytes + SENTINEL, 'latin1')));
    const timer = setTimeout(() => { s.destroy(); resolve({ closed: false, data: Buffer.concat(chunks) }); }, ms);
    s.on('data', (d) => chunks.push(d));
    s.on('close', () => { clearTimeout(timer); resolve({ closed: true, data: Buffer.concat(chunks) }); });
    s.on('error', () => {});
  });
}

async function runCase(c) {
  up.clear();
  const { closed, data } = await exchange(c.bytes);
  assert.ok(closed, `${c.name}: the connection was not closed`);
  const responses = parseResponses(data);
  // A refused request's error is the last response: the sentinel after it is never answered.
  assert.deepEqual(responses.map((r) => r.status), c.responses, `${c.name}: statuses; got:\n${data.toString('latin1').slice(0, 600)}`);
  if (c.refusal) {
    const last = responses.at(-1);
    assert.match(last.headers['content-type'] ?? '', /application\/json/, c.name);
    assert.equal(last.headers.connection?.toLowerCase(), 'close', `${c.name}: Connection: close`);
    const err = JSON.parse(last.body).error;
    assert.equal(err.type, 'invalid_request_error', c.name);
    assert.equal(err.code, null, `${c.name}: a framing refusal, not a refusal of the body (${err.message})`);
    assert.ok(err.message.length > 10, `${c.name}: the message says what to fix`);
  }
  const got = up.requests();
  assert.equal(got.length, c.upstream.length, `${c.name}: requests that reached the upstream: ${got.map((r) => r.body).join(' | ')}`);
  c.upstream.forEach((content, i) => {
    assert.equal(got[i].malformed, false, c.name);
    assert.equal(got[i].method, 'POST', c.name);
    assert.equal(got[i].target, '/v1/chat/completions', c.name);
    assert.equal(JSON.parse(got[i].body).messages[0].content, content, `${c.name}: body of upstream request ${i}`);
  });
}

// ---------------------------------------------------------------- tests

test(`the table holds the catalog (${cases.length} cases)`, () => {
  assert.ok(cases.length >= 100, `only ${cases.length} cases`);
  assert.equal(new Set(cases.map((c) => `${c.group}/${c.name}`)).size, cases.length, 'case names are unique');
});

for (const group of [...new Set(cases.map((c) => c.group))]) {
  test(group, async (t) => {
    for (const c of cases.filter((x) => x.group === group)) await t.test(c.name, () => runCase(c));
  });
}

test('the gateway still serves normal requests afterwards', async () => {
  up.clear();
  const res = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'after' }] });
  assert.equal(res.status, 200);
  await res.text();
  const got = up.requests();
  assert.equal(got.length, 1);
  assert.equal(JSON.parse(got[0].body).messages[0].content, 'after');
});
