// OpenTelemetry traces (telemetry:): every request's spans reach an OTLP/HTTP collector on
// loopback as the OTLP JSON mapping has them, with the GenAI semantic conventions' attributes;
// attempts, their connects and first bytes, and the cache lookup are children; a client's W3C
// traceparent continues its trace and the upstream (a recording tap in front of the real mock) is
// sent Sluice's own traceparent, exactly one, never the client's bytes (the attack table); an
// unsampled parent and sample_ratio 0 export nothing; content only with capture_content (after
// redaction); a collector that is down costs the client nothing and is counted; spans are
// drained at shutdown.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, sendChat, readSseEvents, metrics, metricValue, waitFor, MASTER } from '../lib/harness.mjs';
import { startRecordingUpstream } from '../lib/recording-upstream.mjs';
import { startCollector } from '../lib/otlp-collector.mjs';

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TP_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;

let up, collector, gw;
const started = [];

const channels = (url) => [
  // Tried first for gpt-4o, and refused: nothing listens on port 9.
  { name: 'dead', base_url: 'http://127.0.0.1:9/v1', models: ['gpt-4o'], priority: 1 },
  { name: 'oa', url, models: ['gpt-*'], priority: 2 },
  { name: 'an', type: 'anthropic', base_url: url, models: ['claude-*'] },
];
const telemetryYaml = (url, more = []) => [
  'telemetry:', `  otlp_endpoint: "${url}"`, '  service_name: sluice-it', '  headers: {X-Collector-Key: "ck-secret-1"}',
  ...more.map((l) => `  ${l}`),
  'cache:', '  enabled: true', '',
].join('\n');

before(async () => {
  up = await startRecordingUpstream();
  collector = await startCollector();
  started.push(up, collector);
  gw = await startGateway({ channels: channels(up.url), routing: { max_retries: 2 }, extra: telemetryYaml(collector.url) });
  started.push(gw);
});
after(async () => { for (const p of started.reverse()) await p.stop(); });

async function traceOf(id) {
  const t = await waitFor(() => collector.traceOf(id), 10000);
  assert.ok(t, `no spans exported for request ${id}`);
  return t;
}
// What the upstream received for the request whose body holds `marker`.
function upstreamGot(marker) {
  const got = up.requests().filter((r) => r.body.includes(marker));
  assert.equal(got.length, 1, `one upstream request for ${marker}`);
  return got[0];
}
const childrenOf = (spans, parent) => spans.filter((s) => s.parentSpanId === parent.spanId);

