// deploy/kubernetes: the base and the shared-state overlay rendered and checked. The render here
// is the part of kustomize these files use (resources, directories of resources, configMap and
// secret generators with behavior: merge), so the test needs no cluster and no kubectl; where a
// `kubectl` is on PATH, `kubectl kustomize` renders the same directories too and must give the
// same objects (its generated names carry a content hash). Then: the Deployment's probes hit
// /healthz on the port the config listens on, every container has requests and limits, the
// Service, HPA and PDB select the pods, the config passes `sluice check` with the Secret's values,
// and in the overlay the store and Redis URLs name the PostgreSQL and Redis it runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { resolve, dirname, basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { BIN, tempDir } from '../lib/harness.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const K8S = join(ROOT, 'deploy/kubernetes');

function render(dir) {
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'));
  const known = new Set(['apiVersion', 'kind', 'resources', 'configMapGenerator', 'secretGenerator']);
  for (const key of Object.keys(k)) assert.ok(known.has(key), `${dir}: kustomization field ${key} is not rendered by this test`);
  const out = [];
  for (const r of k.resources ?? []) {
    const p = resolve(dir, r);
    if (statSync(p).isDirectory()) out.push(...render(p));
    else for (const d of parseAllDocuments(readFileSync(p, 'utf8'))) { if (d.contents) out.push(d.toJSON()); }
  }
  const literals = (g) => Object.fromEntries((g.literals ?? []).map((l) => l.split(/=(.*)/s).slice(0, 2)));
  for (const g of k.configMapGenerator ?? []) {
    const data = { ...literals(g) };
    for (const f of g.files ?? []) data[basename(f)] = readFileSync(resolve(dir, f), 'utf8');
    generate(out, 'ConfigMap', g, data);
  }
  for (const g of k.secretGenerator ?? []) {
    const data = Object.fromEntries(Object.entries(literals(g)).map(([n, v]) => [n, Buffer.from(v).toString('base64')]));
    generate(out, 'Secret', g, data);
  }
  return out;
}
function generate(out, kind, g, data) {
  const existing = out.find((o) => o.kind === kind && o.metadata.name === g.name);
  if ((g.behavior ?? 'create') === 'create') {
    assert.ok(!existing, `${kind} ${g.name} generated twice`);
    out.push({ apiVersion: 'v1', kind, metadata: { name: g.name }, ...(kind === 'Secret' ? { type: 'Opaque' } : {}), data });
  } else {
    assert.ok(existing, `${kind} ${g.name}: behavior ${g.behavior} with nothing to merge into`);
    Object.assign(existing.data, data);
  }
}

// kubectl's generated names end in -<10 characters of hash>; compare without it.
const unhash = (o, generated) => (generated.has(o.kind) ? o.metadata.name.replace(/-[a-z0-9]{10}$/, '') : o.metadata.name);
const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

function renderChecked(dir) {
  const objs = render(dir);
  if (kubectl) {
    const text = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    const theirs = parseAllDocuments(text).map((d) => d.toJSON());
    const gen = new Set(['ConfigMap', 'Secret']);
    const ids = (list) => list.map((o) => `${o.kind}/${unhash(o, gen)}`).sort();
    assert.deepEqual(ids(theirs), ids(objs), 'kubectl kustomize renders other objects than this test');
    for (const o of theirs) {
      const mine = objs.find((m) => m.kind === o.kind && m.metadata.name === unhash(o, gen));
      if (gen.has(o.kind)) assert.deepEqual(o.data, mine.data, `${o.kind} ${o.metadata.name}`);
    }
    // The Deployment's references follow the hashed names.
    const dep = theirs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'sluice');
    const names = new Set(theirs.map((o) => `${o.kind}/${o.metadata.name}`));
    const spec = dep.spec.template.spec;
    for (const v of spec.volumes) if (v.configMap) assert.ok(names.has(`ConfigMap/${v.configMap.name}`), v.configMap.name);
    for (const e of spec.containers[0].envFrom) assert.ok(names.has(`Secret/${e.secretRef.name}`), e.secretRef.name);
  }
  return objs;
}

const one = (objs, kind, name) => {
  const found = objs.filter((o) => o.kind === kind && (!name || o.metadata.name === name));
  assert.equal(found.length, 1, `expected one ${kind} ${name ?? ''}, found ${found.length}`);
  return found[0];
};
const selects = (selector, labels) => Object.entries(selector).every(([k, v]) => labels[k] === v);
const secretEnv = (secret) => Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

