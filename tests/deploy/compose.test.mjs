// compose.yaml without containers: the file is parsed, and each Sluice service in it runs as a
// `sluice serve` process with the service's own command, mounted config file and environment,
// on the PostgreSQL of tests/scripts/with-postgres.sh and a redis-server started here. Only the
// addresses change: a URL naming another compose service (postgres, redis, mock) points at the
// local one, and each instance listens on a free loopback port instead of its published one.
// Then what compose promises is checked across the two instances: a virtual key made through
// one works on the other, and a key's RPM limit is counted once for both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { BIN, stop, chat, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/services.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PG = process.env.SLUICE_TEST_POSTGRES_URL;
// compose.yaml uses a YAML merge key (<<: *sluice) for what the two instances share.
const compose = parse(readFileSync(resolve(ROOT, 'compose.yaml'), 'utf8'), { merge: true });
const services = compose.services ?? {};
const sluiceNames = Object.keys(services).filter((n) => services[n].command?.[0] === 'serve');

// Compose's own interpolation of the file, ${VAR} and ${VAR:-default}, from this environment.
function interpolate(value) {
  return String(value).replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g,
    (_, name, dflt) => (process.env[name] ? process.env[name] : (dflt ?? '')));
}
function envOf(service) {
  const env = service.environment ?? {};
  const pairs = Array.isArray(env) ? env.map((l) => l.split(/=(.*)/s).slice(0, 2)) : Object.entries(env);
  return Object.fromEntries(pairs.map(([k, v]) => [k, interpolate(v ?? '')]));
}
// The host file mounted at `target` ("./deploy/x.yaml:/etc/sluice/sluice.yaml:ro").
function hostFileFor(service, target) {
  for (const v of service.volumes ?? []) {
    const [src, dst] = String(v).split(':');
    if (dst === target && (src.startsWith('./') || src.startsWith('/'))) return resolve(ROOT, src);
  }
  return undefined;
}

let redis, mock;
const instances = [];

