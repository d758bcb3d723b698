// Stored responses on any provider (store.responses): POST /v1/responses answers are kept per
// virtual key, on a native openai channel and a translated anthropic one, streamed or not;
// GET / DELETE /v1/responses/{id} and .../input_items; previous_response_id made into the whole
// conversation before it goes upstream (asserted on the bytes the provider received); store:
// false never kept; one key never sees another's; hostile ids get a 400 or 404 and the gateway
// keeps serving. The same scenario runs on SQLite and on PostgreSQL.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startGateway, gatewayYaml, readSseEvents, createKey, tempDir, waitFor, MASTER } from '../lib/harness.mjs';
import { startRecordingUpstream } from '../lib/recording-upstream.mjs';
import { join } from 'node:path';

const PG = process.env.SLUICE_TEST_POSTGRES_URL;

function freshPostgresUrl() {
  const name = `sluice_stored_${process.pid}_${Date.now()}`;
  execFileSync('psql', [PG, '-v', 'ON_ERROR_STOP=1', '-qc', `CREATE DATABASE ${name}`], { encoding: 'utf8' });
  const url = new URL(PG);
  url.pathname = `/${name}`;
  return url.toString();
}

const NATIVE = 'gpt-4o-mini';        // the openai channel: /v1/responses relayed as it is
const TRANSLATED = 'claude-sonnet-4'; // the anthropic channel: translated to /v1/messages

function configFor(up, storeUrl, responses = '') {
  return `store:\n  url: "${storeUrl}"\n${responses}` + gatewayYaml({
    server: { workers: 2 },
    routing: { max_retries: 0 },
    channels: [
      { name: 'oa', type: 'openai', url: up.url, models: ['gpt-*'] },
      { name: 'an', type: 'anthropic', base_url: up.url, models: ['claude-*'] },
    ],
  });
}

async function create(gw, body, key = MASTER) {
  const res = await fetch(`${gw.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  if (body.stream && res.status === 200) {
    const { events } = await readSseEvents(res);
    const done = events.find((e) => e?.type === 'response.completed');
    return { status: res.status, body: done?.response, events, headers: res.headers };
  }
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, body: json, text, headers: res.headers };
}

async function call(gw, method, path, key = MASTER) {
  const res = await fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${key}` } });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, body: json, text };
}

