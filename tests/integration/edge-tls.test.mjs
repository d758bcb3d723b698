// TLS at the edge (server.tls): streaming over HTTPS, protocol versions, ALPN, renegotiation,
// plain HTTP on the TLS port, and certificate rotation (file change, SIGHUP, config reload, a
// broken new certificate) while older connections carry on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMock, startGateway, gatewayYaml, tempDir, sleep, waitFor, metricValue, MASTER, BIN } from '../lib/harness.mjs';

let dir, mock, gw, ca;
const CERT = () => join(dir, 'edge.pem');
const KEY = () => join(dir, 'edge.key');

function sh(...args) { execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' }); }

// A certificate for localhost and 127.0.0.1 signed by the test CA, written to `name`.pem/.key.
// Its subject CN tells the generations apart.
function issue(name, cn) {
  sh('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
  writeFileSync(join(dir, `${name}.ext`), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  sh('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`,
    '-days', '2', '-extfile', `${name}.ext`);
}

// Puts a generation in place over the served files (the key first: a poll between the two
// writes sees a mismatched pair and keeps the running one until the certificate follows).
function install(name) {
  copyFileSync(join(dir, `${name}.key`), KEY());
  copyFileSync(join(dir, `${name}.pem`), CERT());
}

function tlsYaml(cert = CERT(), key = KEY()) {
  return gatewayYaml({ channels: [{ name: 'mock', url: mock.url }], server: { tls: { cert, key } } });
}

before(async () => {
  dir = tempDir();
  sh('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Sluice Edge Test CA');
  ca = readFileSync(join(dir, 'ca.pem'));
  for (const g of ['gen1', 'gen2', 'gen3', 'gen4']) issue(g, `sluice-edge-${g}`);
  install('gen1');
  mock = await startMock([]);
  gw = await startGateway(tlsYaml());
});
after(async () => {
  await gw?.stop();
  await mock?.stop();
});

// The subject CN of the certificate a new connection is shown.
function peerCn(port = gw.port) {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca }, () => {
      const cn = s.getPeerCertificate().subject.CN;
      s.end();
      resolve(cn);
    });
    s.on('error', reject);
  });
}

async function waitForCn(cn, ms = 20000) {
  const until = Date.now() + ms;
  let seen;
  while (Date.now() < until) {
    seen = await peerCn().catch((e) => e.message);
    if (seen === cn) return seen;
    await sleep(100);
  }
  return seen;
}

