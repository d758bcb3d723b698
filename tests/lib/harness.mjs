// Test harness: starts real `sluice mock` and `sluice serve` processes on free loopback ports
// and stops them after the test. Every wait has a deadline.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { once } from 'node:events';

export const BIN = resolve(process.env.SLUICE_BIN || 'build/sluice');
export const MASTER = 'sk-test-master-key-0123456789';
const children = new Set();

process.on('exit', () => { for (const c of children) { try { c.kill('SIGKILL'); } catch {} } });

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

export function tempDir() { return mkdtempSync(join(tmpdir(), 'sluice-test-')); }

// channels: [{name, url (mock url), keys, models, priority, weight, type, limits: {rpm, tpm, ...}}];
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
  lines.push('channels:');
  for (const c of channels) {
    lines.push(`  - name: ${c.name}`, `    type: ${c.type ?? 'openai'}`, `    base_url: "${c.base_url ?? c.url + '/v1'}"`,
      `    keys: ${JSON.stringify(c.keys ?? ['k-' + c.name])}`, `    models: ${JSON.stringify(c.models ?? ['*'])}`,
      `    priority: ${c.priority ?? 1}`, `    weight: ${c.weight ?? 1}`);
    for (const [k, v] of Object.entries(c.limits ?? {})) lines.push(`    ${k}: ${v}`);
    if (c.headers) lines.push(`    headers: ${JSON.stringify(c.headers)}`);
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
  const m = await waitForLine(proc, /listening on http:\/\/(\S+):(\d+)/, 'sluice serve');
  const url = `http://127.0.0.1:${m[2]}`;
  return {
    proc, url, file, db, port: Number(m[2]),
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
