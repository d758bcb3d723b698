// deploy/systemd/sluice.service: `systemd-analyze verify` accepts it (with /usr/bin/sluice
// pointed at the binary under test, since verify checks that every command exists), it has the
// hardening the package promises, its readiness check (ExecStartPost) returns once /healthz
// answers and not before, and its ExecReload makes a running gateway reload its config.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { BIN, MASTER, tempDir, startMock, startGateway, gatewayYaml, stop, waitFor } from '../lib/harness.mjs';
import { freePort } from '../lib/services.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const UNIT = join(ROOT, 'deploy/systemd/sluice.service');
const text = readFileSync(UNIT, 'utf8');

// The [Service] settings: name -> every value (a setting may repeat), continuation lines joined.
function settings(unitText) {
  const out = {};
  let section = '';
  const lines = unitText.replace(/\\\n/g, ' ').split('\n');
  for (const line of lines) {
    const l = line.trim();
    if (!l || l.startsWith('#') || l.startsWith(';')) continue;
    if (l.startsWith('[')) { section = l; continue; }
    const m = /^([A-Za-z]+)=(.*)$/.exec(l);
    assert.ok(m, `not a setting: ${l}`);
    (out[`${section}${m[1]}`] ??= []).push(m[2]);
  }
  return out;
}
const s = settings(text);
const svc = (name) => s[`[Service]${name}`]?.at(-1);
// What systemd hands the command after its own unescaping: $$ -> $, %% -> %, \\ -> \.
const unescape = (cmd) => cmd.replace(/\$\$/g, '$').replace(/%%/g, '%').replace(/\\\\/g, '\\');

// verify checks that every command exists: /usr/bin/sluice becomes the binary under test.
function writeUnit() {
  const file = join(tempDir(), 'sluice.service');
  writeFileSync(file, text.replaceAll('/usr/bin/sluice', BIN));
  return file;
}

test('systemd-analyze verify accepts the unit', () => {
  const r = spawnSync('systemd-analyze', ['verify', '--man=no', writeUnit()], { encoding: 'utf8' });
  assert.equal(r.error, undefined, 'systemd-analyze not found (apt-get install systemd)');
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal((r.stdout + r.stderr).trim(), '', 'verify printed warnings');
});

test('the unit runs unprivileged, hardened, with state in /var/lib/sluice and reload on SIGHUP', () => {
  assert.ok(['simple', 'notify'].includes(svc('Type')));
  assert.equal(svc('DynamicUser'), 'yes');
  assert.equal(svc('StateDirectory'), 'sluice');
  assert.equal(svc('WorkingDirectory'), '/var/lib/sluice');
  assert.equal(svc('ProtectSystem'), 'strict');
  assert.equal(svc('NoNewPrivileges'), 'yes');
  assert.equal(svc('CapabilityBoundingSet'), '', 'no capabilities at all');
  assert.equal(svc('ExecReload'), '/bin/kill -HUP $MAINPID');
  assert.equal(svc('ExecStart'), '/usr/bin/sluice serve -c /etc/sluice/sluice.yaml');
  assert.equal(s['[Install]WantedBy']?.[0], 'multi-user.target');
  const exposure = spawnSync('systemd-analyze', ['security', '--offline=yes', '--threshold=20', writeUnit()], { encoding: 'utf8' });
  assert.equal(exposure.status, 0, `systemd-analyze security rates the unit's exposure above 2.0:\n${exposure.stdout}${exposure.stderr}`);
});
// Runs the ExecStartPost readiness check as systemd would (bash, the unit's environment).
function readiness(addr) {
  const cmd = unescape(svc('ExecStartPost'));
  const m = /^\/bin\/bash -c '(.*)'$/s.exec(cmd);
  assert.ok(m, `ExecStartPost is not a bash -c command: ${cmd}`);
  return spawn('/bin/bash', ['-c', m[1]], { env: { ...process.env, SLUICE_HEALTH_ADDR: addr }, stdio: 'ignore' });
}

test('the readiness check waits for /healthz: it ends once the gateway serves, not before', async () => {
  assert.equal(svc('Environment'), 'SLUICE_HEALTH_ADDR=127.0.0.1:8080', 'the default matches the default listen address');
  const port = await freePort();
  const check = readiness(`127.0.0.1:${port}`);
  // Nothing listens yet: the check keeps polling.
  const early = await waitFor(() => check.exitCode !== null, 1000, 50);
  assert.ok(!early, `the check ended (${check.exitCode}) with nothing listening`);
  const gw = spawn(BIN, ['serve'], { env: { ...process.env, SLUICE_LISTEN: `127.0.0.1:${port}`, SLUICE_MASTER_KEY: MASTER }, cwd: tempDir(), stdio: 'ignore' });
  try {
    const ended = await waitFor(() => check.exitCode !== null, 15000, 50);
    assert.ok(ended, 'the check never saw /healthz answer');
    assert.equal(check.exitCode, 0);
  } finally {
    check.kill('SIGKILL');
    await stop(gw);
  }
});

test('ExecReload (SIGHUP to the main process) makes the gateway reload its config', async () => {
  const mock = await startMock();
  const gw = await startGateway(gatewayYaml({ channels: [{ name: 'first', url: mock.url }] }));
  try {
    gw.writeConfig(gatewayYaml({ channels: [{ name: 'first', url: mock.url }, { name: 'second', url: mock.url }] }));
    const cmd = unescape(svc('ExecReload')).replace('$MAINPID', String(gw.proc.pid)).split(' ');
    const kill = spawn(cmd[0], cmd.slice(1), { stdio: 'ignore' });
    const [code] = await once(kill, 'exit');
    assert.equal(code, 0);
    const reloaded = await waitFor(async () => {
      const r = await fetch(`${gw.url}/admin/api/channels`, { headers: { authorization: `Bearer ${MASTER}` } });
      return (await r.text()).includes('"second"');
    }, 10000, 100);
    assert.ok(reloaded, `the gateway did not pick up the new channel after SIGHUP:\n${gw.proc.output}`);
  } finally {
    await gw.stop();
    await mock.stop();
  }
});
