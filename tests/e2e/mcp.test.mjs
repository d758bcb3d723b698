// The MCP gateway through the official MCP TypeScript SDK: its Client with the Streamable HTTP
// transport talks to the gateway's /mcp, which puts two real MCP servers from npm behind it:
// server-everything as a stdio child process of the gateway ("local") and as a Streamable HTTP
// server on a loopback port ("remote"). Listing, routing, allowed_tools, a wrong key, servers
// killed mid-test, the request log and /metrics, and hostile input.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  startGateway, gatewayYaml, createKey, admin, metrics, metricValue, waitFor, stop, tempDir, MASTER,
} from '../lib/harness.mjs';
import { EVERYTHING, childrenOf, freePort, startMcpHttp } from '../lib/mcp-servers.mjs';

async function connect(key) {
  const client = new Client({ name: 'sluice-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

const names = (list) => list.map((t) => t.name).sort();
const textOf = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
const upCount = async () => metricValue(await metrics(gw), 'sluice_mcp_server_up');

let gw, remote, remotePort, master;
before(async () => {
  remotePort = await freePort();
  remote = await startMcpHttp(remotePort);
  const extra = [
    'mcp:',
    '  servers:',
    `    - {name: local, command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(EVERYTHING)}, stdio], timeout: 20s}`,
    `    - {name: remote, url: "http://127.0.0.1:${remotePort}/mcp", headers: {Authorization: "Bearer upstream-secret-7c1d"}, timeout: 20s}`,
  ].join('\n') + '\n';
  // store.log_bodies: a tool call's arguments and result are kept in its log row.
  const store = `store:\n  url: "sqlite://${join(tempDir(), 'sluice.db')}"\n  log_bodies: true\n`;
  gw = await startGateway(gatewayYaml({ channels: [], server: { max_body_bytes: 65536 }, extra: store + extra }));
  assert.equal(await waitFor(async () => (await upCount()) === 2, 20000), true, 'both MCP servers come up');
  master = await connect(MASTER);
});
after(async () => {
  await master?.close();
  await gw?.stop();
  await stop(remote);
});

test('tools, prompts and resources of both servers, each name prefixed with its server', async () => {
  const { tools } = await master.listTools();
  const all = names(tools);
  for (const t of ['local__echo', 'local__get-sum', 'remote__echo', 'remote__get-sum']) assert.ok(all.includes(t), `${t} in ${all}`);
  assert.ok(all.every((n) => n.startsWith('local__') || n.startsWith('remote__')));
  const echo = tools.find((t) => t.name === 'remote__echo');
  assert.equal(echo.inputSchema.type, 'object', 'the schema passes through');

  const { prompts } = await master.listPrompts();
  assert.ok(names(prompts).includes('local__simple-prompt'));
  assert.ok(names(prompts).includes('remote__simple-prompt'));
  const prompt = await master.getPrompt({ name: 'remote__args-prompt', arguments: { city: 'Lyon' } });
  assert.match(JSON.stringify(prompt.messages), /Lyon/);

  const { resources } = await master.listResources();
  const doc = resources.find((r) => r.uri.startsWith('sluice-mcp://local/'));
  assert.ok(doc, 'resources are namespaced as sluice-mcp://SERVER/URI');
  const read = await master.readResource({ uri: doc.uri });
  assert.equal(read.contents[0].uri, doc.uri, 'the content names the namespaced URI');
  assert.ok((read.contents[0].text ?? read.contents[0].blob ?? '').length > 0);
  await master.ping();
});

test('a call goes to the right server, without its prefix, and leaves a log row and a metric', async () => {
  const before = await metrics(gw);
  const sum = await master.callTool({ name: 'local__get-sum', arguments: { a: 2, b: 40 } });
  assert.match(textOf(sum), /42/);
  const echo = await master.callTool({ name: 'remote__echo', arguments: { message: 'through the gateway' } });
  assert.equal(textOf(echo), 'Echo: through the gateway');

  const rows = await waitFor(async () => {
    const page = await (await admin(gw, '/logs?limit=500')).json();
    const got = (page.data ?? []).filter((r) => (r.channel === 'local' && r.model === 'get-sum') || (r.channel === 'remote' && r.model === 'echo'));
    return got.length >= 2 ? got : null;
  }, 5000);
  assert.ok(rows, 'one request-log row per tool call');
  for (const r of rows) assert.equal(r.status, 200);
  const sumRow = rows.find((r) => r.model === 'get-sum');
  const detail = await (await admin(gw, `/logs/${sumRow.id}`)).json();
  assert.match(detail.request_body, /"a":2/, 'the arguments, with store.log_bodies');
  assert.match(detail.response_body, /42/, 'the result, with store.log_bodies');
  const after = await metrics(gw);
  const delta = (m, labels) => metricValue(after, m, labels) - metricValue(before, m, labels);
  assert.equal(delta('sluice_requests_total', { channel: 'local', model: 'get-sum', status: '200' }), 1);
  assert.equal(delta('sluice_requests_total', { channel: 'remote', model: 'echo', status: '200' }), 1);
  // The upstream's Authorization header never shows: not in the logs, not on stdout/stderr.
  assert.ok(!gw.proc.output.includes('upstream-secret-7c1d'));
  assert.ok(!JSON.stringify(await (await admin(gw, '/logs?limit=500')).json()).includes('upstream-secret-7c1d'));
  const { yaml } = await (await admin(gw, '/config')).json();
  assert.match(yaml, /name: remote/, 'the config shows the server');
  assert.ok(!yaml.includes('upstream-secret-7c1d'), 'but not its header');
});

test('allowed_tools limits every list and every call of a virtual key', async () => {
  const { secret } = await createKey(gw, { name: 'agent', allowed_tools: ['local__echo', 'remote__get-*'] });
  // The key table is refreshed from the store at once after an admin write; a bounded wait.
  const client = await waitFor(async () => { try { return await connect(secret); } catch { return null; } }, 5000);
  assert.ok(client, 'the new key connects');
  try {
    const listed = names((await client.listTools()).tools);
    assert.ok(listed.includes('local__echo'));
    assert.ok(listed.includes('remote__get-sum'));
    assert.ok(listed.every((n) => n === 'local__echo' || n.startsWith('remote__get-')), `${listed}`);
    assert.match(textOf(await client.callTool({ name: 'local__echo', arguments: { message: 'ok' } })), /ok/);
    await assert.rejects(client.callTool({ name: 'remote__echo', arguments: { message: 'no' } }), (e) => {
      assert.ok(e instanceof McpError, String(e));
      assert.match(e.message, /remote__echo/);
      assert.match(e.message, /not allowed/);
      return true;
    });
    const denied = await waitFor(async () => {
      const page = await (await admin(gw, '/logs?limit=500')).json();
      return (page.data ?? []).find((r) => r.channel === 'remote' && r.model === 'echo' && r.status === 403);
    }, 5000);
    assert.ok(denied, 'the refused call is logged as a 403');
  } finally {
    await client.close();
  }
});

test('a key\'s RPM counts its tool calls', async () => {
  const { secret } = await createKey(gw, { name: 'slow agent', rpm: 2 });
  const client = await waitFor(async () => { try { return await connect(secret); } catch { return null; } }, 5000);
  assert.ok(client, 'the new key connects');
  try {
    for (let i = 0; i < 2; i++) await client.callTool({ name: 'local__echo', arguments: { message: `n${i}` } });
    await assert.rejects(client.callTool({ name: 'local__echo', arguments: { message: 'over' } }), (e) => {
      assert.ok(e instanceof McpError, String(e));
      assert.equal(e.code, -32029);
      assert.match(e.message, /requests limit/);
      return true;
    });
    await client.listTools();  // lists are not tool calls: still served
  } finally {
    await client.close();
  }
});

test("a team's RPM counts the tool calls of all its keys", async () => {
  const team = await admin(gw, '/teams', { method: 'POST', body: { name: 'mcp-team', rpm: 3 } });
  assert.equal(team.status, 201, await team.clone().text());
  const { id } = await team.json();
  const a = await createKey(gw, { name: 'team agent a', team_id: id });
  const b = await createKey(gw, { name: 'team agent b', team_id: id });
  const clients = [];
  try {
    for (const { secret } of [a, b]) {
      const c = await waitFor(async () => { try { return await connect(secret); } catch { return null; } }, 5000);
      assert.ok(c, 'the new key connects');
      clients.push(c);
    }
    await clients[0].callTool({ name: 'local__echo', arguments: { message: 'a1' } });
    await clients[1].callTool({ name: 'local__echo', arguments: { message: 'b1' } });
    await clients[0].callTool({ name: 'local__echo', arguments: { message: 'a2' } });
    for (const c of clients) {
      await assert.rejects(c.callTool({ name: 'local__echo', arguments: { message: 'over' } }), (e) => {
        assert.ok(e instanceof McpError, String(e));
        assert.equal(e.code, -32029);
        assert.match(e.message, /team mcp-team's requests limit is reached/);
        return true;
      });
    }
  } finally {
    for (const c of clients) await c.close();
  }
});

test('a wrong key is refused with 401 before anything reaches a server', async () => {
  await assert.rejects(connect('sk-slc-not-a-key'), (e) => {
    assert.equal(e.code, 401, String(e));
    assert.match(e.message, /not valid/);
    return true;
  });
  const res = await fetch(`${gw.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer wrong' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'local__echo', arguments: { message: 'x' } } }),
  });
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), 'Bearer');
  assert.equal((await res.json()).error.code, -32600);
});

// Raw requests on an initialized session, for the attack table.
async function rawSession() {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${MASTER}` };
  const init = await fetch(`${gw.url}/mcp`, {
    method: 'POST', headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  assert.equal(init.status, 200);
  assert.equal((await init.json()).result.protocolVersion, '2025-06-18', 'the client\'s version is kept');
  const session = init.headers.get('mcp-session-id');
  assert.match(session, /^mcp-[0-9a-f]{32}$/);
  return { headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }, session };
}

test('hostile input gets a JSON-RPC error or a 4xx, and the gateway keeps serving', async () => {
  const { headers, session } = await rawSession();
  const post = (body, h = headers) => fetch(`${gw.url}/mcp`, { method: 'POST', headers: h, body });
  const call = (name) => JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name, arguments: { message: 'x' } } });
  const cases = [
    { what: 'malformed JSON', body: '{"jsonrpc":"2.0",', status: 400, code: -32700 },
    { what: 'a non-object', body: '42', status: 400, code: -32600 },
    { what: 'a string', body: '"tools/list"', status: 400, code: -32600 },
    { what: 'a batch', body: JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]), status: 400, code: -32600 },
    { what: 'no jsonrpc', body: JSON.stringify({ id: 1, method: 'ping' }), status: 400, code: -32600 },
    { what: 'params not an object', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: [] }), status: 400, code: -32600 },
    { what: 'deep nesting', body: '['.repeat(5000), status: 400, code: -32700 },
    { what: 'no prefix', body: call('echo'), status: 200, code: -32602, names: 'echo' },
    { what: 'an unknown prefix', body: call('nowhere__echo'), status: 200, code: -32602, names: 'nowhere__echo' },
    { what: '../ before the prefix', body: call('../local__echo'), status: 200, code: -32602 },
    { what: 'CRLF in the name', body: call('local__echo\r\nx-injected: 1'), status: 200, code: -32602 },
    { what: 'an unknown method', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sampling/createMessage' }), status: 200, code: -32601 },
    { what: 'a resource URI of no server', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'file:///etc/passwd' } }), status: 200, code: -32602 },
    { what: 'a huge body', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'local__echo', arguments: { message: 'x'.repeat(200000) } } }), status: 413 },
  ];
  for (const c of cases) {
    const res = await post(c.body);
    assert.equal(res.status, c.status, c.what);
    if (c.code === undefined) { await res.text(); continue; }
    const body = await res.json();
    assert.equal(body.jsonrpc, '2.0', c.what);
    assert.equal(body.error?.code, c.code, `${c.what}: ${JSON.stringify(body)}`);
    if (c.names) assert.match(body.error.message, new RegExp(c.names), c.what);
  }
  // A name past the prefix goes to its server as a name (never a path); the server refuses it.
  const traversal = await (await post(call('local__../../etc/passwd'))).json();
  assert.ok(traversal.error || traversal.result?.isError, JSON.stringify(traversal));

  // The transport's own rules.
  let res = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { ...headers, 'content-type': 'text/plain' });
  assert.equal(res.status, 415);
  res = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { ...headers, 'mcp-protocol-version': '1999-01-01' });
  assert.equal(res.status, 400);
  res = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { ...headers, 'mcp-session-id': 'mcp-00' });
  assert.equal(res.status, 404);
  const noSession = { ...headers };
  delete noSession['mcp-session-id'];
  res = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), noSession);
  assert.equal(res.status, 400);
  res = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  assert.equal(res.status, 202);
  res = await fetch(`${gw.url}/mcp`, { headers: { ...headers, accept: 'text/event-stream' } });
  assert.equal(res.status, 200, 'GET: the stream of server messages (tests/e2e/mcp-admin.test.mjs)');
  assert.match(res.headers.get('content-type'), /text\/event-stream/);
  await res.body.cancel();
  res = await fetch(`${gw.url}/mcp`, { method: 'PUT', headers });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get('allow'), 'GET, POST, DELETE');
  // A session is the key's that opened it.
  const { secret } = await createKey(gw, { name: 'other' });
  res = await waitFor(async () => {
    const r = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { ...headers, authorization: `Bearer ${secret}` });
    return r.status === 401 ? null : r;
  }, 5000);
  assert.equal(res.status, 404, 'another key cannot use the session');

  // Still serving: the session works, then DELETE ends it.
  const ok = await (await post(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }))).json();
  assert.ok(ok.result.tools.length > 0);
  res = await fetch(`${gw.url}/mcp`, { method: 'DELETE', headers });
  assert.equal(res.status, 200);
  res = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  assert.equal(res.status, 404, `session ${session} ended`);
  assert.equal(gw.proc.exitCode, null);
});

