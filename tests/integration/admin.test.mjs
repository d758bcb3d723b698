// The admin API's read side: request logs (filters, cursor pagination) and usage aggregates,
// master key only, field-level 400s; database work never blocks the proxy.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, chat, sleep, MASTER } from '../lib/harness.mjs';

let mock, gw;
const admin = (path, key = MASTER) => fetch(`${gw.url}/admin/api${path}`, { headers: { authorization: `Bearer ${key}` } });

before(async () => {
  mock = await startMock([]);
  gw = await startGateway({ channels: [
    { name: 'a', url: mock.url, models: ['gpt-4o-mini'] },
    { name: 'b', url: mock.url, models: ['gpt-4.1'] },
  ] });
  for (let i = 0; i < 7; i++) {
    const r = await chat(gw, { model: i < 5 ? 'gpt-4o-mini' : 'gpt-4.1', stream: i % 2 === 0, messages: [{ role: 'user', content: 'hi' }] });
    await r.text();
  }
  // rows are written in batches every 200 ms
  for (let i = 0; i < 50; i++) {
    const page = await (await admin('/logs?limit=1000')).json();
    if (page.data?.length >= 7) break;
    await sleep(50);
  }
});
after(async () => { await gw?.stop(); await mock?.stop(); });

test('logs: newest first, filters, cursor pagination visits every row once', async () => {
  const all = await (await admin('/logs?limit=1000')).json();
  assert.equal(all.data.length, 7);
  assert.ok(all.data[0].id > all.data[6].id, 'newest first');
  const e = all.data[0];
  for (const k of ['request_id', 'channel', 'model', 'status', 'attempts', 'ttfb_ms', 'duration_ms', 'input_tokens', 'output_tokens'])
    assert.ok(k in e, k);
  assert.ok(Array.isArray(e.attempts));
  const onlyB = await (await admin('/logs?channel=b')).json();
  assert.equal(onlyB.data.length, 2);
  assert.ok(onlyB.data.every((x) => x.model === 'gpt-4.1'));
  const seen = new Set();
  let cursor = '';
  for (let pages = 0; pages < 10; pages++) {
    const p = await (await admin(`/logs?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).json();
    for (const x of p.data) { assert.ok(!seen.has(x.id)); seen.add(x.id); }
    if (!p.next_cursor) break;
    cursor = p.next_cursor;
  }
  assert.equal(seen.size, 7);
});

test('usage: sums by model and channel', async () => {
  const u = await (await admin('/usage?by=model,channel')).json();
  const m = Object.fromEntries(u.data.map((r) => [r.model, r]));
  assert.equal(m['gpt-4o-mini'].requests, 5);
  assert.equal(m['gpt-4.1'].requests, 2);
  assert.equal(m['gpt-4.1'].channel, 'b');
  assert.ok(m['gpt-4o-mini'].output_tokens > 0);
});

test('master key only, and field-level 400s', async () => {
  assert.equal((await admin('/logs', 'sk-not-master')).status, 401);
  assert.equal((await fetch(`${gw.url}/admin/api/logs`)).status, 401);
  const bad = await admin('/logs?limit=abc');
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, 'limit');
  const badBy = await admin('/usage?by=planet');
  assert.equal(badBy.status, 400);
  assert.equal((await badBy.json()).error.param, 'by');
  const badCursor = await admin('/logs?cursor=nonsense');
  assert.equal(badCursor.status, 400);
  assert.equal((await admin('/nothing')).status, 404);
});
