// A recording upstream: a TCP tap in front of the real `sluice mock` that keeps every byte the
// gateway sent, split into the HTTP/1.1 requests it framed, so a test can assert exactly what
// reached the provider (request line, header bytes, body) and that nothing else did.
// The tap parses strictly (CRLF lines, Content-Length or chunked): a request it cannot frame is
// recorded with `malformed` set, which a test should treat as a failure of the gateway.
import net from 'node:net';
import { startMock } from './harness.mjs';

// Splits a raw byte stream into requests. Returns {requests, rest}: rest is an incomplete tail.
export function splitRequests(buf) {
  const requests = [];
  let off = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', off, 'latin1');
    if (end < 0) break;
    const head = buf.subarray(off, end).toString('latin1');
    const lines = head.split('\r\n');
    const [method, target, version, ...extra] = lines[0].split(' ');
    const headers = [];
    let malformed = extra.length > 0 || !version || head.includes('\n\r') || /[^\r]\n/.test(head);
    for (const l of lines.slice(1)) {
      const colon = l.indexOf(':');
      if (colon <= 0 || /[\s]/.test(l.slice(0, colon))) { malformed = true; continue; }
      headers.push([l.slice(0, colon), l.slice(colon + 1).trim()]);
    }
    const get = (n) => headers.filter(([k]) => k.toLowerCase() === n).map(([, v]) => v);
    let bodyStart = end + 4;
    let body;
    const cl = get('content-length');
    const te = get('transfer-encoding');
    if (te.length) {
      // chunked: size CRLF data CRLF ... 0 CRLF CRLF
      const parts = [];
      let p = bodyStart;
      let ok = false;
      for (;;) {
        const le = buf.indexOf('\r\n', p, 'latin1');
        if (le < 0) break;
        const size = parseInt(buf.subarray(p, le).toString('latin1'), 16);
        if (!Number.isFinite(size)) { malformed = true; break; }
        if (buf.length < le + 2 + size + 2) break;
        if (size === 0) { p = le + 4; ok = true; break; }
        parts.push(buf.subarray(le + 2, le + 2 + size));
        p = le + 2 + size + 2;
      }
      if (!ok && !malformed) break;  // incomplete
      body = Buffer.concat(parts);
      off = p;
    } else {
      const n = cl.length ? Number(cl[0]) : 0;
      if (cl.length > 1 || !Number.isInteger(n)) malformed = true;
      if (buf.length < bodyStart + n) break;
      body = buf.subarray(bodyStart, bodyStart + n);
      off = bodyStart + n;
    }
    requests.push({ method, target, version, headers, header: (n) => get(n.toLowerCase())[0], rawHead: head, body: body.toString('utf8'), malformed });
    if (malformed) { off = buf.length; break; }
  }
  return { requests, rest: buf.subarray(off) };
}

// Starts the mock and a tap in front of it. `url` is the tap's address (give it to channels);
// `requests()` lists every request received so far, in order, across connections.
export async function startRecordingUpstream(mockArgs = []) {
  const mock = await startMock(mockArgs);
  const conns = [];
  const server = net.createServer((client) => {
    const rec = { raw: [] };
    conns.push(rec);
    const up = net.connect(mock.port, '127.0.0.1');
    client.on('data', (d) => { rec.raw.push(d); up.write(d); });
    up.on('data', (d) => client.write(d));
    client.on('end', () => up.end());
    up.on('end', () => client.end());
    client.on('error', () => up.destroy());
    up.on('error', () => client.destroy());
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  return {
    mock, port, url: `http://127.0.0.1:${port}`,
    requests() { return conns.flatMap((c) => splitRequests(Buffer.concat(c.raw)).requests); },
    clear() { for (const c of conns) c.raw.length = 0; },
    async stop() { server.close(); await mock.stop(); },
  };
}
