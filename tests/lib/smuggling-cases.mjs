// The request-smuggling catalog as a table of raw requests and the outcome each must get at
// Sluice's front door (http/Framing.hpp). Used by tests/integration/smuggling.test.mjs and, as
// seeds, by the HTTP fuzzer (tests/fuzz/make_corpus.sh).
//
// The cases are our own entries, written after the published catalogs of request-smuggling
// variants: the HTTP desync guardian test corpus (AWS, its ambiguous/severe TE and CL variants),
// the smuggler scanners' desync permutations (defparam's smuggler.py "permute" mutations, and
// PortSwigger's HTTP Request Smuggler TE.TE obfuscations), and the HTTP Garden's payloads of
// parser discrepancies (narfindustries, TROPHIES.md), adapted to a request this gateway serves.
import { MASTER } from './harness.mjs';

export const AUTH = `Authorization: Bearer ${MASTER}\r\nContent-Type: application/json\r\n`;
export const chatJson = (content = 'hi') => JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
export const SENTINEL = 'GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n';
// A request the gateway would pass on, if anything ever parsed it: it must never reach the upstream.
const SMUGGLED = `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n${AUTH}Content-Length: ${chatJson('SMUGGLED').length}\r\n\r\n${chatJson('SMUGGLED')}`;

// A raw request: the request line, Host, the auth headers, `headers` (CRLF-terminated lines),
// the blank line, `body`. Strings are sent as latin1, so '\xff' is the byte 0xFF.
function raw({ method = 'POST', target = '/v1/chat/completions', version = 'HTTP/1.1', host = 'Host: gw\r\n', headers = '', body = '' } = {}) {
  return `${method} ${target} ${version}\r\n${host}${AUTH}${headers}\r\n${body}`;
}
const chunked = (...parts) => parts.map((p) => `${p.length.toString(16)}\r\n${p}\r\n`).join('') + '0\r\n\r\n';
const withCl = (body, headers = '') => raw({ headers: `${headers}Content-Length: ${body.length}\r\n`, body });

// Outcomes. refused: one error response with `status`, nothing upstream. accepted: 200 for each
// chat whose content is listed, each reaching the upstream once with exactly that body, in order.
const refused = (status = 400) => ({ responses: [status], upstream: [], refusal: true });
const accepted = (...contents) => ({ responses: [...contents.map(() => 200), 200], upstream: contents, refusal: false });

export const cases = [];
const add = (group, name, bytes, outcome) => cases.push({ group, name, bytes, ...outcome });

// Legitimate requests and pipelining: keep-alive works, several requests in one write, no desync.
{
  const g = 'legitimate and pipelined';
  add(g, 'content-length', withCl(chatJson('one')), accepted('one'));
  add(g, 'chunked', raw({ headers: 'Transfer-Encoding: chunked\r\n', body: chunked(chatJson('two')) }), accepted('two'));
  add(g, 'chunked in pieces with an extension', raw({ headers: 'Transfer-Encoding: chunked\r\n',
    body: `4;x=y\r\n${chatJson('p').slice(0, 4)}\r\n` + chunked(chatJson('p').slice(4)) }), accepted('p'));
  add(g, 'TRANSFER-ENCODING: CHUNKED (case does not matter)', raw({ headers: 'TRANSFER-ENCODING: CHUNKED\r\n', body: chunked(chatJson('case')) }), accepted('case'));
  add(g, 'three pipelined in one write', withCl(chatJson('a')) + withCl(chatJson('b')) +
    raw({ headers: 'Transfer-Encoding: chunked\r\n', body: chunked(chatJson('c')) }), accepted('a', 'b', 'c'));
  add(g, 'a body that spells a request is only a body', withCl(chatJson(`x\r\n\r\n${SMUGGLED}`)), accepted(`x\r\n\r\n${SMUGGLED}`));
  add(g, 'chunk data that spells a request is only data', raw({ headers: 'Transfer-Encoding: chunked\r\n',
    body: chunked(chatJson('0\r\n\r\nGET /admin HTTP/1.1\r\n')) }), accepted('0\r\n\r\nGET /admin HTTP/1.1\r\n'));
  add(g, 'HTTP/1.0 with Content-Length', raw({ version: 'HTTP/1.0', headers: `Connection: keep-alive\r\nContent-Length: ${chatJson('ten').length}\r\n`, body: chatJson('ten') }), accepted('ten'));
  add(g, 'accepted, then a refused request: only the first goes upstream',
    withCl(chatJson('first')) + raw({ headers: 'Transfer-Encoding: chunked\r\nContent-Length: 3\r\n', body: '0\r\n\r\n' + SMUGGLED }),
    { responses: [200, 400], upstream: ['first'], refusal: true });
  add(g, 'accepted, then an obs-fold request', withCl(chatJson('fold1')) + raw({ headers: 'X-A: a\r\n b\r\n' }),
    { responses: [200, 400], upstream: ['fold1'], refusal: true });
}

