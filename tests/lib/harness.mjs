// Test harness: starts real `sluice mock` and `sluice serve` processes on free loopback ports
// and stops them after the test. Every wait has a deadline.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { once } from 'node:events';

export const BIN = resolve(process.env.SLUICE_BIN || 'build/sluice');
export const MASTER = 'sk-test-master-key-0123456789';
const children = new Set();
const tempDirs = [];

// At exit: kill what is still running, then remove the test's temporary directories (a run of
// the suites made some 600; SLUICE_TEST_KEEP_TMP=1 keeps them to look at).
process.on('exit', () => {
  for (const c of children) { try { c.kill('SIGKILL'); } catch {} }
  if (process.env.SLUICE_TEST_KEEP_TMP) return;
  for (const d of tempDirs) { try { rmSync(d, { recursive: true, force: true }); } catch {} }
});

function waitForLine(proc, re, what, ms = 15000) {
  return new Promise((resolveP, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not print ${re} within ${ms} ms; output:\n${buf}`)), ms);
    const onData = (d) => {
      buf += d.toString();
      const m = buf.match(re);
      if (m) { clearTimeout(timer); proc.stdout.off('data', onData); resolveP(m); }
    };
    proc.stdout.on('data', onData);
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`${what} exited with ${code} before ready; output:\n${buf}`)); });
  });
}

function track(proc, label) {
  children.add(proc);
  proc.output = '';
  proc.stdout.on('data', (d) => { proc.output += d.toString(); });
  proc.stderr.on('data', (d) => { proc.output += d.toString(); if (process.env.SLUICE_TEST_VERBOSE) process.stderr.write(`[${label}] ${d}`); });
  proc.on('exit', () => children.delete(proc));
  return proc;
}

export async function stop(proc, signal = 'SIGTERM', ms = 10000) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return proc?.exitCode;
  proc.kill(signal);
  const t = setTimeout(() => proc.kill('SIGKILL'), ms);
  const [code] = await once(proc, 'exit');
  clearTimeout(t);
  return code;
}

export async function startMock(args = []) {
  const proc = track(spawn(BIN, ['mock', '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] }), 'mock');
  const m = await waitForLine(proc, /listening on (\S+):(\d+)/, 'sluice mock');
  const url = `http://127.0.0.1:${m[2]}`;
  return {
    proc, url, port: Number(m[2]),
    async stats() { return (await fetch(`${url}/mock/stats`)).json(); },
    async reset() { await fetch(`${url}/mock/reset`, { method: 'POST' }); },
    stop: (sig) => stop(proc, sig),
  };
}

export function tempDir() { const d = mkdtempSync(join(tmpdir(), 'sluice-test-')); tempDirs.push(d); return d; }

// channels: [{name, url (mock url), keys, models, priority, weight, type, region, limits: {rpm, tpm, ...}}];
// `extra`: YAML text appended at the top level (pricing:, redis:, ...).
export function gatewayYaml({ channels, routing = {}, server = {}, master = MASTER, extra = '' }) {
  const lines = [
    'server:', `  listen: "127.0.0.1:0"`, `  workers: ${server.workers ?? 2}`,
    ...Object.entries(server).filter(([k]) => k !== 'workers').map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`),
    'auth:', `  master_key: "${master}"`,
    'routing:', `  max_retries: ${routing.max_retries ?? 2}`,
  ];
  if (routing.timeouts) {
    lines.push('  timeouts:');
    for (const [k, v] of Object.entries(routing.timeouts)) lines.push(`    ${k}: ${v}`);
  }
  for (const [k, v] of Object.entries(routing)) if (k !== 'max_retries' && k !== 'timeouts') lines.push(`  ${k}: ${JSON.stringify(v)}`);
  // These channels serve '*' (a glob) and most tests count the mock's requests exactly: model
  // discovery, which reads a glob channel's model list, is off unless a test turns it on.
  if (routing.discovery_interval === undefined) lines.push('  discovery_interval: "0s"');
  lines.push('channels:');
  for (const c of channels) {
    lines.push(`  - name: ${c.name}`, `    type: ${c.type ?? 'openai'}`, `    base_url: "${c.base_url ?? c.url + '/v1'}"`,
      `    keys: ${JSON.stringify(c.keys ?? ['k-' + c.name])}`, `    models: ${JSON.stringify(c.models ?? ['*'])}`,
      `    priority: ${c.priority ?? 1}`, `    weight: ${c.weight ?? 1}`);
    for (const [k, v] of Object.entries(c.limits ?? {})) lines.push(`    ${k}: ${v}`);
    if (c.headers) lines.push(`    headers: ${JSON.stringify(c.headers)}`);
    if (c.region) lines.push(`    region: ${c.region}`);
  }
  return lines.join('\n') + '\n' + extra;
}

export async function startGateway(opts) {
  const dir = tempDir();
  const file = join(dir, 'sluice.yaml');
  let yaml = typeof opts === 'string' ? opts : gatewayYaml(opts);
  // Each gateway logs requests to its own SQLite file unless the test chose a store.
  const db = join(dir, 'sluice.db');
  if (!/^store:/m.test(yaml)) yaml = `store:\n  url: "sqlite://${db}"\n` + yaml;
  writeFileSync(file, yaml);
  const proc = track(spawn(BIN, ['serve', '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] }), 'gateway');
  const m = await waitForLine(proc, /listening on (https?):\/\/(\S+):(\d+)/, 'sluice serve');
  const url = `${m[1]}://127.0.0.1:${m[3]}`;
  // Printed before the listening line when admin.listen is set.
  const am = proc.output.match(/admin API and console on http:\/\/\S+:(\d+)/);
  return {
    proc, url, file, db, port: Number(m[3]),
    adminUrl: am ? `http://127.0.0.1:${am[1]}` : undefined,
    stop: (sig) => stop(proc, sig),
    writeConfig(o) { writeFileSync(file, typeof o === 'string' ? o : gatewayYaml(o)); },
    accessLines() {
      return proc.output.split('\n').filter((l) => l.startsWith('{"ts"')).map((l) => JSON.parse(l));
    },
  };
}

export function chat(gw, body, { key = MASTER, headers = {}, signal } = {}) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

// Reads a whole SSE response: the raw text and the parsed `data:` payloads.
export async function readSse(res) {
  const text = await res.text();
  const events = text.split('\n\n').filter((e) => e.trim()).map((e) => {
    const data = e.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
    return data === '[DONE]' ? '[DONE]' : JSON.parse(data);
  });
  return { text, events };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls `pred` (may be async) until it is truthy or `ms` have passed; returns its last value, so
// the caller's assertion says what never happened. Every wait in a test has a deadline.
export async function waitFor(pred, ms = 10000, every = 20) {
  const until = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v || Date.now() > until) return v;
    await sleep(every);
  }
}

export async function metrics(gw) { return (await fetch(`${gw.url}/metrics`)).text(); }

// Access lines leave the gateway in batches (every 50 ms): wait for the one wanted.
export async function waitForAccessLine(gw, pred, ms = 3000) {
  const until = Date.now() + ms;
  for (;;) {
    const line = gw.accessLines().find(pred);
    if (line || Date.now() > until) return line;
    await sleep(20);
  }
}

// ---- Helpers for the protect / guardrail / cache tests (additions; nothing above changes). ----

// The admin API with the master key.
export function admin(gw, path, { method = 'GET', body } = {}) {
  return fetch(`${gw.url}/admin/api${path}`, {
    method, headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

// Creates a virtual key; returns {secret, key}.
export async function createKey(gw, fields = {}) {
  const res = await admin(gw, '/keys', { method: 'POST', body: { name: 'k', ...fields } });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`creating a key answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

// The request log row of one request (with request_body / response_body), once written.
export async function logOf(gw, requestId, ms = 5000) {
  const until = Date.now() + ms;
  for (;;) {
    const res = await admin(gw, '/logs?limit=500');
    const page = await res.json();
    const row = (page.data ?? []).find((r) => r.request_id === requestId);
    if (row) return (await admin(gw, `/logs/${row.id}`)).json();
    if (Date.now() > until) return null;
    await sleep(50);
  }
}

// The value of one Prometheus sample: the sum over the lines of `name` whose labels include
// every pair of `labels` (0 when none).
export function metricValue(text, name, labels = {}) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$/);
    if (!m || m[1] !== name) continue;
    const ls = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => ls[k] === String(v))) sum += Number(m[3]);
  }
  return sum;
}

// Chat requests in each client format, and how to read their answers.
// opts: {model, user, system, stream, tools (OpenAI shape; converted), key, headers, extra (body
// fields merged in), sse (Gemini streams: alt=sse, default true)}.
function toolsFor(format, tools) {
  if (!tools) return undefined;
  const fns = tools.map((t) => t.function ?? t);
  if (format === 'anthropic') return fns.map((f) => ({ name: f.name, description: f.description ?? '', input_schema: f.parameters }));
  if (format === 'gemini') return [{ functionDeclarations: fns.map((f) => ({ name: f.name, description: f.description ?? '', parameters: f.parameters })) }];
  return fns.map((f) => ({ type: 'function', function: f }));
}

export function sendChat(gw, format, { model, user, system, stream = false, tools, key = MASTER, headers = {}, extra = {}, sse = true } = {}) {
  if (format === 'openai') {
    const messages = [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: user }];
    return fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: JSON.stringify({ model, messages, stream, ...(tools ? { tools: toolsFor(format, tools) } : {}), ...extra }),
    });
  }
  if (format === 'anthropic') {
    return fetch(`${gw.url}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01', ...headers },
      body: JSON.stringify({ model, max_tokens: 1024, ...(system ? { system } : {}), messages: [{ role: 'user', content: user }],
        stream, ...(tools ? { tools: toolsFor(format, tools) } : {}), ...extra }),
    });
  }
  if (format === 'gemini') {
    const op = stream ? `streamGenerateContent${sse ? '?alt=sse' : ''}` : 'generateContent';
    return fetch(`${gw.url}/gemini/v1beta/models/${model}:${op}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': key, ...headers },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: user }] }],
        ...(system ? { systemInstruction: { parts: [{ text: system }] } } : {}),
        ...(tools ? { tools: toolsFor(format, tools) } : {}), ...extra }),
    });
  }
  throw new Error(`unknown format ${format}`);
}

// The answer text of a whole response body (parsed JSON) in `format`.
export function answerText(format, body) {
  if (format === 'openai') return body.choices[0].message.content ?? '';
  if (format === 'anthropic') return body.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  if (format === 'gemini') return (body.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('');
  throw new Error(`unknown format ${format}`);
}

// The concatenated answer text of a stream's parsed events (readSse().events; for a Gemini JSON
// array stream, the array's elements).
export function streamText(format, events) {
  let out = '';
  for (const e of events) {
    if (e === '[DONE]') continue;
    if (format === 'openai') out += e.choices?.[0]?.delta?.content ?? '';
    else if (format === 'anthropic') { if (e.type === 'content_block_delta' && e.delta?.type === 'text_delta') out += e.delta.text; }
    else if (format === 'gemini') out += (e.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('');
  }
  return out;
}

// Tool calls of a stream or a whole answer: [{name, arguments (the JSON text, concatenated)}].
export function toolCallsOf(format, { events, body }) {
  const calls = [];
  if (format === 'openai') {
    if (body) return (body.choices[0].message.tool_calls ?? []).map((c) => ({ name: c.function.name, arguments: c.function.arguments }));
    for (const e of events) {
      if (e === '[DONE]') continue;
      for (const tc of e.choices?.[0]?.delta?.tool_calls ?? []) {
        const c = (calls[tc.index] ??= { name: '', arguments: '' });
        if (tc.function?.name) c.name += tc.function.name;
        if (tc.function?.arguments) c.arguments += tc.function.arguments;
      }
    }
    return calls.filter(Boolean);
  }
  if (format === 'anthropic') {
    if (body) return body.content.filter((b) => b.type === 'tool_use').map((b) => ({ name: b.name, arguments: JSON.stringify(b.input) }));
    const byIndex = {};
    for (const e of events) {
      if (e.type === 'content_block_start' && e.content_block?.type === 'tool_use') byIndex[e.index] = { name: e.content_block.name, arguments: '' };
      if (e.type === 'content_block_delta' && e.delta?.type === 'input_json_delta') byIndex[e.index].arguments += e.delta.partial_json;
    }
    return Object.values(byIndex);
  }
  if (format === 'gemini') {
    const list = body ? [body] : events;
    for (const e of list) {
      for (const p of e.candidates?.[0]?.content?.parts ?? []) {
        if (p.functionCall) calls.push({ name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) });
      }
    }
    return calls;
  }
  throw new Error(`unknown format ${format}`);
}

// Checks an error body is in `format`'s own shape with this status; returns its message.
// OpenAI bodies carry the code ({"error":{"code"}}); Anthropic and Gemini only a type/status.
export function errorMessageOf(format, status, body, code) {
  if (format === 'openai') {
    if (body?.error?.code !== code) throw new Error(`expected OpenAI error code ${code}, got ${JSON.stringify(body)}`);
    return body.error.message;
  }
  if (format === 'anthropic') {
    const type = status === 400 ? 'invalid_request_error' : status >= 500 ? 'api_error' : null;
    if (body?.type !== 'error' || (type && body.error?.type !== type) || typeof body.error?.message !== 'string')
      throw new Error(`expected an Anthropic error of type ${type}, got ${JSON.stringify(body)}`);
    return body.error.message;
  }
  if (format === 'gemini') {
    const st = { 400: 'INVALID_ARGUMENT', 503: 'UNAVAILABLE' }[status];
    if (body?.error?.code !== status || (st && body.error.status !== st) || typeof body.error?.message !== 'string')
      throw new Error(`expected a Gemini error ${status} ${st}, got ${JSON.stringify(body)}`);
    return body.error.message;
  }
  throw new Error(`unknown format ${format}`);
}

// SSE text -> [{event, data}]: each event's name (null when it has none) and its data, parsed
// when it is JSON ([DONE] stays a string). Any line ending.
export function parseSse(text) {
  return text.split(/\r?\n\r?\n/).filter((b) => b.trim()).map((b) => {
    let event = null; const data = [];
    for (const line of b.split(/\r?\n/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trim());
    }
    const d = data.join('\n');
    try { return { event, data: JSON.parse(d) }; } catch { return { event, data: d }; }
  });
}

// The newest request-log row (the log is written after the answer: waited for, up to `ms`).
export async function lastLogRow(gw, ms = 5000) {
  const until = Date.now() + ms;
  for (;;) {
    const page = await (await admin(gw, '/logs?limit=1')).json();
    if (page.data?.length) return page.data[0];
    if (Date.now() > until) throw new Error('no request-log row');
    await sleep(25);
  }
}

// Like readSse, for every SSE framing (Gemini streams use CRLF line ends): {raw, text (LF line
// ends), events}. A data payload that is not JSON fails with the whole stream in the message.
export async function readSseEvents(res) {
  const raw = await res.text();
  const text = raw.replace(/\r\n/g, '\n');
  const events = [];
  for (const e of text.split('\n\n')) {
    if (!e.trim()) continue;
    const data = e.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
    if (data === '[DONE]') { events.push('[DONE]'); continue; }
    try {
      events.push(JSON.parse(data));
    } catch (err) {
      throw new Error(`a stream event is not JSON (${err.message}): ${JSON.stringify(e)}; the stream:\n${raw}`);
    }
  }
  return { raw, text, events };
}
