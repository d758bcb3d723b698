// Health that tells the truth: sluice_redis_up and sluice_store_up follow Redis and the store's
// database with no traffic at all (a background probe each second), down when they go and up
// when they come back. Redis and PostgreSQL are private to this file so it can stop them; the
// PostgreSQL of tests/scripts/with-postgres.sh is shared and stays up. Polls have generous
// deadlines: what is checked is that the gauges move, not how fast.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { chownSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startMock, startGateway, gatewayYaml, sleep, metrics, metricValue, stop, tempDir } from '../lib/harness.mjs';

let mock;
const channels = () => [{ name: 'm', url: mock.url, models: ['mock-*'] }];

async function freePort() {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  s.close();
  return port;
}

async function startRedis(port) {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  for (let i = 0; i < 200 && !/Ready to accept connections/.test(out); i++) await sleep(50);
  assert.match(out, /Ready to accept connections/, `redis-server did not start:\n${out}`);
  return proc;
}

// A PostgreSQL cluster of this test's own, started and stopped with pg_ctl (as the postgres
// user when running as root, as tests/scripts/with-postgres.sh does).
function pgBin() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(a) - Number(b)) : [];
  assert.ok(versions.length, 'no PostgreSQL server in /usr/lib/postgresql (run scripts/install-deps.sh)');
  return join(root, versions.at(-1), 'bin');
}
function asPostgres(cmd, args) {
  const root = process.getuid() === 0;
  const r = spawnSync(root ? 'runuser' : cmd, root ? ['-u', 'postgres', '--', cmd, ...args] : args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}:\n${r.stdout}${r.stderr}`);
}
async function privatePostgres() {
  const bin = pgBin();
  const dir = tempDir();
  if (process.getuid() === 0) chownSync(dir, Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout), Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout));
  const data = join(dir, 'data');
  asPostgres(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = await freePort();
  const opts = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${dir} -c fsync=off`;
  const pg = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: () => asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', opts, 'start']),
    stop: () => asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']),
    remove() { try { this.stop(); } catch {} rmSync(dir, { recursive: true, force: true }); },
  };
  pg.start();
  return pg;
}

// Polls /metrics until `name` reads `want`; returns the last value seen.
async function gaugeBecomes(gw, name, want, what) {
  let v;
  for (let i = 0; i < 300; i++) {  // up to a minute: a loaded machine must not fail this
    v = metricValue(await metrics(gw), name);
    if (v === want) return v;
    await sleep(200);
  }
  assert.equal(v, want, `${name} never became ${want} ${what}`);
}

before(async () => { mock = await startMock([]); });
after(async () => { await mock?.stop(); });

test('sluice_redis_up follows Redis with no traffic: 1, then 0 when it stops, then 1 again', async () => {
  const port = await freePort();
  let redis = await startRedis(port);
  const gw = await startGateway(gatewayYaml({ channels: channels(), extra: `redis:\n  url: "redis://127.0.0.1:${port}"\n` }));
  try {
    await gaugeBecomes(gw, 'sluice_redis_up', 1, 'with Redis running');
    await gaugeBecomes(gw, 'sluice_store_up', 1, 'with the SQLite store');
    await stop(redis, 'SIGKILL');
    await gaugeBecomes(gw, 'sluice_redis_up', 0, 'after Redis was killed (no request was sent)');
    assert.equal(metricValue(await metrics(gw), 'sluice_store_up'), 1, 'the store is still there');
    redis = await startRedis(port);
    await gaugeBecomes(gw, 'sluice_redis_up', 1, 'after Redis came back');
  } finally {
    await gw.stop();
    await stop(redis, 'SIGKILL');
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

test('sluice_store_up follows a PostgreSQL store with no traffic: 1, then 0 when it stops, then 1 again', async () => {
  const pg = await privatePostgres();
  let gw;
  try {
    gw = await startGateway(`store:\n  url: "${pg.url}"\n` + gatewayYaml({ channels: channels() }));
    await gaugeBecomes(gw, 'sluice_store_up', 1, 'with PostgreSQL running');
    pg.stop();
    await gaugeBecomes(gw, 'sluice_store_up', 0, 'after PostgreSQL stopped (no request was sent)');
    pg.start();
    await gaugeBecomes(gw, 'sluice_store_up', 1, 'after PostgreSQL came back');
  } finally {
    await gw?.stop();
    pg.remove();
  }
});