const outputText = (r) => r.output.filter((i) => i.type === 'message')
  .flatMap((i) => i.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');

function scenario(backend, storeUrl) {
  describe(`stored responses on ${backend}`, () => {
    let up, gw, keyA, keyB;
    before(async () => {
      up = await startRecordingUpstream();
      gw = await startGateway(configFor(up, storeUrl()));
      keyA = (await createKey(gw, { name: 'a' })).secret;
      keyB = (await createKey(gw, { name: 'b' })).secret;
    });
    after(async () => { await gw?.stop(); await up?.stop(); });

    for (const [label, model] of [['native openai', NATIVE], ['translated anthropic', TRANSLATED]]) {
      for (const stream of [false, true]) {
        test(`${label}, ${stream ? 'streamed' : 'whole'}: kept, then GET, input_items and DELETE`, async () => {
          const r = await create(gw, { model, input: `hello ${label} ${stream}`, stream }, keyA);
          assert.equal(r.status, 200, r.text);
          const id = r.body.id;
          assert.match(id, /^resp_/);
          if (model === TRANSLATED) assert.equal(r.body.store, true, 'a kept translated answer says store: true');

          const got = await call(gw, 'GET', `/v1/responses/${id}`, keyA);
          assert.equal(got.status, 200, got.text);
          assert.equal(got.body.id, id, 'the id the client saw');
          assert.equal(got.body.object, 'response');
          assert.equal(got.body.store, true);
          assert.equal(outputText(got.body), outputText(r.body));

          const items = await call(gw, 'GET', `/v1/responses/${id}/input_items`, keyA);
          assert.equal(items.status, 200, items.text);
          assert.equal(items.body.object, 'list');
          assert.equal(items.body.data.length, 1);
          const [item] = items.body.data;
          assert.equal(item.role, 'user');
          assert.deepEqual(item.content, [{ type: 'input_text', text: `hello ${label} ${stream}` }]);
          assert.equal(items.body.first_id, item.id);
          assert.equal(items.body.last_id, item.id);
          assert.equal(items.body.has_more, false);

          const del = await call(gw, 'DELETE', `/v1/responses/${id}`, keyA);
          assert.equal(del.status, 200, del.text);
          assert.deepEqual(del.body, { id, object: 'response', deleted: true });
          const gone = await call(gw, 'GET', `/v1/responses/${id}`, keyA);
          assert.equal(gone.status, 404);
          assert.deepEqual(gone.body, { error: { message: `Response with id '${id}' not found.`, type: 'invalid_request_error', param: null, code: null } });
          assert.equal((await call(gw, 'DELETE', `/v1/responses/${id}`, keyA)).status, 404);
        });
      }
    }

    test('store: false is never kept', async () => {
      for (const model of [NATIVE, TRANSLATED]) {
        for (const stream of [false, true]) {
          const r = await create(gw, { model, input: 'not kept', store: false, stream });
          assert.equal(r.status, 200);
          assert.equal(r.body.store, false);
          const got = await call(gw, 'GET', `/v1/responses/${r.body.id}`);
          assert.equal(got.status, 404, `${model} stream=${stream}: ${got.text}`);
        }
      }
    });

    test('previous_response_id on a translated channel: the provider gets the whole conversation', async () => {
      const first = await create(gw, { model: TRANSLATED, instructions: 'be brief', input: 'first question' }, keyA);
      assert.equal(first.status, 200, first.text);
      up.clear();
      const second = await create(gw, { model: TRANSLATED, previous_response_id: first.body.id, input: 'second question', stream: true }, keyA);
      assert.equal(second.status, 200);
      const sent = up.requests().filter((q) => q.target.endsWith('/v1/messages'));
      assert.equal(sent.length, 1);
      const body = JSON.parse(sent[0].body);
      assert.equal(body.system, undefined, 'the earlier instructions are not inherited');
      const texts = body.messages.map((m) => [m.role, typeof m.content === 'string' ? m.content : m.content.map((c) => c.text).join('')]);
      assert.deepEqual(texts, [['user', 'first question'], ['assistant', outputText(first.body)], ['user', 'second question']]);
      assert.ok(!sent[0].body.includes('previous_response_id'));

      const got = await call(gw, 'GET', `/v1/responses/${second.body.id}`, keyA);
      assert.equal(got.body.previous_response_id, first.body.id);
      // The whole input, newest first by default; paged with limit, order and after.
      const items = await call(gw, 'GET', `/v1/responses/${second.body.id}/input_items`, keyA);
      assert.equal(items.body.data.length, 3);
      assert.equal(items.body.data[0].content[0].text, 'second question');
      assert.equal(items.body.data[1].role, 'assistant');
      const p1 = await call(gw, 'GET', `/v1/responses/${second.body.id}/input_items?limit=1&order=asc`, keyA);
      assert.equal(p1.body.data.length, 1);
      assert.equal(p1.body.has_more, true);
      assert.equal(p1.body.data[0].content[0].text, 'first question');
      const p2 = await call(gw, 'GET', `/v1/responses/${second.body.id}/input_items?limit=5&order=asc&after=${p1.body.last_id}`, keyA);
      assert.equal(p2.body.data.length, 2);
      assert.equal(p2.body.has_more, false);
      assert.equal(p2.body.data[1].content[0].text, 'second question');
      for (const q of ['limit=0', 'limit=101', 'limit=x', 'order=up', `after=${encodeURIComponent("'")}`]) {
        const bad = await call(gw, 'GET', `/v1/responses/${second.body.id}/input_items?${q}`, keyA);
        assert.equal(bad.status, 400, q);
        assert.equal(bad.body.error.type, 'invalid_request_error');
      }

      // A third turn chains from the second: three turns reach the provider.
      up.clear();
      const third = await create(gw, { model: TRANSLATED, previous_response_id: second.body.id, input: 'third question' }, keyA);
      assert.equal(third.status, 200, third.text);
      const msgs = JSON.parse(up.requests().find((q) => q.target.endsWith('/v1/messages')).body).messages;
      assert.equal(msgs.length, 5);
    });

    test('a chain crosses providers: native openai first, then a translated model', async () => {
      const first = await create(gw, { model: NATIVE, input: 'from openai' });
      assert.equal(first.status, 200, first.text);
      up.clear();
      const second = await create(gw, { model: TRANSLATED, previous_response_id: first.body.id, input: 'and now claude' });
      assert.equal(second.status, 200, second.text);
      const msgs = JSON.parse(up.requests().find((q) => q.target.endsWith('/v1/messages')).body).messages;
      assert.equal(msgs.length, 3);
      assert.equal(msgs[0].content[0]?.text ?? msgs[0].content, 'from openai');
      // And back: the openai channel gets the expanded input, not an id it may not hold.
      up.clear();
      const third = await create(gw, { model: NATIVE, previous_response_id: second.body.id, input: 'back to openai' });
      assert.equal(third.status, 200, third.text);
      const sent = JSON.parse(up.requests().find((q) => q.target.endsWith('/v1/responses')).body);
      assert.equal(sent.previous_response_id, undefined);
      assert.equal(sent.input.length, 5);
    });

    test('an unknown previous_response_id gets OpenAI\'s error', async () => {
      for (const model of [NATIVE, TRANSLATED]) {
        const r = await create(gw, { model, previous_response_id: 'resp_doesnotexist', input: 'x' });
        assert.equal(r.status, 400);
        assert.deepEqual(r.body, { error: { message: "Previous response with id 'resp_doesnotexist' not found.", type: 'invalid_request_error', param: 'previous_response_id', code: 'previous_response_not_found' } });
      }
    });

    test('a key never reads, continues or deletes another key\'s response', async () => {
      const mine = await create(gw, { model: TRANSLATED, input: 'secret of a' }, keyA);
      const id = mine.body.id;
      for (const other of [keyB, MASTER]) {
        assert.equal((await call(gw, 'GET', `/v1/responses/${id}`, other)).status, 404);
        assert.equal((await call(gw, 'GET', `/v1/responses/${id}/input_items`, other)).status, 404);
        assert.equal((await call(gw, 'DELETE', `/v1/responses/${id}`, other)).status, 404);
        const chained = await create(gw, { model: TRANSLATED, previous_response_id: id, input: 'x' }, other);
        assert.equal(chained.status, 400);
        assert.equal(chained.body.error.code, 'previous_response_not_found');
      }
      assert.equal((await call(gw, 'GET', `/v1/responses/${id}`, keyA)).status, 200, 'still there for its owner');
      // The master key's own responses are its own.
      const master = await create(gw, { model: NATIVE, input: 'of the master key' });
      assert.equal((await call(gw, 'GET', `/v1/responses/${master.body.id}`)).status, 200);
      assert.equal((await call(gw, 'GET', `/v1/responses/${master.body.id}`, keyA)).status, 404);
      // No key: a 401 before anything is looked up.
      const anon = await fetch(`${gw.url}/v1/responses/${id}`);
      assert.equal(anon.status, 401);
    });

    test('hostile ids: a 400 or 404, never a 500, and the gateway keeps serving', async () => {
      const kept = await create(gw, { model: TRANSLATED, input: 'still here' }, keyA);
      const ids = [
        "resp_'; DROP TABLE stored_responses;--", "resp_' OR '1'='1", 'resp_"x"', '%00', 'resp_%00', 'resp_a%00b',
        '..%2F..%2Fetc%2Fpasswd', '%2e%2e', 'resp_' + 'a'.repeat(129), 'r'.repeat(100_000 - 20), 'résp_ü', 'resp_😀',
        'resp_%E2%80%AE', '%25', 'resp_a%2Fb', 'resp_\\', 'resp_;', '*', 'resp_%',
      ];
      for (const raw of ids) {
        const path = /%[0-9A-Fa-f]{2}|%$/.test(raw) ? raw : encodeURIComponent(raw);
        for (const [method, suffix] of [['GET', ''], ['DELETE', ''], ['GET', '/input_items']]) {
          const r = await call(gw, method, `/v1/responses/${path}${suffix}`, keyA);
          assert.ok([400, 404, 431].includes(r.status), `${method} ${raw.slice(0, 40)}${suffix}: ${r.status} ${r.text.slice(0, 200)}`);
          if (r.status !== 431) assert.equal(r.body?.error?.type, 'invalid_request_error', r.text.slice(0, 200));
        }
        if (raw.length < 1000) {
          const chained = await create(gw, { model: TRANSLATED, previous_response_id: raw, input: 'x' }, keyA);
          assert.equal(chained.status, 400, raw);
          assert.equal(chained.body.error.code, 'previous_response_not_found');
          assert.ok(chained.body.error.message.length < 200);
        }
      }
      for (const bad of [7, true, {}, ['resp_x']]) {
        const chained = await create(gw, { model: TRANSLATED, previous_response_id: bad, input: 'x' }, keyA);
        assert.equal(chained.status, 400, JSON.stringify(bad));
      }
      assert.equal((await call(gw, 'POST', `/v1/responses/${kept.body.id}`, keyA)).status, 405);
      assert.equal((await call(gw, 'GET', `/v1/responses/${kept.body.id}`, keyA)).status, 200);
      assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    });
  });
}

scenario('SQLite', () => `sqlite://${join(tempDir(), 'sluice.db')}`);
if (PG) {
  scenario('PostgreSQL', freshPostgresUrl);
} else {
  test('PostgreSQL', () => assert.fail('SLUICE_TEST_POSTGRES_URL is not set: run this suite through tests/scripts/with-postgres.sh (tests/run.sh does)'));
}

describe('stored responses: size cap, ttl and off', () => {
  let up;
  before(async () => { up = await startRecordingUpstream(); });
  after(async () => { await up?.stop(); });

  test('a response over max_bytes is not kept, and the log says so', async () => {
    const gw = await startGateway(configFor(up, `sqlite://${join(tempDir(), 's.db')}`, '  responses: {max_bytes: 2KiB}\n'));
    try {
      const small = await create(gw, { model: TRANSLATED, input: 'small' });
      assert.equal((await call(gw, 'GET', `/v1/responses/${small.body.id}`)).status, 200);
      const big = await create(gw, { model: TRANSLATED, input: 'x'.repeat(4096) });
      assert.equal(big.status, 200, 'the answer itself goes out');
      assert.equal((await call(gw, 'GET', `/v1/responses/${big.body.id}`)).status, 404);
      assert.ok(await waitFor(() => gw.proc.output.includes(`${big.body.id} is not kept`)), gw.proc.output.slice(-2000));
    } finally { await gw.stop(); }
  });

  test('an expired response is gone', async () => {
    const gw = await startGateway(configFor(up, `sqlite://${join(tempDir(), 's.db')}`, '  responses: {ttl: 1s}\n'));
    try {
      const r = await create(gw, { model: TRANSLATED, input: 'short-lived' });
      const id = r.body.id;
      const gone = await waitFor(async () => (await call(gw, 'GET', `/v1/responses/${id}`)).status === 404, 10000, 100);
      assert.ok(gone, 'expired within its ttl');
      const chained = await create(gw, { model: TRANSLATED, previous_response_id: id, input: 'x' });
      assert.equal(chained.status, 400);
    } finally { await gw.stop(); }
  });

  test('store.responses.enabled: false keeps nothing', async () => {
    const gw = await startGateway(configFor(up, `sqlite://${join(tempDir(), 's.db')}`, '  responses: {enabled: false}\n'));
    try {
      const r = await create(gw, { model: TRANSLATED, input: 'x' });
      assert.equal(r.status, 200);
      assert.equal(r.body.store, false, 'a translated answer says it was not stored');
      assert.equal((await call(gw, 'GET', `/v1/responses/${r.body.id}`)).status, 404);
    } finally { await gw.stop(); }
  });
});
