// TLS to upstreams: SNI, certificate verification against the trust store (OpenSSL's default
// paths, which SSL_CERT_FILE points at here), host-name checks, and DNS for a host name.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMock, startGateway, chat, readSse, tempDir } from '../lib/harness.mjs';

let dir, mock, front, frontPort, lastSni;
const started = [];

function sh(...args) { execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' }); }

before(async () => {
  dir = tempDir();
  // A private CA and a server certificate for "localhost" only.
  sh('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Sluice Test CA');
  sh('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost\n');
  sh('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'ext.cnf');
  mock = await startMock([]);
  // A TLS front that forwards to the mock, recording the SNI name it was asked for.
  front = https.createServer({ key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')) }, (req, res) => {
    lastSni = req.socket.servername;
    const up = http.request({ host: '127.0.0.1', port: mock.port, path: req.url, method: req.method, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise((r) => front.listen(0, '127.0.0.1', r));
  frontPort = front.address().port;
});
after(async () => {
  for (const g of started) await g.stop();
  front?.close();
  await mock?.stop();
});

async function gateway(baseUrl, env) {
  const prev = process.env.SSL_CERT_FILE;
  if (env) process.env.SSL_CERT_FILE = env; else delete process.env.SSL_CERT_FILE;
  try {
    const g = await startGateway({ channels: [{ name: 'tls', base_url: baseUrl }], routing: { max_retries: 0 } });
    started.push(g);
    return g;
  } finally {
    if (prev === undefined) delete process.env.SSL_CERT_FILE; else process.env.SSL_CERT_FILE = prev;
  }
}

test('a trusted certificate for the host name: streams and plain requests work, SNI is sent', async () => {
  const gw = await gateway(`https://localhost:${frontPort}/v1`, join(dir, 'ca.pem'));
  const res = await chat(gw, { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.status, 200);
  assert.equal((await readSse(res)).events.at(-1), '[DONE]');
  const plain = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(plain.status, 200);
  await plain.json();
  assert.equal(lastSni, 'localhost');
});

test('an untrusted certificate is refused', async () => {
  const gw = await gateway(`https://localhost:${frontPort}/v1`, undefined);
  const res = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.status, 502);
  assert.match((await res.json()).error.message, /certificate verify failed/);
});

test('a certificate for another name is refused', async () => {
  const gw = await gateway(`https://127.0.0.1:${frontPort}/v1`, join(dir, 'ca.pem'));
  const res = await chat(gw, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.status, 502);
  assert.match((await res.json()).error.message, /certificate verify failed/);
});