// A chat completion over HTTPS with node's client; resolves with the response once its headers
// are in (the body is read by the caller).
function httpsChat(body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = https.request(`${gw.url}/v1/chat/completions`, {
      method: 'POST', ca, servername: 'localhost', agent: false,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}`, ...headers },
    }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function readAll(res) {
  let text = '';
  for await (const c of res) text += c;
  return text;
}

function sseEvents(text) {
  return text.split('\n\n').filter((e) => e.startsWith('data:')).map((e) => e.slice(5).trim())
    .map((d) => (d === '[DONE]' ? d : JSON.parse(d)));
}

function run(cmd, args, { input, ms = 20000 } = {}) {
  return new Promise((resolve) => {
    const p = execFile(cmd, args, { timeout: ms }, (err, stdout, stderr) =>
      resolve({ code: err ? (err.code ?? 1) : 0, out: stdout + stderr }));
    if (input !== undefined) p.stdin.end(input);
  });
}

async function metrics() {
  const res = await new Promise((resolve, reject) => {
    https.get(`${gw.url}/metrics`, { ca, servername: 'localhost', agent: false }, resolve).on('error', reject);
  });
  return readAll(res);
}

test('a streamed chat completion over HTTPS', async () => {
  const res = await httpsChat({ model: 'mock-1', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.statusCode, 200);
  assert.match(res.headers['content-type'], /text\/event-stream/);
  const events = sseEvents(await readAll(res));
  assert.equal(events.at(-1), '[DONE]');
  assert.ok(events.some((e) => e !== '[DONE]' && e.choices?.[0]?.delta?.content), 'content chunks arrive');
});

test("the README's curl with --cacert streams", async () => {
  const url = gw.url.replace('127.0.0.1', 'localhost');
  const { code, out } = await run('curl', ['-sSN', '--resolve', `localhost:${gw.port}:127.0.0.1`,
    '--cacert', join(dir, 'ca.pem'), `${url}/v1/chat/completions`,
    '-H', `Authorization: Bearer ${MASTER}`, '-H', 'Content-Type: application/json',
    '-d', '{"model":"mock-1","stream":true,"messages":[{"role":"user","content":"Hello"}]}']);
  assert.equal(code, 0, out);
  assert.match(out, /data: \[DONE\]/);
});

test('ALPN: http/1.1 is selected; a client offering only h2 is refused', async () => {
  const proto = await new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: gw.port, servername: 'localhost', ca, ALPNProtocols: ['h2', 'http/1.1'] },
      () => { resolve(s.alpnProtocol); s.end(); });
    s.on('error', reject);
  });
  assert.equal(proto, 'http/1.1');
  const err = await new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port: gw.port, servername: 'localhost', ca, ALPNProtocols: ['h2'] },
      () => { resolve(null); s.end(); });
    s.on('error', resolve);
  });
  assert.ok(err, 'the handshake must fail');
  assert.match(String(err.code ?? err.message), /ALERT_NO_APPLICATION_PROTOCOL|no application protocol/i);
});

test('TLS 1.1 is refused, TLS 1.2 and 1.3 are accepted', async () => {
  // SECLEVEL=0 lets this client offer TLS 1.1 at all, so the refusal is the server's.
  const old = await run('openssl', ['s_client', '-connect', `127.0.0.1:${gw.port}`, '-servername', 'localhost',
    '-tls1_1', '-cipher', 'DEFAULT@SECLEVEL=0'], { input: '' });
  assert.notEqual(old.code, 0, old.out);
  assert.match(old.out, /alert protocol version|unsupported protocol|wrong version number/i);
  assert.doesNotMatch(old.out, /no protocols available/i);
  for (const v of ['-tls1_2', '-tls1_3']) {
    const ok = await run('openssl', ['s_client', '-connect', `127.0.0.1:${gw.port}`, '-servername', 'localhost', v,
      '-CAfile', join(dir, 'ca.pem'), '-verify_return_error'], { input: '' });
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, v === '-tls1_2' ? /TLSv1\.2/ : /TLSv1\.3/);
  }
});

test('renegotiation is refused and the gateway keeps serving', async () => {
  const p = spawn('openssl', ['s_client', '-connect', `127.0.0.1:${gw.port}`, '-servername', 'localhost', '-tls1_2',
    '-CAfile', join(dir, 'ca.pem')], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  p.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => p.on('exit', resolve));
  await waitFor(() => /Verify return code/.test(out));
  assert.match(out, /Verify return code: 0/);
  p.stdin.write('R\n');
  const timer = setTimeout(() => p.kill('SIGKILL'), 10000);
  await exited;
  clearTimeout(timer);
  assert.match(out, /RENEGOTIATING/);
  assert.match(out, /no renegotiation/i);
  const res = await httpsChat({ model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.statusCode, 200);
  await readAll(res);
});

test('plain HTTP on the TLS port gets a 400 in the OpenAI error shape and the connection closes', async () => {
  const text = await new Promise((resolve, reject) => {
    const s = net.connect(gw.port, '127.0.0.1', () => s.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'));
    let buf = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`the connection stayed open; got: ${buf}`)); }, 10000);
    s.on('data', (d) => { buf += d; });
    s.on('close', () => { clearTimeout(timer); resolve(buf); });
    s.on('error', () => {});
  });
  assert.match(text, /^HTTP\/1\.1 400 /);
  const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
  assert.equal(body.error.type, 'invalid_request_error');
  assert.match(body.error.message, /this port speaks HTTPS/);
  // curl, the way a user would find out.
  const { out } = await run('curl', ['-s', `http://127.0.0.1:${gw.port}/healthz`]);
  assert.match(out, /this port speaks HTTPS/);
});

test('a silent client is dropped at the handshake deadline', async () => {
  const g = await startGateway(gatewayYaml({ channels: [{ name: 'mock', url: mock.url }],
    server: { tls: { cert: CERT(), key: KEY() }, header_timeout: '300ms' } }));
  try {
    const closed = await new Promise((resolve) => {
      const s = net.connect(g.port, '127.0.0.1');
      const timer = setTimeout(() => { s.destroy(); resolve(false); }, 10000);
      s.on('close', () => { clearTimeout(timer); resolve(true); });
      s.on('error', () => {});
    });
    assert.ok(closed, 'the server closes a connection that never starts a handshake');
  } finally {
    await g.stop();
  }
});