test('a request starts a trace: the request span, its attempts, their connects and first bytes, the cache lookup', async () => {
  const res = await sendChat(gw, 'openai', { model: 'gpt-4o', user: 'trace me: a new trace' });
  assert.equal(res.status, 200);
  const answer = await res.json();
  const id = res.headers.get('x-request-id');
  const { root, spans } = await traceOf(id);

  // The export: POST /v1/traces, JSON, the configured headers, the resource.
  const exp = collector.exports.find((e) => e.raw.includes(id));
  assert.equal(exp.method, 'POST');
  assert.equal(exp.url, '/v1/traces');
  assert.match(exp.headers['content-type'], /^application\/json/);
  assert.equal(exp.headers['x-collector-key'], 'ck-secret-1');
  assert.equal(root.resource['service.name'], 'sluice-it');
  assert.match(root.resource['service.version'], /^\d+\.\d+\.\d+/);
  assert.equal(root.scope.name, 'sluice');

  // The request's span: a new trace (no parent), SERVER, the GenAI attributes.
  assert.match(root.traceId, /^[0-9a-f]{32}$/);
  assert.match(root.spanId, /^[0-9a-f]{16}$/);
  assert.equal(root.parentSpanId, undefined);
  assert.equal(root.kind, 2);
  assert.equal(root.name, 'chat gpt-4o');
  assert.match(root.startTimeUnixNano, /^\d{19}$/);
  assert.ok(BigInt(root.endTimeUnixNano) >= BigInt(root.startTimeUnixNano));
  const a = root.attrs;
  assert.equal(a['gen_ai.operation.name'], 'chat');
  assert.equal(a['gen_ai.request.model'], 'gpt-4o');
  assert.equal(a['gen_ai.response.model'], 'gpt-4o');
  assert.equal(a['gen_ai.provider.name'], 'openai');
  assert.equal(a['gen_ai.usage.input_tokens'], answer.usage.prompt_tokens);
  assert.equal(a['gen_ai.usage.output_tokens'], answer.usage.completion_tokens);
  assert.equal(a['http.request.method'], 'POST');
  assert.equal(a['url.path'], '/v1/chat/completions');
  assert.equal(a['http.response.status_code'], 200);
  assert.equal(a['sluice.channel'], 'oa');
  assert.equal(a['sluice.attempts'], 2);
  assert.equal(a['sluice.cache'], 'miss');
  assert.equal(a['sluice.stream'], false);
  assert.equal(a['gen_ai.input.messages'], undefined, 'no content without capture_content');
  assert.deepEqual(root.status, {});

  // Children: the cache lookup and two attempts (CLIENT), the first refused at connect.
  const kids = childrenOf(spans, root);
  const lookup = kids.find((s) => s.name === 'cache lookup');
  assert.ok(lookup, 'cache lookup span');
  assert.equal(lookup.attrs['sluice.cache'], 'miss');
  const attempts = kids.filter((s) => s.kind === 3).sort((x, y) => x.attrs['sluice.attempt'] - y.attrs['sluice.attempt']);
  assert.equal(attempts.length, 2);
  const [dead, served] = attempts;
  assert.equal(dead.attrs['sluice.channel'], 'dead');
  assert.equal(dead.status.code, 2);
  assert.equal(dead.attrs['error.type'], 'connect');
  const deadConnect = childrenOf(spans, dead);
  assert.deepEqual(deadConnect.map((s) => s.name), ['connect']);
  assert.equal(deadConnect[0].status.code, 2);
  assert.equal(served.name, 'chat gpt-4o');
  assert.equal(served.attrs['sluice.channel'], 'oa');
  assert.equal(served.attrs['gen_ai.provider.name'], 'openai');
  assert.equal(served.attrs['gen_ai.request.model'], 'gpt-4o');
  assert.equal(served.attrs['server.address'], '127.0.0.1');
  assert.equal(served.attrs['server.port'], up.port);
  assert.equal(served.attrs['http.response.status_code'], 200);
  assert.deepEqual(served.status, {});
  const servedKids = childrenOf(spans, served).map((s) => s.name);
  assert.ok(servedKids.includes('first byte'), `first byte under the attempt: ${servedKids}`);
  for (const s of spans) assert.ok(BigInt(s.startTimeUnixNano) >= BigInt(root.startTimeUnixNano), `${s.name} starts within the request`);

  // The upstream was given exactly one traceparent: this trace, the served attempt's span, sampled.
  const got = upstreamGot('trace me: a new trace');
  assert.equal(got.headers.filter(([k]) => k.toLowerCase() === 'traceparent').length, 1);
  assert.equal(got.header('traceparent'), `00-${root.traceId}-${served.spanId}-01`);
  assert.equal(got.header('tracestate'), undefined);
});

