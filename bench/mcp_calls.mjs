// bench/mcp_calls.mjs — MCP tool calls over Streamable HTTP, timed one by one (used by bench/mcp.sh).
//   node bench/mcp_calls.mjs URL KEY TOOL CONCURRENCY CALLS
// Opens a session (initialize, notifications/initialized) on URL, then CONCURRENCY callers each
// send CALLS tools/call requests of TOOL ({"message": "..."}, server-everything's echo) one after
// another on keep-alive connections; each call is timed from sending it to the whole answer read
// (a JSON body or the SSE event carrying the result). Prints one JSON line: calls, failures,
// mean / p50 / p90 / p99 ms, and the first failure's text. KEY "-" sends no Authorization.
import http from 'node:http';

const [url, key, tool, concArg, callsArg] = process.argv.slice(2);
const concurrency = Number(concArg);
const calls = Number(callsArg);
const target = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

function post(body, session) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  };
  if (key !== '-') headers.authorization = `Bearer ${key}`;
  if (session) headers['mcp-session-id'] = session;
  const data = JSON.stringify(body);
  headers['content-length'] = Buffer.byteLength(data);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers, agent },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      });
    req.on('error', reject);
    req.end(data);
  });
}

// The JSON-RPC message of an answer: the body itself, or the SSE event whose data has an id.
function messageOf(res) {
  if (!String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) return res.text ? JSON.parse(res.text) : null;
  for (const ev of res.text.split(/\r?\n\r?\n/)) {
    const data = ev.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
    if (!data) continue;
    const m = JSON.parse(data);
    if (m.id !== undefined) return m;
  }
  return null;
}

const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {
  protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'sluice-bench', version: '1' } } });
if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${init.text.slice(0, 300)}`);
const session = init.headers['mcp-session-id'];
await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);

const times = [];
let failures = 0;
let firstFailure = '';
let nextId = 1;
async function caller() {
  for (let i = 0; i < calls; i++) {
    const id = nextId++;
    const t0 = process.hrtime.bigint();
    let ok = false;
    try {
      const res = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: { message: `call ${id}` } } }, session);
      const m = res.status === 200 ? messageOf(res) : null;
      ok = !!m && m.id === id && !m.error && !m.result?.isError && JSON.stringify(m.result).includes(`call ${id}`);
      if (!ok && !firstFailure) firstFailure = `${res.status} ${res.text.slice(0, 300)}`;
    } catch (e) {
      if (!firstFailure) firstFailure = String(e);
    }
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (ok) times.push(ms);
    else failures++;
  }
}
await Promise.all(Array.from({ length: concurrency }, caller));
agent.destroy();
times.sort((a, b) => a - b);
const pct = (p) => (times.length ? times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))] : null);
const mean = times.length ? times.reduce((a, b) => a + b, 0) / times.length : null;
console.log(JSON.stringify({ calls: times.length, failed: failures, mean_ms: mean, p50_ms: pct(50), p90_ms: pct(90),
  p99_ms: pct(99), first_failure: firstFailure || null }));