function checkSluice(objs) {
  const dep = one(objs, 'Deployment', 'sluice');
  const pod = dep.spec.template;
  assert.ok(selects(dep.spec.selector.matchLabels, pod.metadata.labels), 'the Deployment selects its own pods');
  const [c] = pod.spec.containers;
  const port = c.ports.find((p) => p.name === 'http');
  for (const probe of ['readinessProbe', 'livenessProbe']) {
    assert.equal(c[probe]?.httpGet?.path, '/healthz', probe);
    assert.ok([port.name, port.containerPort].includes(c[probe].httpGet.port), `${probe} port`);
  }
  for (const what of ['requests', 'limits']) {
    assert.ok(c.resources?.[what]?.cpu && c.resources?.[what]?.memory, `resources.${what} sets cpu and memory`);
  }
  assert.ok(pod.spec.securityContext.runAsNonRoot, 'runs as non-root');
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);

  // The config: a ConfigMap mounted where the args say, listening on the container port.
  const cfgArg = c.args[c.args.indexOf('-c') + 1];
  const mount = c.volumeMounts.find((m) => cfgArg.startsWith(m.mountPath + '/'));
  assert.ok(mount, `nothing is mounted at ${cfgArg}`);
  const vol = pod.spec.volumes.find((v) => v.name === mount.name);
  const cm = one(objs, 'ConfigMap', vol.configMap.name);
  const text = cm.data[basename(cfgArg)];
  assert.ok(text, `ConfigMap ${cm.metadata.name} has no ${basename(cfgArg)}`);
  const cfg = parse(text);
  assert.equal(Number(cfg.server.listen.split(':').pop()), port.containerPort, 'the config listens on the container port');
  const secret = one(objs, 'Secret', c.envFrom[0].secretRef.name);

  // The Service, the HPA and the PDB.
  const svc = one(objs, 'Service', 'sluice');
  assert.ok(selects(svc.spec.selector, pod.metadata.labels), 'the Service selects the pods');
  assert.ok([port.name, port.containerPort].includes(svc.spec.ports[0].targetPort));
  const hpa = one(objs, 'HorizontalPodAutoscaler');
  assert.deepEqual([hpa.spec.scaleTargetRef.kind, hpa.spec.scaleTargetRef.name], ['Deployment', 'sluice']);
  assert.ok(hpa.spec.minReplicas >= 2 && hpa.spec.maxReplicas > hpa.spec.minReplicas);
  const pdb = one(objs, 'PodDisruptionBudget');
  assert.ok(selects(pdb.spec.selector.matchLabels, pod.metadata.labels), 'the PDB selects the pods');
  assert.ok(pdb.spec.minAvailable < hpa.spec.minReplicas, 'the PDB lets a node drain at the HPA minimum');

  // The config is valid with the Secret's values in the environment.
  const file = join(tempDir(), 'sluice.yaml');
  writeFileSync(file, text);
  const check = spawnSync(BIN, ['check', '-c', file], { encoding: 'utf8', env: { ...process.env, ...secretEnv(secret) } });
  assert.equal(check.status, 0, `sluice check: ${check.stdout}${check.stderr}`);
  return { dep, secret: secretEnv(secret), cfg };
}

test('the base renders a Deployment with probes and resources, a Service, ConfigMap, Secret, HPA and PDB', () => {
  assert.ok(existsSync(BIN), `no ${BIN}`);
  const objs = renderChecked(join(K8S, 'base'));
  assert.deepEqual([...new Set(objs.map((o) => o.kind))].sort(),
    ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Secret', 'Service']);
  const { secret } = checkSluice(objs);
  assert.ok(!secret.SLUICE_STORE_URL, 'the base keeps each pod on its own SQLite');
});

test('the shared-state overlay adds PostgreSQL and Redis and points every pod at them', () => {
  const objs = renderChecked(join(K8S, 'overlays/shared-state'));
  const { secret, cfg } = checkSluice(objs);
  assert.match(cfg.store.url, /\$\{SLUICE_STORE_URL/);
  assert.match(cfg.redis.url, /\$\{SLUICE_REDIS_URL/);

  const store = new URL(secret.SLUICE_STORE_URL);
  assert.equal(store.protocol, 'postgres:');
  const pgSvc = one(objs, 'Service', store.hostname);
  assert.equal(pgSvc.spec.ports[0].port, Number(store.port));
  const pg = one(objs, 'StatefulSet', 'postgres');
  assert.ok(selects(pgSvc.spec.selector, pg.spec.template.metadata.labels), 'the postgres Service selects PostgreSQL');
  const pgEnv = Object.fromEntries(pg.spec.template.spec.containers[0].env.map((e) => [e.name, e]));
  assert.equal(store.username, pgEnv.POSTGRES_USER.value);
  assert.equal(store.pathname.slice(1), pgEnv.POSTGRES_DB.value);
  const ref = pgEnv.POSTGRES_PASSWORD.valueFrom.secretKeyRef;
  assert.equal(ref.name, 'sluice-secrets');
  assert.equal(decodeURIComponent(store.password), secret[ref.key], 'the store URL carries the password PostgreSQL is given');

  const redis = new URL(secret.SLUICE_REDIS_URL);
  const redisSvc = one(objs, 'Service', redis.hostname);
  assert.equal(redisSvc.spec.ports[0].port, Number(redis.port));
  const redisDep = one(objs, 'Deployment', 'redis');
  assert.ok(selects(redisSvc.spec.selector, redisDep.spec.template.metadata.labels), 'the redis Service selects Redis');
  for (const o of [pg, redisDep]) {
    const r = o.spec.template.spec.containers[0].resources;
    assert.ok(r?.requests && r?.limits, `${o.metadata.name}: requests and limits`);
  }
});
