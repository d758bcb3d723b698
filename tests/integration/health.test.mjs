// Health that tells the truth: sluice_redis_up and sluice_store_up follow Redis and the store's
// database with no traffic at all (a background probe each second), down when they go and up
// when they come back. Redis is private to this file so it can stop it; the PostgreSQL of
// tests/scripts/with-postgres.sh is shared, so the gateway reaches it through a TCP gate that the
// test closes and opens. Polls have generous deadlines: what is checked is that the gauges move,
// not how fast.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, gatewayYaml, metrics, metricValue, stop, waitFor } from '../lib/harness.mjs';
import { startRedis, startTcpGate } from '../lib/services.mjs';

const PG = process.env.SLUICE_TEST_POSTGRES_URL;
let mock;
const channels = () => [{ name: 'm', url: mock.url, models: ['mock-*'] }];

// Polls /metrics until `name` reads `want` (up to a minute: a loaded machine must not fail this).
async function gaugeBecomes(gw, name, want, what) {
  // waitFor stops on a truthy answer: the reading is boxed, or a wanted 0 would wait it all out.
  const got = await waitFor(async () => {
    const now = metricValue(await metrics(gw), name);
    return now === want ? { now } : null;
  }, 60000, 200);
  assert.equal(got?.now, want, `${name} never became ${want} ${what}`);
}

before(async () => { mock = await startMock([]); });
after(async () => { await mock?.stop(); });

test('sluice_redis_up follows Redis with no traffic: 1, then 0 when it stops, then 1 again', async () => {
  let redis = await startRedis();
  const gw = await startGateway(gatewayYaml({ channels: channels(), extra: `redis:\n  url: "${redis.url}"\n` }));
  try {
    await gaugeBecomes(gw, 'sluice_redis_up', 1, 'with Redis running');
    await gaugeBecomes(gw, 'sluice_store_up', 1, 'with the SQLite store');
    await stop(redis.proc, 'SIGKILL');
    await gaugeBecomes(gw, 'sluice_redis_up', 0, 'after Redis was killed (no request was sent)');
    assert.equal(metricValue(await metrics(gw), 'sluice_store_up'), 1, 'the store is still there');
    redis = await startRedis(redis.port);
    await gaugeBecomes(gw, 'sluice_redis_up', 1, 'after Redis came back');
  } finally {
    await gw.stop();
    await stop(redis.proc, 'SIGKILL');
  }
});

test('without redis.url there is no sluice_redis_up, as before', async () => {
  const gw = await startGateway({ channels: channels() });
  try {
    await gaugeBecomes(gw, 'sluice_store_up', 1, 'with the SQLite store');
    assert.doesNotMatch(await metrics(gw), /sluice_redis_up/);
  } finally {
    await gw.stop();
  }
});

test('sluice_store_up follows a PostgreSQL store with no traffic: 1, then 0 when it goes away, then 1 again', async () => {
  assert.ok(PG, 'SLUICE_TEST_POSTGRES_URL is unset: run under tests/scripts/with-postgres.sh (tests/run.sh does)');
  const pg = new URL(PG);
  const gate = await startTcpGate(pg.hostname, Number(pg.port || 5432));
  pg.hostname = '127.0.0.1';
  pg.port = String(gate.port);
  let gw;
  try {
    gw = await startGateway(`store:\n  url: "${pg.href}"\n` + gatewayYaml({ channels: channels() }));
    await gaugeBecomes(gw, 'sluice_store_up', 1, 'with PostgreSQL reachable');
    await gate.close();
    await gaugeBecomes(gw, 'sluice_store_up', 0, 'after PostgreSQL went away (no request was sent)');
    await gate.open();
    await gaugeBecomes(gw, 'sluice_store_up', 1, 'after PostgreSQL came back');
  } finally {
    await gw?.stop();
    await gate.close();
  }
});