test('a new certificate is picked up by new connections while an open stream finishes intact', async () => {
  assert.equal(await peerCn(), 'sluice-edge-gen1');
  const before = metricValue(await metrics(), 'sluice_tls_reloads_total', { result: 'ok' });
  const chunks = 30;
  const res = await httpsChat({ model: 'mock-1', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    { 'x-mock-chunks': String(chunks), 'x-mock-chunk-interval-ms': '100' });
  assert.equal(res.statusCode, 200);
  let text = '';
  const done = (async () => { for await (const c of res) text += c; })();
  assert.ok(await waitFor(() => text.includes('data:')), 'the stream started');  // on the old certificate
  install('gen2');
  assert.equal(await waitForCn('sluice-edge-gen2'), 'sluice-edge-gen2');
  await done;
  const events = sseEvents(text);
  assert.equal(events.at(-1), '[DONE]');
  const content = events.filter((e) => e !== '[DONE]' && e.choices?.[0]?.delta?.content);
  assert.equal(content.length, chunks, 'every chunk of the stream opened before the rotation arrived');
  const afterOk = metricValue(await metrics(), 'sluice_tls_reloads_total', { result: 'ok' });
  assert.ok(afterOk > before, `sluice_tls_reloads_total{result="ok"} went from ${before} to ${afterOk}`);
});

test('a broken new certificate keeps the old one serving', async () => {
  await waitForCn('sluice-edge-gen2');
  const before = metricValue(await metrics(), 'sluice_tls_reloads_total', { result: 'failed' });
  writeFileSync(CERT(), '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n');
  await waitFor(() => /tls reload \(file change\) failed, keeping the running certificate/.test(gw.proc.output), 20000);
  assert.match(gw.proc.output, /tls reload \(file change\) failed, keeping the running certificate: the certificate \S+ is not a PEM/);
  assert.equal(await peerCn(), 'sluice-edge-gen2');
  const res = await httpsChat({ model: 'mock-1', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.statusCode, 200);
  await readAll(res);
  const failed = metricValue(await metrics(), 'sluice_tls_reloads_total', { result: 'failed' });
  assert.ok(failed > before, `sluice_tls_reloads_total{result="failed"} went from ${before} to ${failed}`);
  // A key that belongs to another certificate is refused the same way.
  copyFileSync(join(dir, 'gen3.key'), KEY());
  copyFileSync(join(dir, 'gen2.pem'), CERT());
  await waitFor(() => /does not match the certificate/.test(gw.proc.output), 20000);
  assert.match(gw.proc.output, /does not match the certificate/);
  assert.equal(await peerCn(), 'sluice-edge-gen2');
  install('gen2');
});

test('SIGHUP reloads the certificate', async () => {
  install('gen3');
  gw.proc.kill('SIGHUP');
  assert.equal(await waitForCn('sluice-edge-gen3'), 'sluice-edge-gen3');
  await waitFor(() => /tls reload \(SIGHUP\): certificate/.test(gw.proc.output));
  assert.match(gw.proc.output, /tls reload \(SIGHUP\): certificate \S+ loaded/);
});

test('pointing server.tls at other files on a config reload takes effect without a restart', async () => {
  gw.writeConfig(tlsYaml(join(dir, 'gen4.pem'), join(dir, 'gen4.key')));
  assert.equal(await waitForCn('sluice-edge-gen4'), 'sluice-edge-gen4');
  assert.equal(gw.proc.exitCode, null);
});

test('sluice check reports a server.tls that does not load, with its line', async () => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, tlsYaml(join(dir, 'missing.pem'), KEY()));
  const r = await run(BIN, ['check', '-c', bad]);
  assert.notEqual(r.code, 0);
  assert.match(r.out, /bad\.yaml:\d+:\d+: server\.tls: cannot read the certificate \S+missing\.pem/);
  writeFileSync(bad, tlsYaml(join(dir, 'gen1.pem'), join(dir, 'gen2.key')));
  const m = await run(BIN, ['check', '-c', bad]);
  assert.notEqual(m.code, 0);
  assert.match(m.out, /server\.tls: the private key \S+ does not match the certificate/);
});

test('SIGTERM: an in-flight TLS stream finishes, an idle TLS connection is closed, the process exits 0', async () => {
  install('gen1');
  const g = await startGateway(tlsYaml());
  // An idle keep-alive connection after one request.
  const idle = tls.connect({ host: '127.0.0.1', port: g.port, servername: 'localhost', ca });
  await new Promise((resolve, reject) => { idle.once('secureConnect', resolve); idle.once('error', reject); });
  let idleText = '';
  const idleClosed = new Promise((resolve) => idle.on('close', resolve));
  idle.on('data', (d) => { idleText += d; });
  idle.on('error', () => {});
  idle.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
  assert.ok(await waitFor(() => idleText.includes('"ok"')), 'the idle connection was answered');
  // A slow stream in flight.
  const res = await new Promise((resolve, reject) => {
    const req = https.request(`${g.url}/v1/chat/completions`, {
      method: 'POST', ca, servername: 'localhost', agent: false,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}`,
        'x-mock-chunks': '10', 'x-mock-chunk-interval-ms': '100' },
    }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'mock-1', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
  });
  let text = '';
  const done = (async () => { for await (const c of res) text += c; })();
  assert.ok(await waitFor(() => text.includes('data:')), 'the stream started');
  const exited = g.stop('SIGTERM');
  await done;
  assert.equal(sseEvents(text).at(-1), '[DONE]');
  await idleClosed;
  assert.equal(await exited, 0);
});
