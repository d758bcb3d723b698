// Request logs: one row per request in the store, off the response path, none lost at SIGTERM.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startMock, startGateway, chat, readSse, sleep } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
const sql = (db, q) => execFileSync('sqlite3', ['-json', db, q], { encoding: 'utf8' }).trim();
const rows = (db, q) => { const out = sql(db, q); return out ? JSON.parse(out) : []; };

async function waitRows(db, n, ms = 5000) {
  const until = Date.now() + ms;
  for (;;) {
    const c = rows(db, 'select count(*) as n from request_logs')[0].n;
    if (c >= n || Date.now() > until) return c;
    await sleep(50);
  }
}

test('every request leaves one row with its channel, key id, tokens and attempts', async () => {
  const flaky = await startMock(['--fail-rate', '1', '--fail-status', '503']);
  const mock = await startMock([]);
  started.push(flaky, mock);
  const gw = await startGateway({ channels: [
    { name: 'flaky', url: flaky.url, keys: ['sk-flaky-000000001'], priority: 1 },
    { name: 'good', url: mock.url, keys: ['sk-good-0000000001'], priority: 2 },
  ], routing: { breaker_failures: 1000 } });
  started.push(gw);
  const ids = [];
  for (let i = 0; i < 10; i++) {
    const res = await chat(gw, { model: 'gpt-4o-mini', stream: i % 2 === 0, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'user-agent': 'log-test/1.0' } });
    ids.push(res.headers.get('x-request-id'));
    await res.text();
  }
  const unknown = await chat(gw, '{"model": "gpt-4o-mini", bad json');
  ids.push(unknown.headers.get('x-request-id'));
  await unknown.text();
  assert.equal(await waitRows(gw.db, 11), 11);
  const all = rows(gw.db, 'select * from request_logs');
  assert.deepEqual(new Set(all.map((r) => r.request_id)), new Set(ids));
  const ok = all.filter((r) => r.status === 200);
  assert.equal(ok.length, 10);
  for (const r of ok) {
    assert.equal(r.channel, 'good');
    assert.ok(r.output_tokens > 0 && r.input_tokens > 0, JSON.stringify(r));
    assert.equal(r.user_agent, 'log-test/1.0');
    const attempts = JSON.parse(r.attempts);
    assert.equal(attempts.length, 2);
    assert.equal(attempts[0].channel, 'flaky');
    assert.equal(attempts[0].status, 503);
    assert.ok(!r.upstream_key.includes('sk-good-0000000001'), 'the key is masked');
  }
  assert.equal(all.filter((r) => r.status === 400).length, 1, 'a refused request is logged too');
  const dump = sql(gw.db, 'select * from request_logs');
  assert.ok(!dump.includes('sk-good-0000000001') && !dump.includes('sk-flaky-000000001'));
});

test('SIGTERM under load loses no log row: rows = requests answered', async () => {
  const mock = await startMock(['--chunks', '10', '--chunk-interval-ms', '20']);
  started.push(mock);
  const gw = await startGateway({ channels: [{ name: 'm', url: mock.url }] });
  let answered = 0;
  const load = Array.from({ length: 60 }, async (_, i) => {
    await sleep(i * 5);
    try {
      const res = await chat(gw, { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      await readSse(res).catch(() => {});
      answered++;
    } catch { /* refused after the stop: not accepted, not logged */ }
  });
  await sleep(150);
  const code = await gw.stop('SIGTERM');
  await Promise.all(load);
  assert.equal(code, 0);
  const n = rows(gw.db, 'select count(*) as n from request_logs')[0].n;
  assert.ok(answered > 0);
  assert.equal(n, answered);
});
