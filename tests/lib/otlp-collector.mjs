// An OTLP/HTTP collector for tests: a plain node HTTP server on a free loopback port that takes
// POST /v1/traces (JSON encoding), answers 200 {} (or the next status queued with `answer`), and
// keeps every export: its headers and the parsed body. `spans()` flattens them, each span with its
// resource's attributes beside it; `attrs(span)` reads a span's attributes into a plain object
// (string, int (from its decimal string), double and bool values as the OTLP JSON mapping has them).
import { createServer } from 'node:http';
import { once } from 'node:events';

export function attrs(list) {
  const out = {};
  for (const a of list ?? []) {
    const v = a.value ?? {};
    if ('stringValue' in v) out[a.key] = v.stringValue;
    else if ('intValue' in v) out[a.key] = Number(v.intValue);
    else if ('doubleValue' in v) out[a.key] = v.doubleValue;
    else if ('boolValue' in v) out[a.key] = v.boolValue;
    else out[a.key] = v;
  }
  return out;
}

export async function startCollector() {
  const exports = [];
  const statuses = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      let body = null;
      try { body = JSON.parse(raw); } catch { /* kept raw: a test fails on it */ }
      exports.push({ method: req.method, url: req.url, headers: req.headers, body, raw });
      const status = statuses.length ? statuses.shift() : 200;
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': 2 });
      res.end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url, exports,
    answer(...s) { statuses.push(...s); },
    spans() {
      const out = [];
      for (const e of exports) {
        for (const rs of e.body?.resourceSpans ?? []) {
          const resource = attrs(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) out.push({ ...s, attrs: attrs(s.attributes), resource, scope: ss.scope });
        }
      }
      return out;
    },
    // Every span of the trace whose request span has sluice.request_id = id.
    traceOf(id) {
      const all = this.spans();
      const root = all.find((s) => s.attrs['sluice.request_id'] === id);
      return root ? { root, spans: all.filter((s) => s.traceId === root.traceId) } : null;
    },
    async stop() { server.closeAllConnections(); server.close(); },
  };
}