test("a client's traceparent continues its trace; its tracestate is passed on", async () => {
  const res = await sendChat(gw, 'anthropic', {
    model: 'claude-sonnet-4-5', user: 'trace me: continued', stream: true,
    headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE' },
  });
  assert.equal(res.status, 200);
  await readSseEvents(res);
  const { root, spans } = await traceOf(res.headers.get('x-request-id'));
  assert.equal(root.traceId, CLIENT_TRACE);
  assert.equal(root.parentSpanId, CLIENT_SPAN);
  assert.equal(root.name, 'chat claude-sonnet-4-5');
  assert.equal(root.attrs['gen_ai.provider.name'], 'anthropic');
  assert.equal(root.attrs['sluice.stream'], true);
  assert.ok(root.attrs['gen_ai.usage.output_tokens'] > 0, 'stream usage on the span');
  const [attempt] = childrenOf(spans, root).filter((s) => s.kind === 3);
  const got = upstreamGot('trace me: continued');
  assert.equal(got.header('traceparent'), `00-${CLIENT_TRACE}-${attempt.spanId}-01`);
  assert.equal(got.header('tracestate'), 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
});

test('attack table: a malformed traceparent starts a new trace, and none of its bytes reach the upstream', async () => {
  const bad = [
    `00-${CLIENT_TRACE.toUpperCase()}-${CLIENT_SPAN}-01`,
    `00-00000000000000000000000000000000-${CLIENT_SPAN}-01`,
    `00-${CLIENT_TRACE}-0000000000000000-01`,
    `ff-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
    `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01-extra`,
    `00-${CLIENT_TRACE}-${CLIENT_SPAN}`,
    `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01, 00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
    `00-${CLIENT_TRACE}x-${CLIENT_SPAN}-01`,
    'x'.repeat(4000),
    `00-${CLIENT_TRACE}-${CLIENT_SPAN}-0\u00ff`,
  ];
  let sent = 0;
  for (const [i, value] of bad.entries()) {
    const marker = `trace me: attack ${i}`;
    const res = await sendChat(gw, 'openai', {
      model: 'gpt-mini', user: marker, headers: { traceparent: value, tracestate: 'evil=1' },
    }).catch((e) => ({ status: 0, error: e }));
    if (res.status === 0) continue;  // fetch itself refused the header (a byte it will not send)
    sent++;
    assert.equal(res.status, 200, `case ${i}`);
    const { root } = await traceOf(res.headers.get('x-request-id'));
    assert.notEqual(root.traceId, CLIENT_TRACE, `case ${i}: a new trace`);
    assert.equal(root.parentSpanId, undefined, `case ${i}`);
    const got = upstreamGot(marker);
    const tps = got.headers.filter(([k]) => k.toLowerCase() === 'traceparent');
    assert.equal(tps.length, 1, `case ${i}: exactly one traceparent upstream`);
    const m = TP_RE.exec(tps[0][1]);
    assert.ok(m, `case ${i}: ours, well-formed: ${tps[0][1]}`);
    assert.equal(m[1], root.traceId, `case ${i}`);
    assert.equal(got.header('tracestate'), undefined, `case ${i}: a tracestate beside a bad traceparent is dropped`);
    assert.ok(!got.rawHead.includes(CLIENT_SPAN), `case ${i}: nothing of the client's value`);
  }
  assert.equal(sent, bad.length, 'every case reached the gateway');
  // A malformed tracestate beside a good traceparent: the trace continues, the tracestate is dropped.
  const badStates = ['Rojo=1', 'a=1,'.repeat(40), 'k=v\u00e9', `${'a'.repeat(600)}=1`];
  let sentStates = 0;
  for (const [i, ts] of badStates.entries()) {
    const marker = `trace me: bad tracestate ${i}`;
    const res = await sendChat(gw, 'openai', {
      model: 'gpt-mini', user: marker, headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: ts },
    }).catch((e) => ({ status: 0, error: e }));
    if (res.status === 0) continue;
    sentStates++;
    assert.equal(res.status, 200);
    const got = upstreamGot(marker);
    assert.match(got.header('traceparent'), new RegExp(`^00-${CLIENT_TRACE}-`));
    assert.equal(got.header('tracestate'), undefined, `tracestate case ${i}`);
  }
  assert.ok(sentStates >= badStates.length - 1, `the tracestate cases reached the gateway: ${sentStates}`);
});

test('an unsampled parent exports nothing and tells the upstream so', async () => {
  const res = await sendChat(gw, 'openai', {
    model: 'gpt-mini', user: 'trace me: unsampled', headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-00` },
  });
  assert.equal(res.status, 200);
  const id = res.headers.get('x-request-id');
  const got = upstreamGot('trace me: unsampled');
  const m = TP_RE.exec(got.header('traceparent'));
  assert.ok(m);
  assert.equal(m[1], CLIENT_TRACE);
  assert.equal(m[3], '00');
  // A later request's spans arrive after this one's would have: none of this one is exported.
  const later = await sendChat(gw, 'openai', { model: 'gpt-mini', user: 'trace me: after unsampled' });
  await traceOf(later.headers.get('x-request-id'));
  assert.equal(collector.traceOf(id), null);
});

test('refusals are traced too; /metrics counts the exported spans', async () => {
  const res = await sendChat(gw, 'openai', { model: 'gpt-mini', user: 'x', key: 'sk-wrong' });
  assert.equal(res.status, 401);
  const { root, spans } = await traceOf(res.headers.get('x-request-id'));
  assert.equal(root.attrs['http.response.status_code'], 401);
  assert.deepEqual(root.status, {}, "a 4xx is the client's: the server span's status stays unset");
  assert.equal(spans.length, 1);
  const text = await metrics(gw);
  assert.ok(metricValue(text, 'sluice_trace_spans_total', { result: 'exported' }) > 0);
  assert.equal(metricValue(text, 'sluice_trace_spans_total', { result: 'dropped_queue_full' }), 0);
});

test('capture_content: the prompt as it went upstream (redacted) and the answer, on the request span', async () => {
  const g = await startGateway({
    channels: channels(up.url),
    extra: telemetryYaml(collector.url, ['capture_content: true']) +
      'redaction:\n  enabled: true\n  key: "telemetry-test-redaction-key-0123456"\n',
  });
  started.push(g);
  const res = await sendChat(g, 'openai', { model: 'gpt-mini', user: 'mail jane.doe@example.com about it', headers: { 'x-mock-echo': '1' } });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.match(body.choices[0].message.content, /jane\.doe@example\.com/, 'the client reads its own value back');
  const { root } = await traceOf(res.headers.get('x-request-id'));
  const input = root.attrs['gen_ai.input.messages'];
  const output = root.attrs['gen_ai.output.messages'];
  assert.ok(input && output, 'content captured');
  assert.ok(!input.includes('jane.doe@example.com'), 'the prompt as it went upstream: redacted');
  assert.ok(!output.includes('jane.doe@example.com'), 'the answer as the log keeps it: sealed');
  assert.match(input, /mail .* about it/);
});

test('sample_ratio 0: requests without a traceparent are not traced; a sampled parent still is', async () => {
  const g = await startGateway({ channels: channels(up.url), extra: telemetryYaml(collector.url, ['sample_ratio: 0']) });
  started.push(g);
  const res = await sendChat(g, 'openai', { model: 'gpt-mini', user: 'trace me: ratio zero' });
  assert.equal(res.status, 200);
  assert.match(upstreamGot('trace me: ratio zero').header('traceparent'), /-00$/);
  const parented = await sendChat(g, 'openai', {
    model: 'gpt-mini', user: 'trace me: ratio zero, parent', headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` },
  });
  await traceOf(parented.headers.get('x-request-id'));
  assert.equal(collector.traceOf(res.headers.get('x-request-id')), null);
});

