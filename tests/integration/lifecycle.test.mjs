// Config validation, hot reload under traffic, and graceful shutdown.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, startMock, startGateway, gatewayYaml, chat, readSse, metrics, sleep, tempDir } from '../lib/harness.mjs';

const started = [];
after(async () => { for (const p of started.reverse()) await p.stop(); });
async function mockP(args) { const m = await startMock(args); started.push(m); return m; }
async function gwP(o) { const g = await startGateway(o); started.push(g); return g; }
const msg = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

test('sluice check accepts a valid file and rejects a bad one with FILE:LINE:COL', () => {
  const dir = tempDir();
  const good = join(dir, 'good.yaml');
  writeFileSync(good, gatewayYaml({ channels: [{ name: 'a', url: 'http://127.0.0.1:9' }] }));
  const ok = spawnSync(BIN, ['check', '-c', good], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'server:\n  listen: "127.0.0.1:0"\nrouting:\n  max_retries: lots\n');
  const r = spawnSync(BIN, ['check', '-c', bad], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /bad\.yaml:4:\d+: .*max_retries/);
  const unknown = join(dir, 'unknown.yaml');
  writeFileSync(unknown, 'server:\n  listen: "127.0.0.1:0"\n  lissten: x\n');
  const u = spawnSync(BIN, ['check', '-c', unknown], { encoding: 'utf8' });
  assert.notEqual(u.status, 0);
  assert.match(u.stderr, /unknown\.yaml:3:\d+: .*lissten/);
});

test('serve refuses to start on an invalid config and says where', () => {
  const dir = tempDir();
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'channels:\n  - name: x\n    type: nosuch\n    base_url: "http://127.0.0.1:9"\n    models: ["*"]\n');
  const r = spawnSync(BIN, ['serve', '-c', bad], { encoding: 'utf8', timeout: 10000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /bad\.yaml:3:\d+: .*type/);
});

test('hot reload under traffic: the new channel takes over and no request fails', async () => {
  const a = await mockP([]), b = await mockP([]);
  const cfgA = { channels: [{ name: 'alpha', url: a.url }] };
  const cfgB = { channels: [{ name: 'beta', url: b.url }] };
  const gw = await gwP(cfgA);
  let stop = false, failures = 0, total = 0;
  const seen = new Set();
  const loop = async () => {
    while (!stop) {
      const res = await chat(gw, { ...msg, stream: total % 2 === 0 });
      total++;
      const text = await res.text();
      if (res.status !== 200 || (text.includes('data:') && !text.includes('[DONE]'))) failures++;
      seen.add(res.headers.get('x-sluice-channel'));
    }
  };
  const loops = [loop(), loop(), loop(), loop()];
  await sleep(300);
  gw.writeConfig(cfgB);  // picked up by the file watcher
  let switched = false;
  for (let i = 0; i < 60 && !switched; i++) {
    await sleep(100);
    const r = await chat(gw, msg);
    switched = r.headers.get('x-sluice-channel') === 'beta';
    await r.text();
  }
  await sleep(300);
  stop = true;
  await Promise.all(loops);
  assert.ok(switched, 'the file change was applied');
  assert.equal(failures, 0, `${failures} of ${total} requests failed during reload`);
  assert.ok(seen.has('alpha') && seen.has('beta'));
  assert.match(await metrics(gw), /sluice_config_reloads_total\{result="ok"\} [1-9]/);
});

test('SIGHUP reloads; an invalid file is rejected and the old config keeps serving', async () => {
  const a = await mockP([]), b = await mockP([]);
  const gw = await gwP({ channels: [{ name: 'alpha', url: a.url }] });
  gw.writeConfig('channels:\n  - name: broken\n    type: openai\n    base_url: 12\n    models: nope\n');
  gw.proc.kill('SIGHUP');
  for (let i = 0; i < 50 && !/rejected/.test(gw.proc.output); i++) await sleep(50);
  assert.match(gw.proc.output, /reload .*rejected, keeping the running config: .*sluice\.yaml:\d+:\d+/);
  const r = await chat(gw, msg);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-sluice-channel'), 'alpha');
  await r.text();
  assert.match(await metrics(gw), /sluice_config_reloads_total\{result="failed"\} [1-9]/);
  gw.writeConfig({ channels: [{ name: 'beta', url: b.url }] });
  gw.proc.kill('SIGHUP');
  let ch;
  for (let i = 0; i < 50 && ch !== 'beta'; i++) {
    await sleep(50);
    const rr = await chat(gw, msg);
    ch = rr.headers.get('x-sluice-channel');
    await rr.text();
  }
  assert.equal(ch, 'beta');
});

test('SIGTERM: in-flight streams finish, then the process exits 0', async () => {
  const m = await mockP(['--chunks', '10', '--chunk-interval-ms', '100']);
  const gw = await gwP({ channels: [{ name: 'm', url: m.url }] });
  const inflight = Promise.all([0, 1, 2].map(async () => {
    const res = await chat(gw, { ...msg, stream: true });
    return (await readSse(res)).events.at(-1);
  }));
  await sleep(250);
  const exited = gw.stop('SIGTERM');
  const ends = await inflight;
  assert.deepEqual(ends, ['[DONE]', '[DONE]', '[DONE]']);
  assert.equal(await exited, 0);
  // accepted requests were logged before exit
  assert.equal(gw.accessLines().filter((l) => l.stream).length, 3);
});
