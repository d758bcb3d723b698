// MCP servers managed while the gateway runs: added, changed and removed through the admin API
// (/admin/api/mcp-servers, header values sealed in the store) and through a config reload, with
// no restart. The official MCP TypeScript SDK's Client is connected the whole time: its GET
// stream on /mcp brings notifications/tools/list_changed when the server set changes, and its
// next tools/list shows the change. Also: the Origin rule, tool-call bodies in the request log
// after redaction, the per-server list cache, and hostile admin bodies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  startGateway, gatewayYaml, admin, metrics, metricValue, waitFor, stop, tempDir, MASTER,
} from '../lib/harness.mjs';
import { EVERYTHING, childrenOf, freePort, startMcpHttp } from '../lib/mcp-servers.mjs';

const GROWING = join(dirname(new URL(import.meta.url).pathname), 'fixtures', 'growing-mcp-server.mjs');
const HEADER_SECRET = 'Bearer upstream-mcp-secret-5f0e9a7c41d2';
const SECRET_KEY = 'e2e-store-secret-key-0123456789abcdef';

const names = (list) => list.map((t) => t.name).sort();
const toolNames = async (client) => names((await client.listTools()).tools);
const stdioCommand = (tag) => [process.execPath, EVERYTHING, 'stdio', tag];

function mcpYaml(servers, { secret = true, logBodies = true, redaction = true, db } = {}) {
  const store = [
    'store:', `  url: "sqlite://${db}"`, `  log_bodies: ${logBodies}`,
    ...(secret ? [`  secret_key: "${SECRET_KEY}"`] : []),
  ];
  const red = redaction ? [
    'redaction:', '  enabled: true', '  key: "e2e-redaction-key-0123456789abcdef"',
    '  rules:', "    - {name: TICKET, pattern: 'TCK-[0-9]{6}', action: mask}",
  ] : [];
  const mcp = ['mcp:', '  servers:', ...servers.map((s) => `    - {name: ${s.name}, command: ${JSON.stringify(stdioCommand(s.tag ?? s.name))}, timeout: 20s}`)];
  return gatewayYaml({ channels: [], extra: [...store, ...red, ...mcp].join('\n') + '\n' });
}

let gw, remote, remotePort, client, dbFile;
const changes = [];  // tools/list_changed notifications the client received

