// The release artifacts of `make dist` (BUILD/dist/, with the .deb of `make deb`): the package
// holds the binary, the default config (a conffile) and the unit, and depends on the package of
// every library the binary links; the SBOM lists exactly the libraries ldd resolves, each with
// the owning package's installed version; SHA256SUMS verifies; the extracted package serves with
// its own default config.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, stop, waitFor } from '../../lib/harness.mjs';
import { freePort } from '../../lib/services.mjs';

const BUILD = process.env.SLUICE_BUILD;
const DIST = BUILD && join(BUILD, 'dist');
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', ...opts });

function artifacts() {
  assert.ok(DIST && existsSync(DIST), `no ${DIST}: run make dist (make test-deploy does)`);
  const files = readdirSync(DIST);
  const find = (re) => {
    const f = files.find((n) => re.test(n));
    assert.ok(f, `no ${re} in ${DIST}: ${files}`);
    return join(DIST, f);
  };
  return { deb: find(/^sluice_.*\.deb$/), tar: find(/^sluice-.*\.tar\.gz$/), sbom: find(/\.cdx\.json$/), sums: find(/^SHA256SUMS$/) };
}

// soname -> the resolved path, for each library ldd finds for `bin`.
function linked(bin) {
  const out = {};
  for (const line of sh('ldd', [bin]).split('\n')) {
    let m = /^\s*(\S+) => (\/\S+)/.exec(line);
    if (m) { out[m[1]] = m[2]; continue; }
    m = /^\s*(\/\S+) \(/.exec(line);
    if (m) out[m[1].split('/').pop()] = m[1];
  }
  return out;
}

// What the binary opens itself when a feature needs it (libpq, for a PostgreSQL store): never in
// its NEEDED, but in the package's Depends and in the SBOM with everything it pulls in.
const RUNTIME = ['libpq.so.5'];
function runtimePath(soname) {
  const line = sh('ldconfig', ['-p']).split('\n').find((l) => l.trim().startsWith(`${soname} `));
  assert.ok(line, `${soname} is not installed`);
  return line.split('=>').pop().trim();
}
// linked(bin), plus each runtime library and what it links.
function shipped(bin) {
  const out = linked(bin);
  for (const soname of RUNTIME) {
    const p = runtimePath(soname);
    out[soname] ??= p;
    for (const [k, v] of Object.entries(linked(p))) out[k] ??= v;
  }
  return out;
}

test('SHA256SUMS verifies every artifact', () => {
  const { sums } = artifacts();
  const listed = readFileSync(sums, 'utf8').trim().split('\n').map((l) => l.split(/\s+\*?/)[1]);
  assert.equal(listed.length, 3, listed.join(' '));
  sh('sha256sum', ['-c', 'SHA256SUMS'], { cwd: DIST });
});

test('the .deb holds the binary, the default config as a conffile and the unit, and depends on its libraries', () => {
  const { deb, sbom } = artifacts();
  const files = sh('dpkg-deb', ['-c', deb]).split('\n').map((l) => l.split(/\s+/).pop());
  for (const f of ['./usr/bin/sluice', './etc/sluice/sluice.yaml', './lib/systemd/system/sluice.service']) {
    assert.ok(files.includes(f), `${f} missing from the package: ${files.join(' ')}`);
  }
  const dir = tempDir();
  sh('dpkg-deb', ['-e', deb, join(dir, 'DEBIAN')]);
  assert.equal(readFileSync(join(dir, 'DEBIAN/conffiles'), 'utf8').trim(), '/etc/sluice/sluice.yaml');
  for (const s of ['postinst', 'prerm', 'postrm']) assert.ok(existsSync(join(dir, 'DEBIAN', s)), s);
  // Every library the binary itself links (DT_NEEDED) is a dependency: its package, or a name
  // that package Provides (libspdlog1.10 provides libspdlog1.10-fmt9, which dpkg-shlibdeps names).
  // What those libraries link in turn comes with their own packages' Depends.
  const depends = sh('dpkg-deb', ['-f', deb, 'Depends']).split(',').map((d) => d.trim().split(/[\s(]/)[0]);
  const bom = JSON.parse(readFileSync(sbom, 'utf8'));
  const prop = (c, name) => c.properties.find((p) => p.name === name).value;
  const direct = bom.components.filter((c) => prop(c, 'sluice:linkage') === 'direct');
  assert.ok(direct.length >= 10, `direct: ${direct.map((c) => c.name)}`);
  const runtime = bom.components.filter((c) => prop(c, 'sluice:linkage') === 'runtime');
  assert.deepEqual(runtime.map((c) => c.name), RUNTIME);
  for (const c of [...direct, ...runtime]) {
    const pkg = prop(c, 'sluice:debian:package');
    const provides = sh('dpkg-query', ['-W', '-f=${Provides}', pkg]).split(',').map((x) => x.trim().split(/[\s(]/)[0]).filter(Boolean);
    assert.ok([pkg, ...provides].some((n) => depends.includes(n)), `Depends lacks ${pkg} (for ${c.name}): ${depends.join(', ')}`);
  }
  assert.ok(depends.includes('ca-certificates'));
});

test('the SBOM lists every linked shared library with its Debian package and installed version', () => {
  const { sbom, tar } = artifacts();
  const bom = JSON.parse(readFileSync(sbom, 'utf8'));
  assert.equal(bom.bomFormat, 'CycloneDX');
  assert.equal(bom.specVersion, '1.5');
  assert.match(bom.serialNumber, /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  // The binary the SBOM describes is the one in the tarball.
  const dir = tempDir();
  sh('tar', ['-xzf', tar, '-C', dir]);
  const [top] = readdirSync(dir);
  const bin = join(dir, top, 'sluice');
  const sha = sh('sha256sum', [bin]).split(' ')[0];
  assert.equal(bom.metadata.component.hashes[0].content, sha);
  for (const f of ['sluice.yaml', 'sluice.service']) assert.ok(existsSync(join(dir, top, f)), f);

  const libs = shipped(bin);
  assert.ok(Object.keys(libs).length >= 10, `ldd found only ${Object.keys(libs)}`);
  assert.deepEqual(bom.components.map((c) => c.name).sort(), Object.keys(libs).sort());
  for (const c of bom.components) {
    const pkg = c.properties.find((p) => p.name === 'sluice:debian:package').value;
    const version = sh('dpkg-query', ['-W', '-f=${Version}', pkg]).split('\n')[0];
    assert.equal(c.version, version, `${c.name}: ${pkg}`);
    assert.ok(c.purl.startsWith(`pkg:deb/debian/${pkg}@${version}?arch=`), c.purl);
    // In the dependency graph: the binary's own libraries from the root, every one with its edges.
    const linkage = c.properties.find((p) => p.name === 'sluice:linkage').value;
    assert.equal(bom.dependencies[0].dependsOn.includes(c['bom-ref']), linkage !== 'transitive', c.name);
    assert.ok(bom.dependencies.some((d) => d.ref === c['bom-ref']), `${c.name} has no dependency entry`);
  }
  // Direct means the binary asks for it (readelf NEEDED); everything else ldd resolved is pulled in.
  const neededNames = sh('readelf', ['-d', bin]).split('\n').map((l) => /\(NEEDED\).*\[(.*)\]/.exec(l)?.[1]).filter(Boolean);
  assert.deepEqual(bom.dependencies[0].dependsOn.map((r) => r.replace(/^lib:/, '')).sort(), [...neededNames, ...RUNTIME].sort());
  assert.ok(!neededNames.includes('libpq.so.5'), 'libpq is opened when a PostgreSQL store is, not linked');
  for (const want of ['libssl.so.3', 'libpq.so.5', 'libhiredis.so.0.14', 'libyaml-cpp.so.0.7', 'libre2.so.9', 'libsqlite3.so.0']) {
    assert.ok(libs[want], `${want} not shipped?`);
  }
});

test('the extracted package serves with its own default config', async () => {
  const { deb } = artifacts();
  const root = tempDir();
  sh('dpkg-deb', ['-x', deb, root]);
  const port = await freePort();
  const env = { ...process.env, SLUICE_MASTER_KEY: 'sk-deb-test-key', SLUICE_LISTEN: `127.0.0.1:${port}` };
  const check = sh(join(root, 'usr/bin/sluice'), ['check', '-c', join(root, 'etc/sluice/sluice.yaml')], { env });
  assert.match(check, /ok|valid/i);
  const proc = spawn(join(root, 'usr/bin/sluice'), ['serve', '-c', join(root, 'etc/sluice/sluice.yaml')],
    { env, cwd: tempDir(), stdio: 'ignore' });
  try {
    const ok = await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.status === 200, 15000, 100);
    assert.ok(ok, 'the packaged binary did not answer /healthz');
    const models = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: 'Bearer sk-deb-test-key' } });
    assert.equal(models.status, 200);
  } finally {
    await stop(proc);
  }
});
