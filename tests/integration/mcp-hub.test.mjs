// The MCP hub against a stdio server that misbehaves on purpose (tests/fixtures/mcp/
// stub-server.mjs): a tool that never answers, one that asks the gateway for a ping first, one
// that writes a line past the gateway's bound, one that exits. Raw JSON-RPC over /mcp: every
// call gets an answer, the gateway keeps serving, and the server comes back after each death.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway, gatewayYaml, admin, metrics, metricValue, waitFor, MASTER } from '../lib/harness.mjs';

const STUB = fileURLToPath(new URL('../fixtures/mcp/stub-server.mjs', import.meta.url));
let gw, headers;

async function rpc(method, params, id = 1) {
  const res = await fetch(`${gw.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) });
  assert.equal(res.status, 200, `${method}: HTTP ${res.status}`);
  return res.json();
}
const call = (name) => rpc('tools/call', { name: `stub__${name}`, arguments: {} });
const hello = async () => {
  try { return (await call('hello')).result?.content?.[0]?.text === 'hello'; } catch { return false; }
};

before(async () => {
  const extra = `mcp:\n  servers:\n    - {name: stub, command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(STUB)}], timeout: 2s}\n`;
  gw = await startGateway(gatewayYaml({ channels: [], extra }));
  assert.equal(await waitFor(async () => metricValue(await metrics(gw), 'sluice_mcp_server_up', { server: 'stub' }) === 1, 15000), true);
  headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${MASTER}` };
  const init = await fetch(`${gw.url}/mcp`, {
    method: 'POST', headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  headers['mcp-session-id'] = init.headers.get('mcp-session-id');
});
after(async () => { await gw?.stop(); });

test('a tool that never answers gets the timeout as an error; the server stays up', async () => {
  const r = await call('hang');
  assert.equal(r.error?.code, -32000, JSON.stringify(r));
  assert.match(r.error.message, /timeout/);
  assert.equal(await waitFor(hello, 10000, 100), true, 'the next calls are answered');
  const row = await waitFor(async () => {
    const page = await (await admin(gw, '/logs?limit=100')).json();
    return (page.data ?? []).find((x) => x.channel === 'stub' && x.model === 'hang');
  }, 5000);
  assert.equal(row?.status, 504);
});

test('a server that asks the gateway for a ping gets its answer', async () => {
  const r = await call('ask');
  assert.equal(r.result?.content?.[0]?.text, 'the gateway answered my ping', JSON.stringify(r));
});

test('a line past the bound takes the server down; it is restarted and answers again', async () => {
  const before = metricValue(await metrics(gw), 'sluice_mcp_server_restarts_total', { server: 'stub' });
  const r = await call('flood');
  assert.equal(r.error?.code, -32000, JSON.stringify(r).slice(0, 300));
  assert.equal(await waitFor(hello, 15000, 100), true, 'the server answers again');
  assert.ok(metricValue(await metrics(gw), 'sluice_mcp_server_restarts_total', { server: 'stub' }) > before);
});

test('a server that exits mid-call: the call fails at once, the server is restarted', async () => {
  const r = await call('crash');
  assert.equal(r.error?.code, -32000, JSON.stringify(r));
  assert.match(r.error.message, /exited|closed|unavailable/);
  assert.equal(await waitFor(hello, 15000, 100), true, 'the server answers again');
  const listed = await rpc('tools/list', {});
  assert.deepEqual(listed.result.tools.map((t) => t.name).sort(), ['stub__ask', 'stub__crash', 'stub__flood', 'stub__hang', 'stub__hello']);
  assert.equal(gw.proc.exitCode, null);
});