test('a server killed mid-test drops out while the other keeps working; both come back', async () => {
  // The HTTP server goes away: its tools drop out of the list, its calls get a clear error.
  await stop(remote);
  const withoutRemote = await waitFor(async () => {
    const all = names((await master.listTools()).tools);
    return all.some((n) => n.startsWith('remote__')) ? null : all;
  }, 10000);
  assert.ok(withoutRemote, 'the remote tools drop out');
  assert.ok(withoutRemote.includes('local__echo'), 'the local ones stay');
  await assert.rejects(master.callTool({ name: 'remote__echo', arguments: { message: 'x' } }), (e) => {
    assert.ok(e instanceof McpError, String(e));
    assert.match(e.message, /remote/);
    return true;
  });
  assert.match(textOf(await master.callTool({ name: 'local__echo', arguments: { message: 'still' } })), /still/);

  // The stdio server's process dies: the gateway restarts it.
  const [pid] = childrenOf(gw.proc.pid, 'stdio');
  assert.ok(pid, 'the stdio server is a child of the gateway');
  process.kill(pid, 'SIGKILL');
  const back = await waitFor(async () => {
    const again = childrenOf(gw.proc.pid, 'stdio');
    if (again.length === 0 || again[0] === pid) return false;
    try {
      return /back/.test(textOf(await master.callTool({ name: 'local__echo', arguments: { message: 'back' } })));
    } catch { return false; }
  }, 20000, 100);
  assert.equal(back, true, 'the stdio server is restarted and answers');
  assert.ok(metricValue(await metrics(gw), 'sluice_mcp_server_restarts_total', { server: 'local' }) >= 1);

  // The HTTP server returns on the same port: the gateway initializes it again.
  remote = await startMcpHttp(remotePort);
  const again = await waitFor(async () => names((await master.listTools()).tools).includes('remote__echo'), 40000, 250);
  assert.equal(again, true, 'the remote tools come back');
  assert.equal(textOf(await master.callTool({ name: 'remote__echo', arguments: { message: 'hi' } })), 'Echo: hi');
});

test('an HTTP server that restarts between two calls: the next call opens a new session and succeeds', async () => {
  assert.equal(textOf(await master.callTool({ name: 'remote__echo', arguments: { message: 'before' } })), 'Echo: before');
  // No call reaches the gateway while the server is away, so it still holds the old session.
  await stop(remote);
  remote = await startMcpHttp(remotePort);
  assert.equal(textOf(await master.callTool({ name: 'remote__echo', arguments: { message: 'after' } })), 'Echo: after');
  assert.ok(names((await master.listTools()).tools).includes('remote__echo'));
});