// Transfer-Encoding whose only coding is not exactly `chunked` (desync guardian severe.yaml,
// PortSwigger TE.TE obfuscations, HTTP Garden server bugs 12, 21, 44, 46).
{
  const g = 'Transfer-Encoding not exactly chunked';
  const body = chunked(chatJson('te')) + SMUGGLED;
  for (const [name, v] of [
    ['chunked, identity', 'chunked, identity'], ['identity', 'identity'], ['gzip', 'gzip'], ['xchunked', 'xchunked'],
    ['chunkedx', 'chunkedx'], ['chunk', 'chunk'], ['cow', 'cow'], ['"chunked" quoted', '"chunked"'], ['trailing space', 'chunked '],
    ['two spaces before', ' chunked'], ['tab before', '\tchunked'], ['trailing tab', 'chunked\t'], [',chunked', ',chunked'],
    ['chunked,', 'chunked,'], ['chunked, chunked', 'chunked, chunked'], ['chunked,chunked', 'chunked,chunked'], ['empty', ''],
    ['\\xa0chunked', '\xa0chunked'], ['\\xa0chunked\\xa0', '\xa0chunked\xa0'], ['\\xffchunked\\xff', '\xffchunked\xff'],
    ['chunked\\x85', 'chunked\x85'], ['chunked; q=1', 'chunked; q=1'], ['ch unked', 'ch unked'], ['identity, chunked, identity', 'identity, chunked, identity'],
  ]) add(g, `Transfer-Encoding: ${name}`, raw({ headers: `Transfer-Encoding:${v === '' ? '' : ' '}${v}\r\n`, body }), refused());
  add(g, 'gzip, chunked: a coding Sluice does not implement (501)', raw({ headers: 'Transfer-Encoding: gzip, chunked\r\n', body }), refused(501));
  add(g, 'deflate,chunked (501)', raw({ headers: 'Transfer-Encoding: deflate,chunked\r\n', body }), refused(501));
  add(g, 'two Transfer-Encoding: chunked headers', raw({ headers: 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', body }), refused());
  add(g, 'Transfer-Encoding: chunked then Transfer-Encoding: x', raw({ headers: 'Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n', body }), refused());
  add(g, 'Transfer-Encoding: gzip then Transfer-Encoding: chunked', raw({ headers: 'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n', body }), refused());
  // Beast alone ignores these codings: the body would be parsed as a second request and forwarded.
  add(g, 'identity: a body that is a whole request', raw({ headers: 'Transfer-Encoding: identity\r\n', body: SMUGGLED }), refused());
  add(g, 'chunked, identity: a body that is a whole request', raw({ headers: 'Transfer-Encoding: chunked, identity\r\n', body: SMUGGLED }), refused());
  add(g, 'xchunked: a body that is a whole request', withCl(SMUGGLED, 'Transfer-Encoding: xchunked\r\n').replace(/Content-Length: \d+\r\n/, ''), refused());
  add(g, 'Transfer-Encoding on HTTP/1.0', raw({ version: 'HTTP/1.0', headers: 'Transfer-Encoding: chunked\r\n', body }), refused());
  add(g, 'Transfer-Encoding on a GET', raw({ method: 'GET', target: '/v1/models', headers: 'Transfer-Encoding: identity\r\n', body: '0\r\n\r\n' + SMUGGLED }), refused());
}

// Transfer-Encoding together with Content-Length: CL.TE and TE.CL (PortSwigger's classics,
// desync guardian ambiguous.yaml "Both Transfer-Encoding and Content-Length").
{
  const g = 'Transfer-Encoding with Content-Length';
  add(g, 'CL.TE: CL covers a smuggled prefix', raw({ headers: 'Content-Length: 6\r\nTransfer-Encoding: chunked\r\n', body: '0\r\n\r\nG' + SMUGGLED }), refused());
  add(g, 'TE.CL: chunk holds a smuggled request', raw({ headers: 'Transfer-Encoding: chunked\r\nContent-Length: 4\r\n',
    body: `${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n` }), refused());
  add(g, 'TE gzip with CL', raw({ headers: 'Transfer-Encoding: gzip\r\nContent-Length: 5\r\n', body: '0\r\n\r\n' + SMUGGLED }), refused());
  add(g, 'CL 0 with TE chunked', raw({ headers: 'Content-Length: 0\r\nTransfer-Encoding: chunked\r\n', body: chunked(chatJson('x')) }), refused());
  add(g, 'TE.TE: chunked and a bogus second TE, with CL', raw({ headers: 'Transfer-Encoding: chunked\r\nTransfer-encoding: cow\r\nContent-Length: 4\r\n', body: '5c\r\n' + SMUGGLED }), refused());
  add(g, ',chunked with CL (Garden transducer bug 18)', raw({ headers: 'Transfer-Encoding: ,chunked\r\nContent-Length: 5\r\n', body: '0\r\n\r\n' + SMUGGLED }), refused());
}

// Content-Length that is not one plain decimal number (desync guardian severe.yaml, HTTP Garden
// server bugs 10, 16, 23, 26, 29, 32, 33, 38, 42, transducer bugs 1, 5, 11).
{
  const g = 'Content-Length';
  const body = chatJson('cl') + SMUGGLED;
  for (const [name, v] of [
    ['repeated, equal values', `${chatJson('cl').length}\r\nContent-Length: ${chatJson('cl').length}`],
    ['repeated, different values', `${chatJson('cl').length}\r\nContent-Length: 0`],
    ['0 then the real length', `0\r\nContent-Length: ${chatJson('cl').length}`],
    ['list 5, 5', '5, 5'], ['list 5,5', '5,5'], ['+5', '+5'], ['-5', '-5'], ['-48 (Garden: busy loop)', '-48'],
    ['0x10', '0x10'], ['hex a', 'a'], ['leading zero 010', '010'], ['00', '00'], ['1 0 (space inside)', '1 0'],
    ['trailing space', '5 '], ['two spaces before', ' 5'], ['tab before', '\t5'], ['empty', ''], ['5.0', '5.0'],
    ['1_0', '1_0'], ['+1_0', '+1_0'], ['1Z', '1Z'], ['64-bit overflow', '18446744073709551616'], ['20 digits', '10000000000000000000'],
    ['control char 5\\x11', '5\x11'], ['1000.1000', '1000.1000'], ['1000 1000', '1000 1000'], ['\\xa05', '\xa05'],
  ]) add(g, `Content-Length: ${name}`, raw({ headers: `Content-Length:${v === '' ? '' : ' '}${v}\r\n`, body }), refused());
  add(g, 'empty Content-Length then a real one (Garden transducer bug 11)', raw({ headers: `Content-Length: \r\nContent-Length: ${chatJson('cl').length}\r\n`, body }), refused());
  add(g, 'a length past the body limit (413)', raw({ headers: 'Content-Length: 999999999\r\n', body: chatJson('big') }), refused(413));
}

// Header names another parser may fold into a framing header (desync guardian ambiguous.yaml,
// smuggler.py, HTTP Garden server bugs 3, 4, 8, 14, 18, 20, 27, 28, 37).
{
  const g = 'header names';
  const body = chunked(chatJson('name')) + SMUGGLED;
  for (const [name, line] of [
    ['Transfer-Encoding : chunked', 'Transfer-Encoding : chunked'], ['Transfer-Encoding\\t: chunked', 'Transfer-Encoding\t: chunked'],
    ['Content-Length : n', `Content-Length : ${chatJson('name').length}`], ['\\x01Transfer-Encoding', '\x01Transfer-Encoding: chunked'],
    ['\\x01\\x01Content-Length', '\x01\x01Content-Length: 1'], ['Transfer- Encoding', 'Transfer- Encoding: chunked'],
    ['Transfer_Encoding', 'Transfer_Encoding: chunked'], ['Content_Length', 'Content_Length: 1000'],
    ['Transfer---Encoding', 'Transfer---Encoding: chunked'], ['Transfer___Encoding', 'Transfer___Encoding: chunked'],
    ['Transfer.Encoding', 'Transfer.Encoding: chunked'], ['Content~Length', 'Content~Length: 5'],
    ['Transfer-Encoding x', 'Transfer-Encoding x: chunked'], ['transfer-encoding XY', 'transfer-encoding XY: chunked'],
    ['Transfer-Encoding \\x01', 'Transfer-Encoding \x01: chunked'], ['empty name', ': chunked'], ['only a colon', ':'],
    [':SomeHeader:Transfer-Encoding:', ':SomeHeader:Transfer-Encoding: chunked'], ['whitespace name', '   \t\t  : chunked'],
    ['Tran\\u017Ffer-Encoding (UTF-8 long s)', Buffer.from('Tranſfer-Encoding: chunked', 'utf8').toString('latin1')],
    ['Transfer-Encod\\u0131ng (UTF-8 dotless i)', Buffer.from('Transfer-Encodıng: chunked', 'utf8').toString('latin1')],
    ['Transfer\\u2015Encoding (UTF-8 dash)', Buffer.from('Transfer―Encoding: chunked', 'utf8').toString('latin1')],
    ['Transfer-Encoding\\x88', 'Transfer-Encoding\x88: chunked'], ['\\xa0Content-Length', '\xa0Content-Length: 100'],
    ['Content-Length\\x85', 'Content-Length\x85: 10'], ['Header\\x85', 'Header\x85: value'], ['\\xefoo', '\xefoo: bar'],
    ['no colon: Content-Length 10', 'Content-Length 10'], ['name split across lines', 'Transfer-\r\nEncoding: chunked'],
    ['NUL in name', 'Some-Bad-Header\x00: 1000'], ['\\r in name', 'Some-Bad-Header\r: 1000'],
    ['separators in name', '"(),/;<=>?@[]{}: whatever'],
  ]) add(g, name, raw({ headers: `${line}\r\n`, body }), refused());
  add(g, 'whitespace before the first header (Garden server bug 4)', 'POST /v1/chat/completions HTTP/1.1\r\n\tContent-Length: 1\r\nHost: gw\r\n\r\nX', refused());
  add(g, 'space before the first header', 'POST /v1/chat/completions HTTP/1.1\r\n Transfer-Encoding: chunked\r\nHost: gw\r\n\r\n0\r\n\r\n', refused());
}

// obs-fold: a header line starting with SP or HTAB, anywhere (desync guardian severe.yaml
// "Multiline headers", smuggler.py line-wrapped values).
{
  const g = 'obs-fold';
  const body = chunked(chatJson('fold'));
  const te = 'Transfer-Encoding: chunked\r\n';
  for (const [name, headers] of [
    ['folded custom header', `X-A: a\r\n b\r\n${te}`], ['folded with a tab', `X-A: a\r\n\tb\r\n${te}`],
    ['fold hides Transfer-Encoding', 'Content-Length: 4\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n'],
    ['Transfer-Encoding value on the next line', 'Transfer-Encoding:\r\n chunked\r\n'],
    ['Transfer-Encoding: chunked continued', 'Transfer-Encoding: chunked\r\n , identity\r\n'],
    ['Content-Length value on the next line', `Content-Length:\r\n ${body.length}\r\n`],
    ['fold carrying a Content-Length', `X: y\r\n Content-Length: 1000\r\n${te}`],
    ['Host folded', `X-Real: 1\r\n\tHost: evil\r\n${te}`],
    ['folded after the last header', `${te} \r\n`],
  ]) add(g, name, raw({ headers, body }), refused());
}

// Line endings and control characters in the head (desync guardian severe.yaml "missed CR/LF",
// "\0 in value"; HTTP Garden server bugs 2, 13, 19, 30, 34, 35, 43; transducer bugs 10, 12, 14, 16).
{
  const g = 'line endings and control characters';
  const cl = `Content-Length: ${chatJson('le').length}`;
  const body = chatJson('le');
  for (const [name, bytes] of [
    ['bare LF after the request line', `POST /v1/chat/completions HTTP/1.1\nHost: gw\r\n${AUTH}${cl}\r\n\r\n${body}`],
    ['bare LF everywhere', `POST /v1/chat/completions HTTP/1.1\nHost: gw\n${AUTH.replaceAll('\r\n', '\n')}${cl}\n\n${body}`],
    ['bare LF in a value', raw({ headers: `X: a\nTransfer-Encoding: chunked\r\n${cl}\r\n`, body })],
    ['bare LF ends the head', raw({ headers: `${cl}\r\n`, body: '' }).replace(/\r\n\r\n$/, '\r\n\n') + body],
    ['LF CR ends the head', raw({ headers: `${cl}\n`, body: '' }).replace(/\n\r\n$/, '\n\r\n') + body],
    ['bare CR in a value', raw({ headers: `X: value\rContent-Length: 1000\r\n${cl}\r\n`, body })],
    ['bare CR line terminator', raw({ headers: `Visible: :/\rSmuggled: :)\r\n${cl}\r\n`, body })],
    ['CR CR LF', raw({ headers: `X: y\r\r\n${cl}\r\n`, body })],
    ['\\r\\n\\rX ends the head (Garden server bug 30)', `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n${AUTH}${cl}\r\n\rZ${SMUGGLED}`],
    ['NUL in a value', raw({ headers: `X: value\x00content-length: 1000\r\n${cl}\r\n`, body })],
    ['NUL at the start of a value', raw({ headers: `X: \x00value\r\n${cl}\r\n`, body })],
    ['NUL at the end of a value', raw({ headers: `Evil: evil\x00\r\n${cl}\r\n`, body })],
    ['NUL at the start of a line', raw({ headers: `\x00Some-Bad-Header: value\r\n${cl}\r\n`, body })],
    ['NUL in Host', raw({ host: 'Host: gw\x00.evil\r\n', headers: `${cl}\r\n`, body })],
    ['DEL in a value', raw({ headers: `X: a\x7f\r\n${cl}\r\n`, body })],
    ['vertical tab in a value', raw({ headers: `X: a\x0bb\r\n${cl}\r\n`, body })],
    ['form feed in a value', raw({ headers: `X: a\x0cb\r\n${cl}\r\n`, body })],
    ['escape in a value', raw({ headers: `X: \x1b[31m\r\n${cl}\r\n`, body })],
    ['Useless:\\n\\n (Garden server bug 19)', raw({ headers: `Useless:\n\n${SMUGGLED}` })],
    ['Te\\nst header (Garden transducer bug 14)', raw({ headers: `Te\nst: test\r\n${cl}\r\n`, body })],
  ]) add(g, name, bytes, refused());
}

// The request line (HTTP Garden server bugs 5, 6, 7, 9, 15, 24, 40; HTTP/0.9 and the HTTP/2
// preface on a plain port).
{
  const g = 'request line';
  const body = chatJson('rl');
  const cl = `Content-Length: ${body.length}\r\n`;
  for (const [name, line] of [
    ['two spaces after the method', 'POST  /v1/chat/completions HTTP/1.1'], ['two spaces before the version', 'POST /v1/chat/completions  HTTP/1.1'],
    ['trailing space', 'POST /v1/chat/completions HTTP/1.1 '], ['tab separator', 'POST\t/v1/chat/completions HTTP/1.1'],
    ['HTTP/1.2', 'POST /v1/chat/completions HTTP/1.2'], ['HTTP/1.32', 'POST /v1/chat/completions HTTP/1.32'],
    ['HTTP/4294967295.255', 'POST /v1/chat/completions HTTP/4294967295.255'], ['http/1.1 lower case', 'POST /v1/chat/completions http/1.1'],
    ['HTTP/ with CRs', 'POST /v1/chat/completions HTTP/\r\r1.1'], ['HTTP/2.0', 'POST /v1/chat/completions HTTP/2.0'],
    ['no version (HTTP/0.9 with headers)', 'POST /v1/chat/completions'], ['NUL method', '\x00 / HTTP/1.1'],
    ['separators in the method', 'G=":<>(e),[T];?" /v1/chat/completions HTTP/1.1'], ['bare LF between target and version', 'POST /v1/chat/completions\nHTTP/1.1'],
    ['non-ASCII target', 'POST /v1/chat/completions\xff HTTP/1.1'], ['* on POST', 'POST * HTTP/1.1'],
    ['relative target', 'POST v1/chat/completions HTTP/1.1'], ['target !', 'POST ! HTTP/1.1'],
    ['absolute-form naming another host', 'POST http://evil.example/v1/chat/completions HTTP/1.1'],
    ['authority-form', 'CONNECT gw:443 HTTP/1.1'],
  ]) add(g, name, `${line}\r\nHost: gw\r\n${AUTH}${cl}\r\n${body}`, refused());
  add(g, 'HTTP/0.9 simple request', 'GET /healthz\r\n', refused());
  add(g, 'empty line before the request line', `\r\n${withCl(body)}`, refused());
  add(g, 'HTTP/2 preface (PRI * HTTP/2.0) on the plain port', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', refused());
}

// Host (RFC 9112 3.2: a 1.1 request without Host, or with more than one, gets 400; HTTP Garden
// server bug 46, transducer bug 12).
{
  const g = 'Host';
  const body = chatJson('host');
  const cl = `Content-Length: ${body.length}\r\n`;
  for (const [name, host] of [
    ['missing on HTTP/1.1', ''], ['twice', 'Host: gw\r\nHost: evil\r\n'], ['twice, same value', 'Host: gw\r\nHost: gw\r\n'],
    ['userinfo', 'Host: user@evil\r\n'], ['space inside', 'Host: gw evil\r\n'], ['a path', 'Host: gw/evil\r\n'],
    ['\\xffa\\xff', 'Host: \xffa\xff\r\n'], ['trailing space', 'Host: gw \r\n'], ['tab before', 'Host:\tgw\r\n'],
  ]) add(g, name, raw({ host, headers: cl, body }), refused());
}

// Chunked bodies (HTTP Garden server bugs 1, 17, 22, 25, 31, 36, 39, 47; transducer bugs 2, 3, 7,
// 13, 17, 19): bad sizes, extensions, missing CRLF, bare LF, trailers.
{
  const g = 'chunked body';
  const te = 'Transfer-Encoding: chunked\r\n';
  const json = chatJson('chunk');
  const n = json.length.toString(16);
  for (const [name, body] of [
    ['negative size', `-${n}\r\n${json}\r\n0\r\n\r\n`], ['0x prefix', `0x${n}\r\n${json}\r\n0\r\n\r\n`], ['+ prefix', `+${n}\r\n${json}\r\n0\r\n\r\n`],
    ['space before the size', ` ${n}\r\n${json}\r\n0\r\n\r\n`], ['space after the size', `${n} \r\n${json}\r\n0\r\n\r\n`],
    ['non-hex size', `zz\r\n${json}\r\n0\r\n\r\n`], ['size overflow', `1ffffffffffffffff\r\n${json}\r\n0\r\n\r\n`],
    ['empty size line', `\r\n\r\n${SMUGGLED}`], ['0_2e (Garden server bug 1)', `0_2e\r\n\r\n${SMUGGLED}`],
    ['size with trailing junk', `1these-bytes-never-get-validated\r\nZ\r\n0\r\n\r\n`],
    ['bare LF after the size', `${n}\n${json}\r\n0\r\n\r\n`], ['bare LF after the data', `${n}\r\n${json}\n0\r\n\r\n`],
    ['missing CRLF after the data', `${n}\r\n${json}0\r\n\r\n`], ['data longer than the size', `${n}\r\n${json}XX\r\n0\r\n\r\n`],
    ['bare CR in the extension whitespace (Garden server bug 31)', `${n}\r\r;ABCD\r\n${json}\r\n0\r\n\r\n`],
    ['extension with a bare LF inside quotes', `${n};a="x\ny"\r\n${json}\r\n0\r\n\r\n`],
    ['extension with NUL inside quotes', `${n};a="x\x00y"\r\n${json}\r\n0\r\n\r\n`],
    ['extension without a name', `${n};\r\n${json}\r\n0\r\n\r\n`], ['extension with a space in the name', `${n};a b\r\n${json}\r\n0\r\n\r\n`],
    ['overlong extension', `${n};a=${'x'.repeat(2000)}\r\n${json}\r\n0\r\n\r\n`],
    ['bare LF after the last chunk', `${n}\r\n${json}\r\n0\n\r\n`],
    ['trailer field', `${n}\r\n${json}\r\n0\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n`],
    ['trailer that spells a request (Garden server bug 39)', `${n}\r\n${json}\r\n0\r\nX:POST / HTTP/1.1\r\n\r\n`],
    ['trailer with Content-Length', `${n}\r\n${json}\r\n0\r\nContent-Length: 5\r\n\r\n`],
    ['INVALID!!! then a request (Garden server bug 47)', `INVALID!!!\r\n${SMUGGLED}`],
  ]) add(g, name, raw({ headers: te, body }), refused());
  add(g, 'a chunk past the body limit (413)', raw({ headers: te, body: `ffffff\r\n${json}` }), refused(413));
}

// smuggler.py's "permute" mutations (configs/default.py): each byte around "Transfer-Encoding",
// in a request that also carries Content-Length. The few that leave a harmless ordinary header
// (a tab, space or obs-text byte inside "X: X...") are framed by Content-Length alone.
{
  const g = 'smuggler permutations';
  const body = chatJson('perm');
  const gadget = (label, line) => add(g, label, `POST /v1/chat/completions HTTP/1.1\r\n${line}\r\nHost: gw\r\n${AUTH}Content-Length: ${body.length}\r\n\r\n${body}`,
    ['xprespace-09', 'xprespace-20', 'xprespace-a0', 'xprespace-ff'].includes(label) ? accepted('perm') : refused());
  gadget('nameprefix1', ' Transfer-Encoding: chunked');
  gadget('tabprefix1', 'Transfer-Encoding:\tchunked');
  gadget('tabprefix2', 'Transfer-Encoding\t:\tchunked');
  gadget('space1', 'Transfer-Encoding : chunked');
  for (const i of [0x1, 0x4, 0x8, 0x9, 0xa, 0xb, 0xc, 0xd, 0x1f, 0x20, 0x7f, 0xa0, 0xff]) {
    const c = String.fromCharCode(i);
    const h = i.toString(16).padStart(2, '0');
    gadget(`midspace-${h}`, `Transfer-Encoding:${c}chunked`);
    gadget(`postspace-${h}`, `Transfer-Encoding${c}: chunked`);
    gadget(`prespace-${h}`, `${c}Transfer-Encoding: chunked`);
    gadget(`endspace-${h}`, `Transfer-Encoding: chunked${c}`);
    gadget(`xprespace-${h}`, `X: X${c}Transfer-Encoding: chunked`);
    gadget(`endspacex-${h}`, `Transfer-Encoding: chunked${c}X: X`);
    gadget(`rxprespace-${h}`, `X: X\r${c}Transfer-Encoding: chunked`);
    gadget(`xnprespace-${h}`, `X: X${c}\nTransfer-Encoding: chunked`);
    gadget(`endspacerx-${h}`, `Transfer-Encoding: chunked\r${c}X: X`);
    gadget(`endspacexn-${h}`, `Transfer-Encoding: chunked${c}\nX: X`);
  }
}