async function connect(key = MASTER) {
  const c = new Client({ name: 'sluice-admin-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await c.connect(transport);
  return c;
}

const serverOf = async (name) => (await (await admin(gw, '/mcp-servers')).json()).data.find((s) => s.name === name);
const upState = async (name) => (await serverOf(name))?.state === 'up';

before(async () => {
  remotePort = await freePort();
  remote = await startMcpHttp(remotePort);
  dbFile = join(tempDir(), 'sluice.db');
  gw = await startGateway(mcpYaml([{ name: 'local' }], { db: dbFile }));
  assert.ok(await waitFor(() => upState('local'), 20000), 'the config server comes up');
  client = await connect();
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => { changes.push(n); });
  // The SDK opens its GET stream after initialize; the gateway counts it.
  assert.ok(await waitFor(async () => metricValue(await metrics(gw), 'sluice_mcp_streams_open') >= 1, 5000),
    'the client holds a GET stream on its session');
});
after(async () => {
  await client?.close();
  await gw?.stop();
  await stop(remote);
});

test('a server added through the admin API serves at once; connected clients are told', async () => {
  assert.ok(!(await toolNames(client)).some((n) => n.startsWith('remote__')));
  const seen = changes.length;
  const res = await admin(gw, '/mcp-servers', { method: 'POST', body: {
    name: 'remote', url: `http://127.0.0.1:${remotePort}/mcp`, headers: { Authorization: HEADER_SECRET }, timeout_ms: 20000,
  } });
  assert.equal(res.status, 201);
  const created = await res.json();
  assert.equal(typeof created.id, 'number');
  assert.equal(created.source, 'store');
  assert.equal(created.transport, 'http');
  assert.equal(created.url, `http://127.0.0.1:${remotePort}/mcp`);
  assert.equal(created.command, null);
  assert.equal(created.timeout_ms, 20000);
  assert.ok(['starting', 'up'].includes(created.state));
  assert.equal(created.headers.Authorization, 'Bea\u2026d2', 'masked as upstream keys are');
  assert.ok(!JSON.stringify(created).includes('5f0e9a7c41d2'), 'the header secret is masked');

  assert.ok(await waitFor(() => changes.length > seen, 20000), 'tools/list_changed reaches the client');
  assert.ok(await waitFor(async () => (await toolNames(client)).includes('remote__echo'), 5000), 'the new tools are listed');
  const echo = await client.callTool({ name: 'remote__echo', arguments: { message: 'via the admin API' } });
  assert.equal(echo.content[0].text, 'Echo: via the admin API');

  const shown = await (await admin(gw, `/mcp-servers/${created.id}`)).json();
  assert.equal(shown.state, 'up');
  assert.equal(shown.error, null);
  assert.ok(shown.tools.some((t) => t.name === 'remote__echo' && t.description.length > 0), 'live tools');
  assert.ok(shown.prompts > 0 && shown.resources > 0);
  assert.deepEqual(await (await admin(gw, '/mcp-servers/remote')).json(), shown, 'by name as by id');

  // The secret is sealed in the store, and absent from logs and every admin answer.
  const raw = readFileSync(dbFile);
  assert.ok(!raw.includes(Buffer.from('upstream-mcp-secret')), 'the SQLite file holds no header secret');
  assert.ok(!gw.proc.output.includes('upstream-mcp-secret'));
  assert.ok(!JSON.stringify(await (await admin(gw, '/mcp-servers')).json()).includes('upstream-mcp-secret'));
  assert.ok(!(await (await admin(gw, '/config')).text()).includes('upstream-mcp-secret'));
});

test('PATCH changes a store server (a masked header sent back keeps its value); DELETE removes it', async () => {
  const before = await serverOf('remote');
  const announced = changes.length;
  const res = await admin(gw, '/mcp-servers/remote', { method: 'PATCH', body: { timeout_ms: 15000, headers: before.headers } });
  assert.equal(res.status, 200);
  const patched = await res.json();
  assert.equal(patched.timeout_ms, 15000);
  assert.deepEqual(patched.headers, before.headers);
  // The gateway applies the change (announced as a list change), then the server reconnects with
  // the changed settings, the same header still sent (it would refuse none). Until the change is
  // applied the old connection still reads "up", so the state alone proves nothing.
  assert.ok(await waitFor(() => changes.length > announced, 20000), 'the change is applied and announced');
  assert.ok(await waitFor(() => upState('remote'), 20000));
  const echo = await client.callTool({ name: 'remote__echo', arguments: { message: 'after the change' } });
  assert.equal(echo.content[0].text, 'Echo: after the change');

  const seen = changes.length;
  const del = await admin(gw, `/mcp-servers/${before.id}`, { method: 'DELETE' });
  assert.equal(del.status, 204);
  assert.ok(await waitFor(() => changes.length > seen, 10000), 'the removal is announced');
  assert.ok(!(await toolNames(client)).some((n) => n.startsWith('remote__')), 'its tools are gone');
  assert.equal((await admin(gw, `/mcp-servers/${before.id}`)).status, 404);
  await assert.rejects(client.callTool({ name: 'remote__echo', arguments: { message: 'x' } }), /unknown tool/);
});

test('a stdio server added and deleted through the API: its process starts and ends', async () => {
  const res = await admin(gw, '/mcp-servers', { method: 'POST', body: { name: 'kid', command: stdioCommand('kid-marker') } });
  assert.equal(res.status, 201);
  const created = await res.json();
  assert.equal(created.transport, 'stdio');
  assert.deepEqual(created.command, stdioCommand('kid-marker'));
  assert.deepEqual(created.headers, {});
  assert.ok(await waitFor(async () => (await toolNames(client)).includes('kid__echo'), 20000));
  const pids = childrenOf(gw.proc.pid, 'kid-marker');
  assert.equal(pids.length, 1, 'one child process');
  const localPids = childrenOf(gw.proc.pid, `${EVERYTHING}\0stdio\0local`);

  assert.equal((await admin(gw, '/mcp-servers/kid', { method: 'DELETE' })).status, 204);
  assert.ok(await waitFor(() => childrenOf(gw.proc.pid, 'kid-marker').length === 0, 10000), 'its process ended');
  assert.ok(!(await toolNames(client)).includes('kid__echo'));
  assert.deepEqual(childrenOf(gw.proc.pid, `${EVERYTHING}\0stdio\0local`), localPids, 'the other server kept its process');
});

test("a server's own tools/list_changed passes on, over stdio and Streamable HTTP (its GET stream)", async () => {
  const port = await freePort();
  const growing = await startMcpHttp(port, [GROWING, 'http', String(port)]);
  try {
    for (const body of [{ name: 'grow_http', url: `http://127.0.0.1:${port}/mcp` }, { name: 'grow_stdio', command: [process.execPath, GROWING, 'stdio'] }]) {
      assert.equal((await admin(gw, '/mcp-servers', { method: 'POST', body })).status, 201);
    }
    assert.ok(await waitFor(async () => {
      const all = await toolNames(client);
      return all.includes('grow_http__grow') && all.includes('grow_stdio__grow');
    }, 20000), 'both growing servers serve');
    for (const server of ['grow_stdio', 'grow_http']) {
      const listed = await toolNames(client);  // from the cache from now on
      assert.ok(!listed.includes(`${server}__grown_1`));
      const seen = changes.length;
      const out = await client.callTool({ name: `${server}__grow`, arguments: {} });
      assert.equal(out.content[0].text, 'grown_1');
      assert.ok(await waitFor(() => changes.length > seen, 10000), `${server}: the server's list_changed reached the client`);
      assert.ok(await waitFor(async () => (await toolNames(client)).includes(`${server}__grown_1`), 5000),
        `${server}: the cached list was dropped, the new tool is listed`);
      assert.equal((await client.callTool({ name: `${server}__grown_1`, arguments: {} })).content[0].text, 'I am grown_1');
    }
  } finally {
    for (const n of ['grow_http', 'grow_stdio']) await admin(gw, `/mcp-servers/${n}`, { method: 'DELETE' });
    await stop(growing);
  }
});

test('config servers are read-only here: 409 saying to edit the config', async () => {
  const shown = await (await admin(gw, '/mcp-servers/local')).json();
  assert.equal(shown.id, null);
  assert.equal(shown.source, 'config');
  assert.equal(shown.transport, 'stdio');
  assert.equal(shown.state, 'up');
  for (const [method, body] of [['PATCH', { timeout_ms: 1000 }], ['DELETE', undefined]]) {
    const res = await admin(gw, '/mcp-servers/local', { method, body });
    assert.equal(res.status, 409, method);
    assert.match((await res.json()).error.message, /config file.*mcp\.servers/);
  }
  const dup = await admin(gw, '/mcp-servers', { method: 'POST', body: { name: 'local', command: ['x'] } });
  assert.equal(dup.status, 409);
  assert.match((await dup.json()).error.message, /already defines an MCP server named "local"/);
});

test('hostile and invalid admin bodies: 400 naming the field, nothing stored, the gateway keeps serving', async () => {
  const url = `http://127.0.0.1:${remotePort}/mcp`;
  const cases = [
    [{ url }, 'name'],
    [{ name: 'a__b', url }, 'name'],
    [{ name: 'a/b', url }, 'name'],
    [{ name: 'x_', url }, 'name'],
    [{ name: 'y'.repeat(65), url }, 'name'],
    [{ name: 'n1' }, 'url'],
    [{ name: 'n2', url, command: ['node'] }, 'url'],
    [{ name: 'n3', url: 'file:///etc/passwd' }, 'url'],
    [{ name: 'n4', url: 'http://user:pw-secret-9@127.0.0.1/mcp' }, 'url'],
    [{ name: 'n5', url: 'http://127.0.0.1/mcp\r\nX-Injected: 1' }, 'url'],
    [{ name: 'n6', url: `http://127.0.0.1/${'a'.repeat(3000)}` }, 'url'],
    [{ name: 'n7', url: 'ftp://127.0.0.1/' }, 'url'],
    [{ name: 'n8', url, headers: { 'X-Evil\r\nInjected': 'v' } }, /^headers\./],
    [{ name: 'n9', url, headers: { 'X-A': 'v\r\nX-Injected: 1' } }, 'headers.X-A'],
    [{ name: 'n10', url, headers: { 'X-A': 'v\nmore' } }, 'headers.X-A'],
    [{ name: 'n11', url, headers: { 'X-A': 'x'.repeat(9000) } }, 'headers.X-A'],
    [{ name: 'n12', url, headers: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`X-H${i}`, 'v'])) }, 'headers'],
    [{ name: 'n13', url, headers: { 'X-A': 5 } }, 'headers.X-A'],
    [{ name: 'n14', url, headers: { 'x-a': '1', 'X-A': '2' } }, /^headers\./],
    [{ name: 'n15', command: ['node'], headers: { 'X-A': '1' } }, 'headers'],
    [{ name: 'n16', command: [] }, 'command'],
    [{ name: 'n17', command: [''] }, 'command[0]'],
    [{ name: 'n18', command: ['node', 7] }, 'command[1]'],
    [{ name: 'n19', command: ['node', 'a\u0000b'] }, 'command[1]'],
    [{ name: 'n20', command: Array(70).fill('a') }, 'command'],
    [{ name: 'n21', url, timeout_ms: 0 }, 'timeout_ms'],
    [{ name: 'n22', url, timeout_ms: 'soon' }, 'timeout_ms'],
    [{ name: 'n23', url, timeout_ms: 1e12 }, 'timeout_ms'],
    [{ name: 'n24', url, colour: 'red' }, 'colour'],
    [{ name: 'n25', url, state: 'up' }, 'state'],
  ];
  for (const [body, param] of cases) {
    const res = await admin(gw, '/mcp-servers', { method: 'POST', body });
    const text = await res.text();
    assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 120)} -> ${res.status} ${text}`);
    const err = JSON.parse(text).error;
    if (param instanceof RegExp) assert.match(err.param, param); else assert.equal(err.param, param, text);
    assert.ok(!text.includes('pw-secret-9'), 'a refused URL is not echoed with its credential');
    assert.ok(!text.includes('X-Injected: 1\r\n'));
  }
  const notJson = await fetch(`${gw.url}/admin/api/mcp-servers`, {
    method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' }, body: '{"name":',
  });
  assert.equal(notJson.status, 400);
  const listed = (await (await admin(gw, '/mcp-servers')).json()).data.map((s) => s.name);
  assert.deepEqual(listed, ['local'], 'nothing was stored');
  assert.equal((await admin(gw, '/mcp-servers/nope')).status, 404);
  assert.equal((await client.callTool({ name: 'local__echo', arguments: { message: 'still here' } })).content[0].text, 'Echo: still here');
});

// A minimal MCP server over plain HTTP that keeps the raw bytes of every request it gets.
async function startRecordingServer() {
  const raw = [];
  const srv = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (req.method === 'GET') { res.writeHead(405).end(); return; }
      const msg = JSON.parse(body);
      if (msg.id === undefined) { res.writeHead(202).end(); return; }
      const result = msg.method === 'initialize'
        ? { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'rec', version: '1' } }
        : msg.method === 'tools/list' ? { tools: [{ name: 'noop', description: 'does nothing', inputSchema: { type: 'object' } }] } : {};
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'rec-session-1' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    });
  });
  srv.on('connection', (sock) => sock.on('data', (d) => raw.push(d.toString('latin1'))));
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { srv, raw, port: srv.address().port };
}

test('attack table: the stored header reaches the server byte for byte; refused bodies change nothing upstream', async () => {
  const rec = await startRecordingServer();
  try {
    const url = `http://127.0.0.1:${rec.port}/mcp`;
    const res = await admin(gw, '/mcp-servers', { method: 'POST', body: { name: 'rec', url, headers: { 'X-Api-Key': 'rec-secret-0042' } } });
    assert.equal(res.status, 201);
    assert.ok(await waitFor(() => upState('rec'), 10000));
    const heads = () => rec.raw.join('').split(/(?=POST |GET )/).filter((h) => h.startsWith('POST ') || h.startsWith('GET '));
    const init = heads().find((h) => h.includes('"method":"initialize"'));
    assert.ok(init, 'the server got initialize');
    const head = init.slice(0, init.indexOf('\r\n\r\n') + 2);
    assert.match(head, /^POST \/mcp HTTP\/1\.1\r\n/);
    assert.equal(head.split('\r\n').filter((l) => /^x-api-key:/i.test(l)).length, 1, head);
    assert.ok(head.includes('\r\nX-Api-Key: rec-secret-0042\r\n'), head);
    // Hostile changes are refused and never reach the server.
    const before = rec.raw.length;
    for (const body of [
      { headers: { 'X-Api-Key': 'v\r\nX-Injected: 1' } },
      { headers: { 'X-Api-Key\r\nX-Injected': 'v' } },
      { url: `http://evil:pw@127.0.0.1:${rec.port}/mcp` },
      { url: 'file:///etc/passwd' },
      { name: 'a__b' },
      { name: 'a/b' },
    ]) {
      const r = await admin(gw, '/mcp-servers/rec', { method: 'PATCH', body });
      assert.equal(r.status, 400, JSON.stringify(body));
    }
    await client.callTool({ name: 'rec__noop', arguments: {} }).catch(() => {});
    const after = rec.raw.slice(before).join('');
    assert.ok(!after.includes('X-Injected'), 'no injected header reached the server');
    assert.ok(!/evil|passwd/.test(after));
    assert.equal((await serverOf('rec')).headers['X-Api-Key'], 'rec\u202642', 'the stored header is unchanged, masked');
  } finally {
    await admin(gw, '/mcp-servers/rec', { method: 'DELETE' });
    await new Promise((r) => rec.srv.close(r));
  }
});

