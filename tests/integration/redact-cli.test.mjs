// `sluice redact --explain`: the real binary reads JSON Lines on stdin and writes one JSON line
// per input line with the built-in rules' matches (byte offsets), or an error for a bad line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { BIN } from '../lib/harness.mjs';

function explain(input) {
  const r = spawnSync(BIN, ['redact', '--explain'], { input, encoding: 'utf8', timeout: 20000 });
  return { code: r.status, lines: r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)), err: r.stderr };
}

test('good lines: matches with rule, byte offsets and action', () => {
  const lines = [
    { text: 'Ünïcode first, then mail jane.doe@example.com or call +1 415 555 0100.' },
    { text: 'card 4111 1111 1111 1111, not 4127 0359 2148 1823; IBAN DE89 3704 0044 0532 0130 00' },
    { text: 'nothing to see: version 1.2.3, 2024-05-06, std::map' },
    { text: '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----' },
  ];
  const r = explain(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  assert.equal(r.code, 0, r.err);
  assert.equal(r.lines.length, 4);
  const slice = (i, m) => Buffer.from(lines[i].text, 'utf8').subarray(m.start, m.end).toString('utf8');
  assert.deepEqual(r.lines[0].matches.map((m) => [m.rule, slice(0, m), m.action]),
    [['EMAIL', 'jane.doe@example.com', 'encrypt'], ['PHONE', '+1 415 555 0100', 'encrypt']]);
  assert.deepEqual(r.lines[1].matches.map((m) => [m.rule, slice(1, m)]),
    [['CREDIT_CARD', '4111 1111 1111 1111'], ['IBAN', 'DE89 3704 0044 0532 0130 00']]);
  assert.deepEqual(r.lines[2].matches, []);
  assert.deepEqual(r.lines[3].matches.map((m) => [m.rule, m.action]), [['PRIVATE_KEY', 'block']]);
});

test('a bad line gets an error and the next line is still explained', () => {
  const r = explain('{"text": "a@b.io"}\nnot json\n{"txt": "x"}\n{"text": "10.0.0.1"}\n');
  assert.equal(r.code, 1);
  assert.equal(r.lines.length, 4);
  assert.equal(r.lines[0].matches[0].rule, 'EMAIL');
  assert.match(r.lines[1].error, /line 2: not JSON/);
  assert.match(r.lines[2].error, /line 3: missing string field "text"/);
  assert.deepEqual(r.lines[3].matches, [{ rule: 'IPV4', start: 0, end: 8, action: 'encrypt' }]);
  assert.match(r.err, /2 of 4 lines/);
});

test('redact without --explain is refused with usage', () => {
  const r = spawnSync(BIN, ['redact'], { input: '', encoding: 'utf8', timeout: 20000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr + r.stdout, /--explain/);
});
