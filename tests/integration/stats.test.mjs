// The console's read side of the admin API, on SQLite and on PostgreSQL: real requests through
// the gateway (a failing channel first, so requests take two attempts; a virtual key; one
// unknown model), then /admin/api/stats (series, totals, top groups, percentiles, refusals),
// the usage CSV export, one log entry in full (/logs/{id}), and the keys list's usage.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startMock, startGateway, gatewayYaml, chat, readSse, tempDir, waitFor, MASTER } from '../lib/harness.mjs';

const PG = process.env.SLUICE_TEST_POSTGRES_URL;

// A database of its own, so other suites sharing the server do not change the numbers.
function freshPostgresUrl() {
  const name = `sluice_stats_${process.pid}_${Date.now()}`;
  execFileSync('psql', [PG, '-v', 'ON_ERROR_STOP=1', '-qc', `CREATE DATABASE ${name}`], { encoding: 'utf8' });
  const url = new URL(PG);
  url.pathname = `/${name}`;
  return url.toString();
}

function scenario(backend, storeUrl) {
  describe(`stats on ${backend}`, () => {
    let flaky, mock, gw, key, start, setupEnd;
    const admin = (path, { method = 'GET', body } = {}) => fetch(`${gw.url}/admin/api${path}`, {
      method, headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = async (path) => {
      const res = await admin(path);
      assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
      return res.json();
    };
    const sent = [];

    before(async () => {
      flaky = await startMock(['--fail-rate', '1', '--fail-status', '503']);
      mock = await startMock([]);
      const yaml = `store:\n  url: "${storeUrl()}"\n  log_bodies: true\n` + gatewayYaml({
        channels: [
          { name: 'flaky', url: flaky.url, models: ['mock-1'], priority: 1 },
          { name: 'a', url: mock.url, models: ['mock-1'], priority: 2 },
          { name: 'b', url: mock.url, models: ['mock-2'] },
        ],
        routing: { breaker_failures: 1000 },
        extra: 'pricing:\n  mock-1: {input: 1000, output: 2000}\n  mock-2: {input: 3000, output: 4000}\n',
      });
      gw = await startGateway(yaml);
      start = Date.now();
      const created = await admin('/keys', { method: 'POST', body: { name: 'stats-key' } });
      assert.equal(created.status, 201, await created.clone().text());
      const c = await created.json();
      key = { id: c.key.id, secret: c.secret };
      for (let i = 0; i < 6; i++) {
        const body = { model: 'mock-1', stream: i < 2, messages: [{ role: 'user', content: `hello ${i}` }] };
        const res = await chat(gw, body);
        assert.equal(res.status, 200);
        if (body.stream) await readSse(res); else await res.text();
        sent.push({ id: res.headers.get('x-request-id'), body });
      }
      for (let i = 0; i < 3; i++) {
        const res = await chat(gw, { model: 'mock-2', messages: [{ role: 'user', content: 'hi' }] }, { key: key.secret });
        assert.equal(res.status, 200);
        await res.text();
      }
      const unknown = await chat(gw, { model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(unknown.status, 404);
      await unknown.text();
      // Rows reach the store in batches: wait for all ten.
      const logged = await waitFor(async () => (await json('/logs?limit=1000')).data.length >= 10, 30_000, 50);
      assert.ok(logged, 'the ten log rows reached the store within 30 s');
      setupEnd = Date.now();
    });
    after(async () => { await gw?.stop(); await mock?.stop(); await flaky?.stop(); });

    test('stats: totals, every bucket, top groups and percentiles match what was sent', async () => {
      const until = Date.now() + 1000;
      const s = await json(`/stats?since_ms=${start - 1000}&until_ms=${until}`);
      assert.equal(s.since_ms, start - 1000);
      assert.equal(s.until_ms, until);
      assert.equal(s.sampled, false);
      assert.ok(Number.isInteger(s.step_s) && s.step_s >= 1);
      assert.ok(s.series.length >= 1 && s.series.length <= 120, `${s.series.length} buckets`);
      for (let i = 0; i < s.series.length; i++) {
        const b = s.series[i];
        for (const k of ['t_ms', 'requests', 'errors', 'input_tokens', 'output_tokens', 'cost_usd', 'ttfb_ms', 'latency_ms'])
          assert.ok(k in b, k);
        assert.equal(b.t_ms % (s.step_s * 1000), 0, 'buckets are aligned to the step');
        if (i) assert.equal(b.t_ms - s.series[i - 1].t_ms, s.step_s * 1000, 'no bucket is missing');
        if (b.requests === b.errors) assert.equal(b.latency_ms.p50, null, 'no success: no percentile');
      }
      assert.ok(s.series[0].t_ms <= s.since_ms && s.series.at(-1).t_ms + s.step_s * 1000 >= s.until_ms);
      const sum = (k) => s.series.reduce((n, b) => n + b[k], 0);
      const t = s.totals;
      assert.equal(t.requests, 10);
      assert.equal(t.errors, 1);
      assert.equal(sum('requests'), 10);
      assert.equal(sum('errors'), 1);
      assert.equal(sum('input_tokens'), t.input_tokens);
      assert.equal(sum('output_tokens'), t.output_tokens);
      assert.ok(Math.abs(sum('cost_usd') - t.cost_usd) < 1e-9);
      assert.equal(t.error_rate, 0.1);
      assert.ok(Math.abs(t.requests_per_s - 10 / ((until - (start - 1000)) / 1000)) < 1e-9);
      assert.ok(t.input_tokens > 0 && t.output_tokens > 0 && t.cost_usd > 0, JSON.stringify(t));
      for (const p of [t.latency_ms, t.ttfb_ms]) {
        assert.ok(Number.isInteger(p.p50), JSON.stringify(p));
        assert.ok(p.p50 <= p.p95 && p.p95 <= p.p99, JSON.stringify(p));
      }
      // The same sums as the usage endpoint over the same window.
      const usage = await json(`/usage?from=${start - 1000}&to=${until}`);
      assert.equal(usage.data[0].requests, 10);
      assert.equal(usage.data[0].input_tokens, t.input_tokens);
      assert.equal(usage.data[0].output_tokens, t.output_tokens);

      const byChannel = Object.fromEntries(s.by_channel.map((g) => [g.name, g]));
      assert.equal(byChannel.a.requests, 6, JSON.stringify(s.by_channel));
      assert.equal(byChannel.b.requests, 3);
      assert.equal(s.by_channel[0].name, 'a', 'most requests first');
      assert.ok(Number.isInteger(byChannel.a.latency_ms.p50) && Number.isInteger(byChannel.a.latency_ms.p95));
      for (const k of ['name', 'requests', 'errors', 'input_tokens', 'output_tokens', 'cost_usd', 'latency_ms'])
        assert.ok(k in byChannel.a, k);
      const byModel = Object.fromEntries(s.by_model.map((g) => [g.name, g]));
      assert.equal(byModel['mock-1'].requests, 6);
      assert.equal(byModel['mock-2'].requests, 3);
      assert.equal(byModel['no-such-model'].requests, 1);
      assert.equal(byModel['no-such-model'].errors, 1);
      assert.equal(byModel['no-such-model'].latency_ms.p50, null);
      assert.ok(byModel['mock-2'].cost_usd > 0);
      const keyed = s.by_key.find((g) => g.id === key.id);
      assert.deepEqual({ name: keyed.name, requests: keyed.requests, errors: keyed.errors }, { name: 'stats-key', requests: 3, errors: 0 });
      const master = s.by_key.find((g) => g.id === null);
      assert.equal(master.requests, 7);
      assert.equal(master.name, null);
    });

    test('stats: defaults to the last hour in at most 120 buckets', async () => {
      const s = await json('/stats');
      assert.equal(s.until_ms - s.since_ms, 3_600_000);
      assert.ok(s.series.length <= 120 && s.series.length >= 60, `${s.series.length} buckets of ${s.step_s} s`);
      assert.equal(s.totals.requests, 10);
      const narrow = await json(`/stats?since_ms=${start - 1000}&until_ms=${Date.now() + 1000}&step_s=1`);
      assert.equal(narrow.step_s, 1);
      assert.equal(narrow.totals.requests, 10);
      const before = await json(`/stats?since_ms=${start - 3_600_000}&until_ms=${start - 1000}`);
      assert.equal(before.totals.requests, 0);
      assert.ok(before.series.every((b) => b.requests === 0 && b.latency_ms.p50 === null && b.ttfb_ms.p99 === null));
      assert.deepEqual(before.by_channel, []);
    });

    test('stats: bad parameters get a 400 that names them and says what to fix', async () => {
      const now = Date.now();
      for (const [query, param, words] of [
        ['since_ms=yesterday', 'since_ms', 'Unix time in milliseconds'],
        ['until_ms=-1', 'until_ms', 'whole number'],
        ['step_s=0', 'step_s', 'step_s must be'],
        ['step_s=abc', 'step_s', 'step_s must be'],
        [`since_ms=${now - 40 * 86_400_000}&until_ms=${now}`, 'since_ms', '31 days'],
        [`since_ms=${now}&until_ms=${now - 1}`, 'since_ms', 'must be before until_ms'],
        [`since_ms=${now - 86_400_000}&until_ms=${now}&step_s=1`, 'step_s', 'buckets'],
      ]) {
        const res = await admin(`/stats?${query}`);
        assert.equal(res.status, 400, query);
        const { error } = await res.json();
        assert.equal(error.param, param, query);
        assert.equal(error.type, 'invalid_request_error');
        assert.ok(error.message.includes(words), `${query}: ${error.message}`);
      }
      assert.equal((await fetch(`${gw.url}/admin/api/stats`)).status, 401, 'master key only');
      assert.equal((await admin('/stats', { method: 'POST', body: {} })).status, 405);
    });

    test('usage: grouped by day, key, model and channel, as JSON and as a CSV download', async () => {
      // The window ends with the set-up: the tests before this one make requests of their own (a
      // 401 is logged), whose rows may land between the JSON read and the CSV read below.
      const to = setupEnd;
      const j = await json(`/usage?from=${start - 1000}&to=${to}&by=${encodeURIComponent('day,key,model,channel')}`);
      const row = j.data.find((r) => r.virtual_key_id === key.id);
      assert.equal(row.virtual_key_name, 'stats-key');
      assert.equal(row.model, 'mock-2');
      assert.equal(row.channel, 'b');
      assert.equal(row.requests, 3);
      assert.ok(Number.isInteger(row.day_ms) && row.day_ms % 86_400_000 === 0);
      assert.equal(j.data.find((r) => r.virtual_key_id === null && r.model === 'mock-1').virtual_key_name, null);

      const res = await admin(`/usage?from=${start - 1000}&to=${to}&by=day,key,model,channel&format=csv`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/csv; charset=utf-8');
      assert.match(res.headers.get('content-disposition'), /^attachment; filename="sluice-usage-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.csv"$/);
      const text = await res.text();
      assert.ok(text.endsWith('\r\n'));
      const lines = text.trimEnd().split('\r\n').map((l) => l.split(','));
      const [header, ...rows] = lines;
      assert.deepEqual(header, ['day', 'virtual_key_id', 'virtual_key_name', 'model', 'channel', 'requests', 'errors',
        'input_tokens', 'output_tokens', 'cached_tokens', 'cost_usd', 'cache_write_tokens', 'reasoning_tokens']);
      assert.equal(rows.length, j.data.length);
      const col = (name) => header.indexOf(name);
      assert.equal(rows.reduce((n, r) => n + Number(r[col('requests')]), 0), 10);
      assert.equal(rows.reduce((n, r) => n + Number(r[col('errors')]), 0), 1);
      const keyRow = rows.find((r) => r[col('virtual_key_id')] === String(key.id));
      assert.equal(keyRow[col('virtual_key_name')], 'stats-key');
      assert.match(keyRow[col('day')], /^\d{4}-\d{2}-\d{2}$/);
      assert.ok(Number(keyRow[col('cost_usd')]) > 0);
      assert.match(keyRow[col('cost_usd')], /^\d+(\.\d+)?$/, 'plain decimals');
      const plain = await admin(`/usage?from=${start - 1000}&to=${to}&format=csv`);
      assert.equal((await plain.text()).split('\r\n')[0], 'requests,errors,input_tokens,output_tokens,cached_tokens,cost_usd,cache_write_tokens,reasoning_tokens');
      const bad = await admin('/usage?format=xml');
      assert.equal(bad.status, 400);
      assert.equal((await bad.json()).error.param, 'format');
      const byKey = await json(`/usage?from=${start - 1000}&to=${to}&virtual_key_id=${key.id}`);
      assert.equal(byKey.data[0].requests, 3);
    });

    test('logs/{id}: every attempt, timings, tokens, cost and the stored bodies', async () => {
      const page = await json('/logs?limit=1000');
      const listed = page.data.find((e) => e.request_id === sent[3].id);
      assert.ok(listed, 'the request is listed');
      assert.equal(listed.virtual_key_id, null);
      const res = await admin(`/logs/${listed.id}`);
      assert.equal(res.status, 200);
      const e = await res.json();
      assert.equal(e.id, listed.id);
      assert.equal(e.request_id, sent[3].id);
      assert.equal(e.status, 200);
      assert.equal(e.channel, 'a');
      assert.equal(e.model, 'mock-1');
      assert.equal(e.attempts.length, 2, JSON.stringify(e.attempts));
      assert.deepEqual([e.attempts[0].channel, e.attempts[0].status], ['flaky', 503]);
      assert.ok(e.attempts[0].error);
      assert.deepEqual([e.attempts[1].channel, e.attempts[1].status, e.attempts[1].error], ['a', 200, null]);
      for (const k of ['ttfb_ms', 'duration_ms', 'input_tokens', 'output_tokens', 'cached_tokens', 'cache_write_tokens', 'reasoning_tokens'])
        assert.ok(Number.isInteger(e[k]), k);
      assert.ok(e.input_tokens > 0 && e.output_tokens > 0 && e.cost_usd > 0);
      assert.equal(e.request_body, JSON.stringify(sent[3].body));
      assert.ok(e.response_body.includes('"choices"'), e.response_body);
      assert.equal(e.virtual_key_name, null);
      const streamed = page.data.find((x) => x.request_id === sent[0].id);
      const s = await (await admin(`/logs/${streamed.id}`)).json();
      assert.equal(s.stream, true);
      assert.ok(s.response_body.startsWith('data: '));
      const keyed = page.data.find((x) => x.virtual_key_id === key.id);
      assert.equal((await (await admin(`/logs/${keyed.id}`)).json()).virtual_key_name, 'stats-key');
      const onlyKey = await json(`/logs?virtual_key_id=${key.id}`);
      assert.equal(onlyKey.data.length, 3);
      assert.ok(!('request_body' in onlyKey.data[0]), 'the list stays light');
      for (const missing of ['999999999', 'abc', '0']) {
        const r = await admin(`/logs/${missing}`);
        assert.equal(r.status, 404, missing);
        assert.ok((await r.json()).error.message.includes('no request log'));
      }
    });

    test('keys: the list shows each key\'s spend and request count', async () => {
      const { data } = await json('/keys');
      const k = data.find((x) => x.id === key.id);
      assert.deepEqual(k.requests, { day: 3, month: 3, total: 3 });
      assert.ok(k.spend.total_usd > 0 && k.spend.day_usd > 0);
      const one = await json(`/keys/${key.id}`);
      assert.deepEqual(one.requests, k.requests);
    });
  });
}

scenario('SQLite', () => `sqlite://${join(tempDir(), 'sluice.db')}`);
if (PG) {
  scenario('PostgreSQL', freshPostgresUrl);
} else {
  test('PostgreSQL', () => assert.fail('SLUICE_TEST_POSTGRES_URL is not set: run this suite through tests/scripts/with-postgres.sh (tests/run.sh does)'));
}