test('a collector that is down costs the client nothing; the dropped spans are counted', async () => {
  const g = await startGateway({ channels: channels(up.url), extra: telemetryYaml('http://127.0.0.1:9') });
  started.push(g);
  for (let i = 0; i < 5; i++) {
    const res = await sendChat(g, 'openai', { model: 'gpt-mini', user: `trace me: no collector ${i}` });
    assert.equal(res.status, 200);
  }
  const dropped = await waitFor(async () =>
    metricValue(await metrics(g), 'sluice_trace_spans_total', { result: 'dropped_export_failed' }), 15000);
  assert.ok(dropped >= 5, `dropped spans counted: ${dropped}`);
});

test('a reload turns tracing on and off', async () => {
  const opts = { channels: channels(up.url) };
  const g = await startGateway(opts);
  started.push(g);
  const clientTp = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
  const untraced = await sendChat(g, 'openai', { model: 'gpt-mini', user: 'trace me: before reload', headers: { traceparent: clientTp } });
  assert.equal(untraced.status, 200);
  // Off: Sluice is no participant; the client's traceparent goes on as it came.
  assert.equal(upstreamGot('trace me: before reload').header('traceparent'), clientTp);
  let reloads = 0;
  const reload = async () => {
    g.proc.kill('SIGHUP');
    reloads++;
    const done = await waitFor(() => (g.proc.output.match(/reload \(SIGHUP\): config applied/g) ?? []).length >= reloads);
    assert.ok(done, g.proc.output);
  };
  g.writeConfig({ ...opts, extra: telemetryYaml(collector.url) });
  await reload();
  const traced = await sendChat(g, 'openai', { model: 'gpt-mini', user: 'trace me: after reload' });
  await traceOf(traced.headers.get('x-request-id'));
  g.writeConfig(opts);
  await reload();
  const off = await sendChat(g, 'openai', { model: 'gpt-mini', user: 'trace me: off again' });
  assert.equal(upstreamGot('trace me: off again').header('traceparent'), undefined);
  const later = await sendChat(gw, 'openai', { model: 'gpt-mini', user: 'trace me: after off again' });
  await traceOf(later.headers.get('x-request-id'));
  assert.equal(collector.traceOf(off.headers.get('x-request-id')), null);
});

test('spans of the requests served are exported at shutdown', async () => {
  const g = await startGateway({ channels: channels(up.url), extra: telemetryYaml(collector.url) });
  const res = await sendChat(g, 'openai', { model: 'gpt-mini', user: 'trace me: then stop' });
  assert.equal(res.status, 200);
  const id = res.headers.get('x-request-id');
  assert.equal(await g.stop(), 0);
  assert.ok(collector.traceOf(id), 'exported before the process ended');
});
