// Teams on the request path, across two Sluice instances sharing a real PostgreSQL (keys, teams,
// logs) and a real redis-server (limits, spend): a team's budget bounds the sum of its keys, so
// once one key spends it every key of the team is refused, on either instance, with the same
// 429 body a key's own budget gives (naming the team); a team's RPM is exact across both; the
// Anthropic and Gemini wire formats hear it in their own shapes.
// PostgreSQL comes from tests/scripts/with-postgres.sh (tests/run.sh wraps this suite in it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, gatewayYaml, chat, sleep, MASTER, stop } from '../lib/harness.mjs';
import { startRedis } from '../lib/services.mjs';

const PG = process.env.SLUICE_TEST_POSTGRES_URL;
let redis, mock, gw1, gw2;

const admin = async (g, path, { method = 'GET', body } = {}) => {
  const res = await fetch(`${g.url}/admin/api${path}`, {
    method, headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : null };
};
const hi = { model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] };
// One short chat costs a few dollars at these prices: a budget runs out in a request or two.
const PRICING = 'pricing:\n  mock-1: {input: 100000, output: 100000}\n';

async function teamWithKeys(team, n) {
  const t = await admin(gw1, '/teams', { method: 'POST', body: team });
  assert.equal(t.status, 201, t.text);
  const keys = [];
  for (let i = 0; i < n; i++) {
    const k = await admin(gw1, '/keys', { method: 'POST', body: { name: `${team.name}-${i}`, team_id: t.json.id } });
    assert.equal(k.status, 201, k.text);
    keys.push(k.json.secret);
  }
  // Both instances know every key (and its team) before the test spends anything.
  for (const g of [gw1, gw2]) {
    for (const secret of keys) {
      let status = 0;
      for (let i = 0; i < 100 && status !== 200; i++) {
        status = (await fetch(`${g.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } })).status;
        if (status !== 200) await sleep(50);
      }
      assert.equal(status, 200, 'the key reached both instances');
    }
  }
  return { team: t.json, keys };
}

before(async () => {
  assert.ok(PG, 'SLUICE_TEST_POSTGRES_URL is not set: run this suite through tests/scripts/with-postgres.sh (tests/run.sh does)');
  redis = await startRedis();
  mock = await startMock([]);
  const yaml = `store:\n  url: "${PG}"\nredis:\n  url: "${redis.url}"\n` +
    gatewayYaml({ channels: [{ name: 'm', url: mock.url, models: ['mock-*'] }], extra: PRICING });
  gw1 = await startGateway(yaml);
  gw2 = await startGateway(yaml);
});
after(async () => {
  await gw1?.stop();
  await gw2?.stop();
  await mock?.stop();
  if (redis) await stop(redis.proc);
});

test("a team's budget, spent by one key on one instance, stops every key of the team on both", async () => {
  const { keys: [a, b, c] } = await teamWithKeys({ name: 'pay', budget_total_usd: 5 }, 3);
  const outsider = (await admin(gw1, '/keys', { method: 'POST', body: { name: 'outsider' } })).json.secret;
  let known = 0;
  for (let i = 0; i < 100 && known !== 200; i++) {
    known = (await fetch(`${gw2.url}/v1/models`, { headers: { authorization: `Bearer ${outsider}` } })).status;
    if (known !== 200) await sleep(50);
  }
  let ok = 0, res;
  for (let i = 0; i < 20; i++) {
    res = await chat(gw1, hi, { key: a });
    if (res.status !== 200) break;
    ok++;
    await res.text();
  }
  assert.ok(ok >= 1 && ok < 20, `${ok} requests before the team's budget ran out`);
  const expected = { error: { message: 'team pay has used its total budget', type: 'insufficient_quota', param: null, code: 'budget_exceeded' } };
  assert.equal(res.status, 429);
  assert.deepEqual(await res.json(), expected);
  for (const [g, key] of [[gw2, b], [gw1, c], [gw2, a]]) {
    const r = await chat(g, hi, { key });
    assert.equal(r.status, 429, 'every key of the team, on either instance');
    assert.equal(r.headers.get('x-should-retry'), 'false');
    assert.equal(r.headers.get('retry-after'), null, 'a total budget never resets');
    assert.deepEqual(await r.json(), expected);
  }
  // In the other wire formats, the same refusal in their shapes.
  const anth = await fetch(`${gw2.url}/v1/messages`, { method: 'POST',
    headers: { 'x-api-key': b, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock-1', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }) });
  assert.equal(anth.status, 429);
  assert.deepEqual(await anth.json(), { type: 'error', error: { type: 'rate_limit_error', message: 'team pay has used its total budget' } });
  const gem = await fetch(`${gw2.url}/v1beta/models/mock-1:generateContent?key=${c}`, { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }) });
  assert.equal(gem.status, 429);
  assert.deepEqual(await gem.json(), { error: { code: 429, message: 'team pay has used its total budget', status: 'RESOURCE_EXHAUSTED' } });
  // A key outside the team is not held back.
  const free = await chat(gw2, hi, { key: outsider });
  assert.equal(free.status, 200);
  await free.text();
  // The team shows what its keys spent; raising the budget lets them through again.
  let spend = 0;
  for (let i = 0; i < 60 && spend <= 5; i++) {
    spend = (await admin(gw2, '/teams/pay')).json.spend.total_usd;
    if (spend <= 5) await sleep(50);
  }
  assert.ok(spend > 5, `team spend ${spend}`);
  assert.equal((await admin(gw2, '/teams/pay', { method: 'PATCH', body: { budget_total_usd: 1000 } })).status, 200);
  let status = 0;
  for (let i = 0; i < 60 && status !== 200; i++) {
    const r = await chat(gw1, hi, { key: c });
    status = r.status;
    await r.text();
    if (status !== 200) await sleep(50);
  }
  assert.equal(status, 200, 'the new budget reached the other instance');
});

test("a team's RPM is exact across its keys and both instances", async () => {
  const { keys } = await teamWithKeys({ name: 'rate', rpm: 7 }, 3);
  const results = [];
  for (let round = 0; round < 3; round++) {
    const batch = await Promise.all(Array.from({ length: 6 }, (_, i) =>
      chat(i % 2 ? gw2 : gw1, hi, { key: keys[i % 3] }).then(async (r) => ({ status: r.status, body: await r.text(), limit: r.headers.get('x-ratelimit-limit-requests') }))));
    results.push(...batch);
  }
  assert.equal(results.filter((r) => r.status === 200).length, 7, JSON.stringify(results.map((r) => r.status)));
  const refused = results.filter((r) => r.status === 429);
  assert.equal(refused.length, 11);
  for (const r of refused) {
    const err = JSON.parse(r.body).error;
    assert.equal(err.type, 'rate_limit_error');
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.match(err.message, /^team rate is over its limit of 7 requests per minute; retry in (\d+m)?\d+s$/);
    assert.equal(r.limit, '7', 'the x-ratelimit-* headers are the team\'s');
  }
});

test("usage groups by team, and a key's own limit still applies inside its team", async () => {
  const { team, keys: [k] } = await teamWithKeys({ name: 'mixed', rpm: 100 }, 1);
  const keyId = (await admin(gw1, '/keys?team_id=mixed')).json.data[0].id;
  assert.equal((await admin(gw1, `/keys/${keyId}`, { method: 'PATCH', body: { rpm: 2 } })).status, 200);
  const statuses = [];
  for (const g of [gw1, gw1, gw1]) {
    const r = await chat(g, hi, { key: k });
    statuses.push(r.status);
    if (r.status === 429) assert.match((await r.json()).error.message, /^key mixed-0 is over its limit of 2 requests per minute/);
    else await r.text();
  }
  assert.deepEqual(statuses, [200, 200, 429]);
  let row, data;
  for (let i = 0; i < 200 && !row; i++) {
    data = (await admin(gw2, '/usage?group_by=team')).json.data;
    // Two model lists (teamWithKeys asks each instance), two chats, one refused.
    row = data.find((r) => r.team_id === team.id && r.requests === 5 && r.errors === 1);
    if (!row) await sleep(50);
  }
  assert.equal(row?.team_name, 'mixed', `the key's requests are under its team: ${JSON.stringify(data)}`);
});
