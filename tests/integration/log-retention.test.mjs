// Request-log retention and body logging: rows older than store.log_retention_days are
// deleted by the writer (at start, then hourly); with store.log_bodies, request and response
// bodies are kept, each cut to store.log_body_max_bytes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startMock, startGateway, gatewayYaml, chat, readSse, sleep, tempDir, metrics } from '../lib/harness.mjs';
import { join } from 'node:path';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
const sql = (db, q) => execFileSync('sqlite3', ['-json', db, q], { encoding: 'utf8' }).trim();
const rows = (db, q) => { const out = sql(db, q); return out ? JSON.parse(out) : []; };

async function waitFor(fn, ms = 5000) {
  const until = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v || Date.now() > until) return v;
    await sleep(50);
  }
}

test('rows older than log_retention_days are deleted; newer ones stay', async () => {
  const mock = await startMock([]);
  started.push(mock);
  const db = join(tempDir(), 'sluice.db');
  const yaml = `store:\n  url: "sqlite://${db}"\n  log_retention_days: 2\n` +
    gatewayYaml({ channels: [{ name: 'm', url: mock.url, models: ['mock-*'] }] });
  // A first run creates the schema and one fresh row.
  let gw = await startGateway(yaml);
  const r = await chat(gw, { model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] });
  await r.text();
  assert.ok(await waitFor(() => rows(db, 'select count(*) n from request_logs')[0].n === 1));
  await gw.stop();
  // Age it into three rows: 3 days old, 1 day old, and the fresh one.
  const day = 86_400_000;
  sql(db, `insert into request_logs (time_ms, request_id, channel, upstream_key, model, status, attempts, ttfb_ms, duration_ms,
      input_tokens, output_tokens, cached_tokens, cost_usd, client_addr, user_agent, stream)
    select time_ms - ${3 * day}, 'old', channel, upstream_key, model, status, attempts, ttfb_ms, duration_ms, input_tokens,
      output_tokens, cached_tokens, cost_usd, client_addr, user_agent, stream from request_logs`);
  sql(db, `insert into request_logs (time_ms, request_id, channel, upstream_key, model, status, attempts, ttfb_ms, duration_ms,
      input_tokens, output_tokens, cached_tokens, cost_usd, client_addr, user_agent, stream)
    select time_ms - ${1 * day}, 'recent', channel, upstream_key, model, status, attempts, ttfb_ms, duration_ms, input_tokens,
      output_tokens, cached_tokens, cost_usd, client_addr, user_agent, stream from request_logs where request_id != 'old'`);
  assert.equal(rows(db, 'select count(*) n from request_logs')[0].n, 3);
  gw = await startGateway(yaml);
  started.push(gw);
  assert.ok(await waitFor(() => rows(db, "select count(*) n from request_logs where request_id = 'old'")[0].n === 0),
    'the 3-day-old row was deleted at start');
  assert.equal(rows(db, 'select count(*) n from request_logs')[0].n, 2);
  assert.match(await metrics(gw), /sluice_request_log_expired_total 1/);
});

test('log_bodies keeps request and response bodies, cut to log_body_max_bytes', async () => {
  const mock = await startMock([]);
  started.push(mock);
  const db = join(tempDir(), 'sluice.db');
  const yaml = `store:\n  url: "sqlite://${db}"\n  log_bodies: true\n  log_body_max_bytes: 300\n` +
    gatewayYaml({ channels: [{ name: 'm', url: mock.url, models: ['mock-*'] }] });
  const gw = await startGateway(yaml);
  started.push(gw);
  const small = { model: 'mock-1', messages: [{ role: 'user', content: 'hello there' }] };
  const res = await chat(gw, small);
  const body = await res.text();
  const big = { model: 'mock-1', stream: true, messages: [{ role: 'user', content: 'x'.repeat(2000) }] };
  const sres = await chat(gw, big);
  await readSse(sres);
  const logged = await waitFor(() => { const r = rows(db, 'select request_body, response_body, stream from request_logs order by id'); return r.length === 2 && r; });
  assert.ok(logged, 'two rows');
  assert.equal(logged[0].request_body, JSON.stringify(small));
  assert.equal(logged[0].response_body, body.slice(0, 300));
  assert.equal(logged[1].request_body.length, 300);
  assert.ok(logged[1].response_body.startsWith('data: '), 'the streamed answer as the client got it');
  assert.ok(logged[1].response_body.length <= 300);
});

test('without log_bodies no body is stored', async () => {
  const mock = await startMock([]);
  const gw = await startGateway({ channels: [{ name: 'm', url: mock.url, models: ['mock-*'] }] });
  started.push(mock, gw);
  const r = await chat(gw, { model: 'mock-1', messages: [{ role: 'user', content: 'secret stuff' }] });
  await r.text();
  const got = await waitFor(() => { const x = rows(gw.db, 'select request_body, response_body from request_logs'); return x.length === 1 && x; });
  assert.equal(got[0].request_body, null);
  assert.equal(got[0].response_body, null);
});
