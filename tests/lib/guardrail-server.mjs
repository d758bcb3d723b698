// A guardrail webhook for tests: a plain node HTTP server on a free loopback port whose verdict
// depends on the text it is asked to review (every message's text, joined):
//   contains "BLOCK"   -> 200 {"action":"block","reason":"blocked by test guardrail: BLOCK"}
//   contains "WARN"    -> 200 {"action":"warn","reason":"warned by test guardrail"}
//   contains "ERROR"   -> 500 {"error":"test guardrail failure"}
//   contains "GARBAGE" -> 200 with a body that is not JSON
//   contains "HANG"    -> never answers (the connection is held until the server stops)
//   otherwise ("ALLOW" or anything) -> 200 {"action":"allow"}
// Checked in that order, so a text naming two words gets the first one's answer. A review of an
// answer (phase "response") is decided the same way on the answer's text, by the lower-case words
// "resp-block", "resp-warn", "resp-error" (so a request can carry them without tripping its own
// review). Every request is recorded (method, url, headers, parsed body or raw text) in
// `received`.
import { createServer } from 'node:http';
import { once } from 'node:events';

export const BLOCK_REASON = 'blocked by test guardrail: BLOCK';

export async function startGuardrail() {
  const received = [];
  const hanging = new Set();
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      let body = null;
      try { body = JSON.parse(raw); } catch { /* recorded raw */ }
      received.push({ method: req.method, url: req.url, headers: req.headers, body, raw });
      const response = body?.phase === 'response';
      const text = response ? String(body.response ?? '').replace(/resp-(block|warn|error)/g, (_, w) => w.toUpperCase())
        : (body?.messages ?? []).map((m) => m.text ?? '').join('\n');
      const json = (status, obj) => {
        const s = JSON.stringify(obj);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
        res.end(s);
      };
      if (text.includes('BLOCK')) return json(200, { action: 'block', reason: BLOCK_REASON });
      if (text.includes('WARN')) return json(200, { action: 'warn', reason: 'warned by test guardrail' });
      if (text.includes('ERROR')) return json(500, { error: 'test guardrail failure' });
      if (text.includes('GARBAGE')) {
        const s = '<html>this is not json';
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(s) });
        return res.end(s);
      }
      if (text.includes('HANG')) { hanging.add(res); return undefined; }
      return json(200, { action: 'allow' });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    // The recorded requests whose reviewed text contains `needle`.
    find(needle) { return received.filter((r) => (r.body?.messages ?? []).some((m) => (m.text ?? '').includes(needle))); },
    async stop() {
      for (const res of hanging) { try { res.destroy(); } catch {} }
      hanging.clear();
      server.closeAllConnections?.();
      await new Promise((r) => server.close(() => r()));
    },
  };
}