test('the OpenAPI document describes /mcp-servers', async () => {
  const doc = await (await admin(gw, '/openapi.json')).json();
  assert.ok(doc.paths['/mcp-servers'].post);
  assert.ok(doc.paths['/mcp-servers/{id}'].patch);
  assert.deepEqual(doc.components.schemas.McpServer.required.sort(),
    ['command', 'error', 'headers', 'id', 'name', 'prompts', 'resources', 'restarts', 'source', 'state', 'timeout_ms', 'tools', 'transport', 'url']);
});

test('a reload of mcp.servers adds and removes servers; unchanged ones keep their process', async () => {
  const localPids = childrenOf(gw.proc.pid, `${EVERYTHING}\0stdio\0local`);
  assert.equal(localPids.length, 1);
  const seen = changes.length;
  gw.writeConfig(mcpYaml([{ name: 'local' }, { name: 'second' }], { db: dbFile }));
  const r = await admin(gw, '/reload', { method: 'POST' });
  assert.equal(r.status, 200, await r.clone().text());
  assert.ok(await waitFor(async () => (await toolNames(client)).includes('second__echo'), 20000), 'the added server serves');
  assert.ok(changes.length > seen, 'and the client was told');
  assert.deepEqual(childrenOf(gw.proc.pid, `${EVERYTHING}\0stdio\0local`), localPids, 'local kept its process');
  assert.ok(!gw.proc.output.includes('take effect only after a restart'));

  gw.writeConfig(mcpYaml([{ name: 'local' }], { db: dbFile }));
  assert.equal((await admin(gw, '/reload', { method: 'POST' })).status, 200);
  assert.ok(await waitFor(async () => !(await toolNames(client)).includes('second__echo'), 10000), 'the removed server is gone');
  assert.ok(await waitFor(() => childrenOf(gw.proc.pid, `${EVERYTHING}\0stdio\0second`).length === 0, 10000));
  assert.deepEqual(childrenOf(gw.proc.pid, `${EVERYTHING}\0stdio\0local`), localPids);
});

