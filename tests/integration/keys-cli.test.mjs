// `sluice keys`: virtual keys managed on the store directly, no gateway needed; a running
// gateway on the same store follows within about a second. The CLI refuses what the admin API
// refuses, in the same words.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import os from 'node:os';
import { BIN, MASTER, startMock, startGateway, gatewayYaml, tempDir, chat, sleep } from '../lib/harness.mjs';

let mock, gw, dir, db;

function keys(args, { cwd } = {}) {
  const r = spawnSync(BIN, ['keys', ...args], { encoding: 'utf8', cwd, timeout: 20000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
const withConfig = (args) => keys([...args, '-c', gw.file]);
const json = (r) => { assert.equal(r.code, 0, r.err); return JSON.parse(r.out); };
const sql = (q) => {
  const r = spawnSync('sqlite3', ['-json', db, q], { encoding: 'utf8' });
  return r.stdout.trim() ? JSON.parse(r.stdout) : [];
};

async function chatStatusBecomes(secret, want, ms = 3000) {
  const until = Date.now() + ms;
  for (;;) {
    const r = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { key: secret });
    await r.text();
    if (r.status === want || Date.now() > until) return r.status;
    await sleep(100);
  }
}

before(async () => {
  mock = await startMock([]);
  dir = tempDir();
  db = join(dir, 'sluice.db');
  gw = await startGateway(`store:\n  url: "sqlite://${db}"\n` + gatewayYaml({ channels: [{ name: 'a', url: mock.url }] }));
});
after(async () => { await gw?.stop(); await mock?.stop(); });

test('create prints the secret once; list, show, update, revoke, delete; the gateway follows', async () => {
  const human = withConfig(['create', '--name', 'cli bot', '--models', 'gpt-4o*, claude-*', '--rpm', '60',
    '--budget-daily', '2.5', '--expires-in', '30d', '--metadata', '{"team":"search"}']);
  assert.equal(human.code, 0, human.err);
  const secret = human.out.match(/sk-slc-[0-9A-Za-z]{40}/)?.[0];
  assert.ok(secret, human.out);
  assert.match(human.out, /will not be shown again/);
  assert.match(human.out, /models:\s+gpt-4o\*, claude-\*/);
  const [row] = sql("select id, key_hash from virtual_keys where name = 'cli bot'");
  assert.equal(row.key_hash, createHash('sha256').update(secret).digest('hex'), 'only the hash is stored');

  const made = withConfig(['create', '--name', 'machine', '--json']);
  const created = json(made);
  assert.match(created.secret, /^sk-slc-[0-9A-Za-z]{40}$/);
  assert.match(made.err, /will not be shown again/, 'the warning goes to stderr so stdout stays JSON');
  const id = created.key.id;
  assert.equal(created.key.status, 'active');

  const list = json(withConfig(['list', '--json']));
  const names = list.map((k) => k.name);
  assert.ok(names.includes('cli bot') && names.includes('machine'));
  const bot = list.find((k) => k.name === 'cli bot');
  assert.deepEqual(bot.allowed_models, ['gpt-4o*', 'claude-*']);
  assert.equal(bot.rpm, 60);
  assert.equal(bot.budget_daily_usd, 2.5);
  assert.deepEqual(bot.metadata, { team: 'search' });
  assert.ok(Math.abs(bot.expires_at_ms - (Date.now() + 30 * 86400000)) < 60000);
  assert.ok(!JSON.stringify(list).includes(secret), 'list never shows a secret');
  assert.match(withConfig(['list']).out, /ID\s+NAME\s+PREFIX\s+STATUS/);

  assert.equal(await chatStatusBecomes(created.secret, 200), 200, 'the gateway accepts a key made by the CLI');

  const updated = json(withConfig(['update', String(id), '--name', 'machine v2', '--rpm', '10', '--json']));
  assert.equal(updated.name, 'machine v2');
  assert.equal(updated.rpm, 10);
  assert.equal(json(withConfig(['update', String(id), '--rpm', 'none', '--json'])).rpm, null);
  assert.equal(json(withConfig(['show', String(id), '--json'])).name, 'machine v2');
  assert.match(withConfig(['show', String(id)]).out, /name:\s+machine v2/);

  const revoked = json(withConfig(['revoke', String(id), '--json']));
  assert.equal(revoked.status, 'revoked');
  assert.equal(json(withConfig(['revoke', String(id), '--json'])).revoked_at_ms, revoked.revoked_at_ms);
  assert.equal(await chatStatusBecomes(created.secret, 401), 401, 'the gateway refuses a key revoked by the CLI');

  const deleted = withConfig(['delete', String(id)]);
  assert.equal(deleted.code, 0, deleted.err);
  assert.match(deleted.out, /Deleted virtual key/);
  const gone = withConfig(['show', String(id)]);
  assert.equal(gone.code, 1);
  assert.match(gone.err, new RegExp(`no virtual key with id ${id}`));

  // The admin API sees what the CLI wrote.
  const res = await fetch(`${gw.url}/admin/api/keys`, { headers: { authorization: `Bearer ${MASTER}` } });
  assert.ok((await res.json()).data.some((k) => k.name === 'cli bot'));

  // Each write is an audit row, as through the API: who (the account that ran it), what, before
  // and after, never the secret. show and list write nothing.
  const user = os.userInfo().username;
  const audit = await fetch(`${gw.url}/admin/api/audit?limit=100&target=${encodeURIComponent(`/keys/${id}`)}`,
    { headers: { authorization: `Bearer ${MASTER}` } });
  assert.equal(audit.status, 200);
  const rows = (await audit.json()).data.reverse();
  assert.deepEqual(rows.map((r) => r.action), ['create', 'update', 'update', 'revoke', 'revoke', 'delete']);
  for (const r of rows) {
    assert.equal(r.actor, `cli:${user}`);
    assert.equal(r.role, 'admin');
    assert.equal(r.address, 'local');
    assert.equal(r.method, 'CLI');
    assert.equal(r.path, `sluice keys ${r.action}`);
  }
  assert.equal(rows[0].before, null);
  assert.equal(rows[0].after.key.name, 'machine');
  assert.equal(rows[1].before.name, 'machine');
  assert.equal(rows[1].after.name, 'machine v2');
  assert.equal(rows[3].after.status, 'revoked');
  assert.equal(rows[5].before.name, 'machine v2');
  assert.equal(rows[5].after, null);
  assert.ok(!JSON.stringify(rows).includes(created.secret), 'no secret in the audit log');
});

test('the CLI refuses what the API refuses, in the same words', async () => {
  const apiMessage = async (body) => {
    const r = await fetch(`${gw.url}/admin/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(r.status, 400);
    return (await r.json()).error.message;
  };
  const before = sql('select count(*) as n from virtual_keys')[0].n;
  for (const [args, body, flag] of [
    [[], {}, '--name'],
    [['--name', 'k', '--rpm', '0'], { name: 'k', rpm: 0 }, '--rpm'],
    [['--name', 'k', '--tpm', 'lots'], { name: 'k', tpm: 'lots' }, '--tpm'],
    [['--name', 'k', '--budget-total', '-1'], { name: 'k', budget_total_usd: -1 }, '--budget-total'],
    [['--name', 'k', '--expires', '2001-01-01T00:00:00Z'], { name: 'k', expires_at: '2001-01-01T00:00:00Z' }, '--expires'],
    [['--name', 'k', '--models', 'a,,b'], { name: 'k', allowed_models: ['a', '', 'b'] }, '--models'],
    [['--name', 'k', '--metadata', '[1]'], { name: 'k', metadata: [1] }, '--metadata'],
  ]) {
    const r = withConfig(['create', ...args]);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.out}`);
    const message = await apiMessage(body);
    assert.ok(r.err.includes(`${flag}: ${message}`), `${args.join(' ')}\n  cli: ${r.err}  api: ${message}`);
  }
  for (const [args, re] of [[['--name', 'k', '--expires-in', 'soon'], /--expires-in takes a duration/],
    [['--name', 'k', '--expires', '2099-01-01', '--expires-in', '1d'], /not both/],
    [['--name', 'k', '--metadata', '{oops'], /invalid JSON/]]) {
    const r = withConfig(['create', ...args]);
    assert.equal(r.code, 1);
    assert.match(r.err, re);
  }
  assert.equal(sql('select count(*) as n from virtual_keys')[0].n, before, 'nothing refused was stored');
  const nothing = withConfig(['update', '1']);
  assert.equal(nothing.code, 1);
  assert.match(nothing.err, /nothing to update/);
});

test('--team puts a key in a team by name or id, and none takes it out', async () => {
  const t = await fetch(`${gw.url}/admin/api/teams`, { method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'cli-team' }) });
  assert.equal(t.status, 201);
  const team = await t.json();
  const created = json(withConfig(['create', '--name', 'in-team', '--team', 'cli-team', '--json']));
  assert.equal(created.key.team_id, team.id);
  assert.match(withConfig(['show', String(created.key.id)]).out, new RegExp(`team:\\s+${team.id}`));
  assert.equal(json(withConfig(['update', String(created.key.id), '--team', 'none', '--json'])).team_id, null);
  assert.equal(json(withConfig(['update', String(created.key.id), '--team', String(team.id), '--json'])).team_id, team.id);
  const missing = withConfig(['create', '--name', 'x', '--team', 'no-such-team']);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /--team: no team named "no-such-team"/);
  const hostile = withConfig(['create', '--name', 'x', '--team', "x' OR '1'='1"]);
  assert.equal(hostile.code, 1);
  assert.match(hostile.err, /--team: no team named/);
  const byId = withConfig(['create', '--name', 'x', '--team', '999999']);
  assert.equal(byId.code, 1);
  assert.match(byId.err, /--team: no team with id 999999/);
});

test('without -c the default store ./sluice.db is used; a bad config exits 2', () => {
  const cwd = tempDir();
  const made = keys(['create', '--name', 'local', '--json'], { cwd });
  assert.equal(made.code, 0, made.err);
  assert.ok(existsSync(join(cwd, 'sluice.db')));
  assert.deepEqual(json(keys(['list', '--json'], { cwd })).map((k) => k.name), ['local']);

  const bad = join(cwd, 'bad.yaml');
  writeFileSync(bad, 'store:\n  url: "mysql://nope"\n');
  const r = keys(['list', '-c', bad]);
  assert.equal(r.code, 2);
  assert.match(r.err, /store\.url/);
  const missing = keys(['list', '-c', join(cwd, 'missing.yaml')]);
  assert.equal(missing.code, 2);
  assert.match(missing.err, /cannot read/);
});
