// The Dockerfile: built with `podman build --isolation chroot` on a bookworm base made by
// debootstrap (SLUICE_DEBIAN_BASE, imported with `podman import`; no registry is needed), taking
// the .deb that `make dist` made (DEB_FROM=context) rather than compiling everything again
// (`make test-image-source` sets SLUICE_IMAGE_DEB_FROM=source: the image's default, which
// compiles the gateway and its console in the build stage, checked the same way). Then
// the image's metadata (non-root user, port, health check, volume) and size are checked, its
// filesystem is exported, and the gateway is run from it in a chroot, as the image's user with the
// image's entrypoint and environment, against the README's curl example; the image's HEALTHCHECK
// command passes in the same root.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync, chmodSync } from 'node:fs';
import { resolve, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir, stop, waitFor, readSse } from '../../lib/harness.mjs';
import { freePort } from '../../lib/services.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const BASE_TAR = process.env.SLUICE_DEBIAN_BASE;
const DEB_FROM = process.env.SLUICE_IMAGE_DEB_FROM ?? 'context';
const BASE = 'localhost/sluice-test-base:bookworm';
const IMAGE = 'localhost/sluice:test-deploy';
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20, ...opts });
const PATHS = '/usr/sbin:/usr/bin:/sbin:/bin';
let container;
let danglingBefore;
// The build's intermediate stage images (untagged): removed afterwards, others' left alone.
const dangling = () => sh('podman', ['images', '-q', '--no-trunc', '--filter', 'dangling=true']).split('\n').filter(Boolean);
const fsRoot = tempDir();
chmodSync(fsRoot, 0o755); // the image's user walks into it

after(() => {
  if (container) { try { sh('podman', ['rm', '-f', container]); } catch {} }
  for (const img of [IMAGE, BASE]) { try { sh('podman', ['rmi', '-f', img]); } catch {} }
  if (danglingBefore) for (const id of dangling()) if (!danglingBefore.has(id)) { try { sh('podman', ['rmi', id]); } catch {} }
  rmSync(fsRoot, { recursive: true, force: true });
});

test(`the image builds from a debootstrap base (DEB_FROM=${DEB_FROM}), runs as non-root, and serves the README example from its exported filesystem`, async () => {
  assert.ok(BASE_TAR && existsSync(BASE_TAR), `no debootstrap base tar (SLUICE_DEBIAN_BASE=${BASE_TAR}): run tests/deploy/run.sh`);
  sh('podman', ['import', BASE_TAR, BASE]);
  danglingBefore = new Set(dangling());
  // From source, the npm steps reach the registry: they get this machine's CA bundle as a build
  // secret (the way a build behind a TLS-intercepting proxy works; see the Dockerfile).
  const secret = DEB_FROM === 'source' ? ['--secret', 'id=ca,src=/etc/ssl/certs/ca-certificates.crt'] : [];
  const log = sh('podman', ['build', '--isolation', 'chroot', '--format', 'docker', '--build-arg', `BASE=${BASE}`,
    '--build-arg', `DEB_FROM=${DEB_FROM}`, ...secret, '-t', IMAGE, ROOT]);
  assert.match(log, /Successfully tagged/);

  const [info] = JSON.parse(sh('podman', ['image', 'inspect', IMAGE]));
  const [base] = JSON.parse(sh('podman', ['image', 'inspect', BASE]));
  const cfg = info.Config;
  const healthcheck = info.Healthcheck ?? cfg.Healthcheck;
  assert.equal(cfg.User, '10001:10001');
  assert.ok(Object.keys(cfg.ExposedPorts).includes('8080/tcp'));
  assert.ok(Object.keys(cfg.Volumes).includes('/var/lib/sluice'));
  assert.match(healthcheck.Test.join(' '), /\/healthz/);
  // At most 150 MB on debian:bookworm-slim (75 MB): what the image adds to its base stays under 75 MB.
  const added = (info.Size - base.Size) / 1e6;
  assert.ok(added < 75, `the image adds ${added.toFixed(1)} MB to its base`);

  container = sh('podman', ['create', IMAGE]).trim();
  sh('bash', ['-c', `podman export ${container} | tar -x -C ${fsRoot}`]);
  assert.ok(existsSync(join(fsRoot, 'usr/bin/sluice')));
  assert.ok(!existsSync(join(fsRoot, 'etc/sluice/sluice.env')), 'a master key is baked into the image');

  // The image's entrypoint and environment, as its user, from its working directory; only the
  // listen address moves to a free loopback port.
  const port = await freePort();
  const env = Object.fromEntries(cfg.Env.map((e) => e.split(/=(.*)/s).slice(0, 2)));
  env.SLUICE_LISTEN = `127.0.0.1:${port}`;
  const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const proc = spawn('chroot', ['--userspec', cfg.User, fsRoot, '/usr/bin/env', '-i', ...envArgs, '/bin/sh', '-c',
    `cd ${cfg.WorkingDir} && exec ${cfg.Entrypoint.join(' ')}`], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: PATHS } });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  try {
    const up = await waitFor(() => /sluice listening on/.test(out), 20000, 50);
    assert.ok(up, `the gateway did not start in the image's filesystem:\n${out}`);
    // The README's curl example, as pasted (the demo key of the embedded default).
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: 'Bearer sk-sluice-dev', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mock-1', stream: true, messages: [{ role: 'user', content: 'Hello' }] }),
    });
    assert.equal(res.status, 200);
    const { events } = await readSse(res);
    assert.equal(events.at(-1), '[DONE]');
    assert.ok(events.some((e) => e.choices?.[0]?.delta?.content), 'no content in the stream');
    // The HEALTHCHECK command, in the same root with the same environment.
    const hc = healthcheck.Test;
    assert.equal(hc[0], 'CMD');
    sh('chroot', ['--userspec', cfg.User, fsRoot, '/usr/bin/env', '-i', ...envArgs, ...hc.slice(1)], { env: { PATH: PATHS } });
  } finally {
    await stop(proc);
  }
});