test('tools/list is served from the cache: the servers are not asked again each time', async () => {
  await toolNames(client);
  const fetches = async () => metricValue(await metrics(gw), 'sluice_mcp_list_fetches_total', { server: 'local', method: 'tools/list' });
  const before = await fetches();
  assert.ok(before >= 1);
  for (let i = 0; i < 5; i++) assert.ok((await toolNames(client)).includes('local__echo'));
  assert.equal(await fetches(), before);
});

test('Origin: another site is refused with 403 before anything else; the own host and none are served', async () => {
  const post = (headers, key = MASTER) => fetch(`${gw.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  for (const origin of ['http://evil.example', 'https://evil.example:443', 'null', 'http://127.0.0.1.evil.example', 'javascript:alert(1)']) {
    const res = await post({ origin });
    assert.equal(res.status, 403, origin);
    assert.match((await res.json()).error.message, /Origin/);
  }
  const wrongKey = await post({ origin: 'http://evil.example' }, 'sk-wrong');
  assert.equal(wrongKey.status, 403, 'the Origin check comes before the key check');
  assert.equal((await post({ origin: `http://127.0.0.1:${gw.port}` })).status, 200);
  assert.equal((await post({ origin: 'http://localhost:5173' })).status, 200, 'localhost is 127.0.0.1');
  assert.equal((await post({})).status, 200);
  const get = await fetch(`${gw.url}/mcp`, { headers: { origin: 'http://evil.example', accept: 'text/event-stream', authorization: `Bearer ${MASTER}` } });
  assert.equal(get.status, 403);
});

test('GET /mcp: the stream of a session, refused without one, one per session', async () => {
  const h = { authorization: `Bearer ${MASTER}`, accept: 'text/event-stream' };
  assert.equal((await fetch(`${gw.url}/mcp`, { headers: h })).status, 400);
  assert.equal((await fetch(`${gw.url}/mcp`, { headers: { ...h, 'mcp-session-id': 'mcp-nope' } })).status, 404);
  assert.equal((await fetch(`${gw.url}/mcp`, { headers: { ...h, accept: 'application/json' } })).status, 406);
  const sid = client.transport.sessionId;
  assert.ok(sid);
  const second = await fetch(`${gw.url}/mcp`, { headers: { ...h, 'mcp-session-id': sid } });
  assert.equal(second.status, 409, 'the SDK client already holds this session\'s stream');
});

test('tool-call bodies are logged after redaction, only with store.log_bodies', async () => {
  const echoRows = async () => (await (await admin(gw, '/logs?limit=50&channel=local')).json()).data.filter((r) => r.model === 'echo');
  // The rows of earlier calls are written by now (the log writer is asynchronous).
  await waitFor(async () => (await echoRows()).length >= 1, 5000);
  const lastId = Math.max(0, ...(await echoRows()).map((r) => r.id));
  const out = await client.callTool({ name: 'local__echo', arguments: { message: 'ticket TCK-123456 please' } });
  assert.equal(out.content[0].text, 'Echo: ticket TCK-123456 please', 'the server and the client see the real text');
  const row = await waitFor(async () => (await echoRows()).find((r) => r.id > lastId), 5000);
  assert.ok(row);
  const detail = await (await admin(gw, `/logs/${row.id}`)).json();
  assert.match(detail.request_body, /\[REDACTED:TICKET\]/);
  assert.ok(!detail.request_body.includes('TCK-123456'));
  assert.match(detail.response_body, /Echo: ticket \[REDACTED:TICKET\] please/);
  assert.ok(!detail.response_body.includes('TCK-123456'));
  const m = await metrics(gw);
  assert.ok(metricValue(m, 'sluice_requests_total', { channel: 'local', model: 'echo', status: '200' }) >= 1,
    'tool calls are counted per server and tool with their status');
});

test('without store.log_bodies no body is kept; without store.secret_key headers are refused with 503', async () => {
  const db = join(tempDir(), 'plain.db');
  const plain = await startGateway(mcpYaml([{ name: 'solo' }], { db, secret: false, logBodies: false, redaction: false }));
  try {
    const res = await fetch(`${plain.url}/admin/api/mcp-servers`, {
      method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'remote', url: `http://127.0.0.1:${remotePort}/mcp`, headers: { Authorization: HEADER_SECRET } }),
    });
    assert.equal(res.status, 503);
    assert.match((await res.json()).error.message, /SLUICE_SECRET_KEY/);
    const noHeaders = await fetch(`${plain.url}/admin/api/mcp-servers`, {
      method: 'POST', headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'remote', url: `http://127.0.0.1:${remotePort}/mcp` }),
    });
    assert.equal(noHeaders.status, 201, 'a server without headers needs no secret key');

    const c = new Client({ name: 't', version: '1' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${plain.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${MASTER}` } } }));
    try {
      assert.ok(await waitFor(async () => names((await c.listTools()).tools).includes('solo__echo'), 20000));
      await c.callTool({ name: 'solo__echo', arguments: { message: 'TCK-123456' } });
    } finally { await c.close(); }
    const row = await waitFor(async () => (await (await fetch(`${plain.url}/admin/api/logs?channel=solo`, { headers: { authorization: `Bearer ${MASTER}` } })).json()).data[0], 5000);
    const detail = await (await fetch(`${plain.url}/admin/api/logs/${row.id}`, { headers: { authorization: `Bearer ${MASTER}` } })).json();
    assert.equal(detail.request_body, null);
    assert.equal(detail.response_body, null);
  } finally {
    await plain.stop();
  }
});

test('shutdown ends the open streams cleanly', async () => {
  const db = join(tempDir(), 'stop.db');
  const g = await startGateway(mcpYaml([], { db, redaction: false }));
  const init = await fetch(`${g.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${MASTER}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  const sid = init.headers.get('mcp-session-id');
  const res = await fetch(`${g.url}/mcp`, { headers: { authorization: `Bearer ${MASTER}`, accept: 'text/event-stream', 'mcp-session-id': sid } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /text\/event-stream/);
  const body = res.text();  // the whole stream: ends only when the gateway ends it
  const code = await new Promise((resolve) => { g.proc.once('exit', (c) => resolve(c)); g.proc.kill('SIGTERM'); });
  assert.equal(code, 0);
  assert.match(await body, /^: sluice mcp stream/, 'the body ended as a complete chunked stream');
});
