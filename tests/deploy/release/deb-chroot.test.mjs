// The .deb on a clean Debian 12: a minbase root made by debootstrap (SLUICE_DEBIAN_BASE, a tar that
// tests/deploy/run.sh makes and keeps for a month) gets `apt-get install ./sluice_*.deb`, which
// must pull in every dependency from the package's Depends alone; then the installed gateway runs
// in that root (chroot) as the unit would run it: `sluice check` and `sluice serve` on
// /etc/sluice/sluice.yaml, with the master key the package's postinst wrote to
// /etc/sluice/sluice.env, from the working directory /var/lib/sluice.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync, copyFileSync, mkdirSync, existsSync, statSync, rmSync } from 'node:fs';
import { join, basename } from 'node:path';
import { tempDir, stop, waitFor } from '../../lib/harness.mjs';
import { freePort } from '../../lib/services.mjs';

const BASE = process.env.SLUICE_DEBIAN_BASE;
const DIST = join(process.env.SLUICE_BUILD ?? 'build', 'dist');
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });
const root = tempDir();
const mounted = [];

// The root is removed only once nothing is mounted under it any more (its /dev is the host's).
after(() => {
  for (const m of mounted.reverse()) { try { sh('umount', [m]); } catch { try { sh('umount', ['-l', m]); } catch {} } }
  const still = readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1]?.startsWith(root + '/'));
  if (!still) rmSync(root, { recursive: true, force: true });
});

test('apt-get installs the .deb with its dependencies on a clean bookworm, and the gateway serves from it', async () => {
  assert.ok(BASE && existsSync(BASE), `no debootstrap base tar (SLUICE_DEBIAN_BASE=${BASE}): run tests/deploy/run.sh`);
  const deb = readdirSync(DIST).find((f) => /^sluice_.*\.deb$/.test(f));
  assert.ok(deb, `no .deb in ${DIST}: run make deb`);
  sh('tar', ['-xf', BASE, '-C', root]);
  assert.ok(!existsSync(join(root, 'usr/lib/x86_64-linux-gnu/libyaml-cpp.so.0.7')), 'the base is not clean: it has libyaml-cpp');
  copyFileSync(join(DIST, deb), join(root, 'tmp', deb));
  copyFileSync('/etc/resolv.conf', join(root, 'etc/resolv.conf'));
  for (const [what, type] of [['proc', 'proc'], ['dev', null]]) {
    const dst = join(root, what);
    mkdirSync(dst, { recursive: true });
    sh('mount', type ? ['-t', type, type, dst] : ['--bind', `/${what}`, dst]);
    mounted.push(dst);
  }
  const inRoot = (cmd, opts) => sh('chroot', [root, '/bin/sh', '-c', cmd], { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive' }, ...opts });
  inRoot('apt-get update -q >/dev/null');
  const log = inRoot(`apt-get install -y -q --no-install-recommends /tmp/${deb} 2>&1`, { maxBuffer: 64 << 20 });
  assert.match(inRoot('dpkg-query -W -f=\'${Status}\' sluice'), /install ok installed/, log);
  // postinst: a master key of this installation's own, readable by root only.
  const envFile = join(root, 'etc/sluice/sluice.env');
  assert.equal(statSync(envFile).mode & 0o777, 0o600);
  const key = /^SLUICE_MASTER_KEY=(sk-[0-9a-f]{48})$/m.exec(readFileSync(envFile, 'utf8'))?.[1];
  assert.ok(key, 'postinst wrote no master key');
  assert.ok(existsSync(join(root, 'lib/systemd/system/sluice.service')));

  inRoot('set -a; . /etc/sluice/sluice.env; exec sluice check -c /etc/sluice/sluice.yaml');
  const port = await freePort();
  inRoot('mkdir -p /var/lib/sluice');
  const proc = spawn('chroot', [root, '/bin/sh', '-c',
    `cd /var/lib/sluice && set -a && . /etc/sluice/sluice.env && SLUICE_LISTEN=127.0.0.1:${port} exec /usr/bin/sluice serve -c /etc/sluice/sluice.yaml`],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  try {
    const up = await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.status === 200, 20000, 100);
    assert.ok(up, `the installed gateway did not answer /healthz:\n${out}`);
    const models = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(models.status, 200, await models.text());
    const wrong = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: 'Bearer sk-sluice-dev' } });
    assert.equal(wrong.status, 401, 'the demo key must not open an installed gateway');
  } finally {
    await stop(proc);
  }
  // The SQLite store landed in the state directory.
  assert.ok(existsSync(join(root, 'var/lib/sluice/sluice.db')), `no /var/lib/sluice/sluice.db: ${basename(root)}\n${out}`);
});