function spawnLogged(args, env) {
  const proc = spawn(BIN, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.output = '';
  proc.stdout.on('data', (d) => { proc.output += d; });
  proc.stderr.on('data', (d) => { proc.output += d; });
  return proc;
}
async function listeningPort(proc, what) {
  const port = await waitFor(() => proc.exitCode === null && proc.output.match(/listening on (?:https?:\/\/)?\S+:(\d+)/)?.[1], 15000, 20);
  assert.ok(port, `${what} did not start listening; output:\n${proc.output}`);
  return Number(port);
}

before(async () => {
  assert.ok(PG, 'SLUICE_TEST_POSTGRES_URL is not set: run this suite through tests/scripts/with-postgres.sh (tests/run.sh does)');
  redis = await startRedis();

  // The mock service: its command, on a free port.
  const mockCmd = services.mock.command.map((a) => (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(a) ? '127.0.0.1:0' : a));
  const mockProc = spawnLogged(mockCmd, process.env);
  mock = { proc: mockProc, url: `http://127.0.0.1:${await listeningPort(mockProc, 'sluice mock')}` };

  const local = { postgres: PG, redis: redis.url, mock: mock.url };
  for (const name of sluiceNames) {
    const svc = services[name];
    const env = { ...process.env, ...envOf(svc) };
    for (const [k, v] of Object.entries(env)) {
      const host = /^[a-z]+:\/\/(?:[^@/]*@)?([^:/]+)/.exec(v)?.[1];
      if (host && host in services) {
        assert.ok(host in local, `${name}.${k} names the service ${host}, which this test does not run`);
        env[k] = local[host];
      }
    }
    env.SLUICE_LISTEN = '127.0.0.1:0';
    const args = svc.command.map((a) => interpolate(a));
    const c = args.indexOf('-c');
    assert.ok(c > 0, `${name}: its command names no config file (-c)`);
    const file = hostFileFor(svc, args[c + 1]);
    assert.ok(file, `${name}: ${args[c + 1]} is not mounted from a file of this repository`);
    args[c + 1] = file;
    const proc = spawnLogged(args, env);
    instances.push({ name, proc, env, file, url: `http://127.0.0.1:${await listeningPort(proc, name)}` });
  }
});

after(async () => {
  for (const i of instances) await stop(i.proc);
  if (mock) await stop(mock.proc);
  if (redis) await stop(redis.proc);
});

test('compose.yaml has two Sluice instances on one config, with PostgreSQL, Redis and the mock', () => {
  assert.equal(sluiceNames.length, 2, `Sluice services: ${sluiceNames}`);
  for (const needed of ['postgres', 'redis', 'mock']) assert.ok(services[needed], `no ${needed} service`);
  const [a, b] = sluiceNames.map((n) => services[n]);
  assert.deepEqual(a.command, b.command);
  assert.deepEqual(a.volumes, b.volumes);
  assert.deepEqual(envOf(a), envOf(b));
  assert.match(envOf(a).SLUICE_STORE_URL, /^postgres:\/\/[^@]+@postgres:5432\//);
  assert.match(envOf(a).SLUICE_REDIS_URL, /^redis:\/\/redis:6379/);
  // The PostgreSQL credentials the instances use are the ones the postgres service creates.
  const pg = new URL(envOf(a).SLUICE_STORE_URL);
  const pgEnv = envOf(services.postgres);
  assert.equal(pg.username, pgEnv.POSTGRES_USER);
  assert.equal(pg.password, pgEnv.POSTGRES_PASSWORD);
  assert.equal(pg.pathname.slice(1), pgEnv.POSTGRES_DB);
  // Published on different host ports, both to the port the config listens on by default.
  const ports = sluiceNames.map((n) => services[n].ports?.[0]);
  assert.equal(new Set(ports).size, 2, `ports: ${ports}`);
  for (const p of ports) assert.match(String(p), /^\d+:8080$/);
  assert.match(readFileSync(instances[0].file, 'utf8'), /listen: "\$\{SLUICE_LISTEN:-0\.0\.0\.0:8080\}"/);
});

const admin = (inst, path, body) => fetch(`${inst.url}/admin/api${path}`, {
  method: body ? 'POST' : 'GET',
  headers: { authorization: `Bearer ${inst.env.SLUICE_MASTER_KEY}`, 'content-type': 'application/json' },
  body: body && JSON.stringify(body),
});
const hi = { model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] };

test('both instances serve, and a virtual key made through one works on the other', async () => {
  const [a, b] = instances;
  for (const i of instances) assert.equal((await fetch(`${i.url}/healthz`)).status, 200, i.name);
  const created = await admin(a, '/keys', { name: 'compose-shared' });
  assert.equal(created.status, 201, await created.clone().text());
  const { secret } = await created.json();
  // b learns of the key from PostgreSQL (within about a second).
  const status = await waitFor(async () => {
    const r = await chat(b, hi, { key: secret });
    await r.text();
    return r.status === 200 ? 200 : 0;
  }, 10000, 100);
  assert.equal(status, 200, `${b.name} never accepted the key made on ${a.name}`);
  const res = await chat(a, hi, { key: secret });
  assert.equal(res.status, 200, await res.text());
  assert.equal(res.headers.get('x-sluice-channel'), 'mock');
});

test('an RPM limit is counted once across both instances (through Redis)', async () => {
  const [a, b] = instances;
  const { secret } = await (await admin(a, '/keys', { name: 'compose-rpm', rpm: 4 })).json();
  // Wait until b knows the key, without spending any of its 4 requests: /v1/models is not counted.
  const known = await waitFor(async () => (await fetch(`${b.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } })).status === 200, 10000, 100);
  assert.ok(known, `${b.name} never accepted the key made on ${a.name}`);
  const statuses = [];
  for (let i = 0; i < 10; i++) {
    const r = await chat(i % 2 ? b : a, hi, { key: secret });
    await r.text();
    statuses.push(r.status);
  }
  assert.equal(statuses.filter((s) => s === 200).length, 4, JSON.stringify(statuses));
  assert.equal(statuses.filter((s) => s === 429).length, 6, JSON.stringify(statuses));
});
