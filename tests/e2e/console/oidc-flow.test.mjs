// Console sign-in through OIDC (auth.oidc), driven with fetch, no browser: the authorization
// code flow with PKCE against a hand-made IdP that signs what each case needs (tests/e2e/console/
// idps.mjs), and the refusals: state, PKCE and nonce mismatches, a tampered, expired, wrongly
// addressed or unsigned ID token, a user no group maps; a rotated key picked up; idle and
// absolute session ends; sign-out; CSRF on writes made with the cookie; the cookie's exact
// attributes; an IdP that is down.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MASTER, startGateway, sleep, stop } from '../../lib/harness.mjs';
import { freePort } from '../../lib/mcp-servers.mjs';
import { CLIENT_ID, CLIENT_SECRET, startHostileIdp } from './idps.mjs';

let idp, gw, gwUrl;
const IDLE_S = 3, MAX_S = 6;

function config(port, issuer, { roleMap = '{platform-admins: admin, ml-platform: operator, finance: viewer}', extra = '' } = {}) {
  return `server:
  listen: "127.0.0.1:${port}"
  workers: 2
auth:
  master_key: "${MASTER}"
  oidc:
    issuer: "${issuer}"
    client_id: ${CLIENT_ID}
    client_secret: "${CLIENT_SECRET}"
    redirect_url: "http://127.0.0.1:${port}/auth/callback"
    roles_claim: groups
    role_map: ${roleMap}
    session_idle: ${IDLE_S}s
    session_max: ${MAX_S}s
    timeout: 2s
${extra}channels:
  - name: m
    type: mock
    base_url: "http://127.0.0.1:1"
    keys: ["k"]
    models: ["mock-*"]
`;
}

function setCookies(res) { return res.headers.getSetCookie(); }
function cookieOf(res, name) {
  const c = setCookies(res).find((s) => s.startsWith(`${name}=`));
  return c ? c.slice(name.length + 1).split(';')[0] : undefined;
}

// Starts a sign-in; returns the login cookie and the IdP's URL the gateway redirected to.
async function startLogin(base = gwUrl) {
  const res = await fetch(`${base}/auth/login`, { redirect: 'manual' });
  assert.equal(res.status, 302, await res.text());
  return { login: cookieOf(res, 'sluice_login'), location: res.headers.get('location'), res };
}

// The IdP's answer to an authorization request: the callback URL with code and state.
async function authorize(location) {
  const res = await fetch(location, { redirect: 'manual' });
  assert.equal(res.status, 302);
  return new URL(res.headers.get('location'));
}

function callback(url, login) {
  return fetch(url, { redirect: 'manual', headers: login ? { cookie: `sluice_login=${login}` } : {} });
}

// A whole sign-in; `alter` is the IdP's one-off change to the ID token.
async function signIn(alter) {
  const { login, location } = await startLogin();
  idp.next = alter ?? null;
  const cb = await authorize(location);
  const res = await callback(cb, login);
  return { res, session: cookieOf(res, 'sluice_session'), body: res.status === 302 ? '' : await res.text() };
}

function me(session, headers = {}) {
  return fetch(`${gwUrl}/admin/api/me`, { headers: { cookie: `sluice_session=${session}`, ...headers } });
}

before(async () => {
  idp = await startHostileIdp({ authMethods: ['client_secret_basic'] });
  const port = await freePort();
  gw = await startGateway(config(port, idp.issuer));
  gwUrl = gw.url;
});

after(async () => {
  await stop(gw?.proc);
  await idp?.close();
});

test('/auth/info tells the console, without a credential, that SSO is on', async () => {
  const res = await fetch(`${gwUrl}/auth/info`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { oidc: true, login_url: '/auth/login' });
});

test('login redirects to the IdP with PKCE S256, state and nonce, and sets an exact login cookie', async () => {
  const { login, location, res } = await startLogin();
  assert.match(login, /^[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(setCookies(res), [`sluice_login=${login}; Path=/auth; HttpOnly; Secure; SameSite=Lax; Max-Age=600`]);
  const u = new URL(location);
  assert.equal(`${u.origin}${u.pathname}`, `${idp.issuer}/authorize`);
  const q = u.searchParams;
  assert.equal(q.get('tenant'), 't1', 'the endpoint\'s own query is kept');
  assert.equal(q.get('response_type'), 'code');
  assert.equal(q.get('client_id'), CLIENT_ID);
  assert.equal(q.get('redirect_uri'), `${gwUrl}/auth/callback`);
  assert.equal(q.get('scope'), 'openid email profile');
  assert.equal(q.get('code_challenge_method'), 'S256');
  assert.match(q.get('code_challenge'), /^[A-Za-z0-9_-]{43}$/);
  assert.match(q.get('state'), /^[A-Za-z0-9_-]{43}$/);
  assert.match(q.get('nonce'), /^[A-Za-z0-9_-]{43}$/);
  assert.equal(res.headers.get('cache-control'), 'no-store');
});

test('a sign-in makes a session: exact cookie, /me names the OIDC identity, the code exchanged with client_secret_basic', async () => {
  idp.requests.length = 0;
  const { res, session } = await signIn();
  assert.equal(res.status, 302);
  assert.equal(res.headers.get('location'), '/');
  const cookies = setCookies(res);
  assert.equal(cookies[0], `sluice_session=${session}; Path=/; HttpOnly; Secure; SameSite=Lax`);
  assert.equal(cookies[1], 'sluice_login=; Path=/auth; HttpOnly; Secure; SameSite=Lax; Max-Age=0');
  // What the token endpoint received, byte for byte.
  const tok = idp.requests.find((r) => r.path === '/token');
  assert.equal(tok.headers.authorization, `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`);
  assert.equal(tok.headers['content-type'], 'application/x-www-form-urlencoded');
  const form = new URLSearchParams(tok.body);
  assert.deepEqual([...form.keys()], ['grant_type', 'code', 'redirect_uri', 'code_verifier']);
  assert.equal(form.get('grant_type'), 'authorization_code');
  assert.equal(form.get('redirect_uri'), `${gwUrl}/auth/callback`);
  assert.match(form.get('code_verifier'), /^[A-Za-z0-9_-]{43}$/);
  assert.ok(!tok.body.includes(CLIENT_SECRET), 'the secret goes in the Authorization header only');
  const who = await (await me(session)).json();
  assert.equal(who.kind, 'oidc');
  assert.equal(who.role, 'admin');
  assert.equal(who.subject, 'hostile-user-1');
  assert.equal(who.email, 'hu@acme.test');
  assert.equal(who.name, 'Hostile User');
  assert.equal(who.actor, 'oidc:hostile-user-1 <hu@acme.test>');
  assert.match(who.csrf_token, /^[A-Za-z0-9_-]{43}$/);
});

test('writes with the session cookie need the CSRF token; the audit row names the OIDC subject', async () => {
  const { session } = await signIn();
  const { csrf_token: csrf } = await (await me(session)).json();
  const post = (headers) => fetch(`${gwUrl}/admin/api/keys`, {
    method: 'POST', headers: { cookie: `sluice_session=${session}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ name: `oidc-key-${Math.random().toString(36).slice(2)}` }),
  });
  let res = await post({});
  assert.equal(res.status, 403);
  assert.equal((await res.json()).error.code, 'csrf');
  res = await post({ 'x-sluice-csrf': 'x'.repeat(43) });
  assert.equal(res.status, 403);
  res = await post({ 'x-sluice-csrf': csrf, 'sec-fetch-site': 'cross-site' });
  assert.equal(res.status, 403, 'a cross-site request is refused even with the token');
  res = await post({ 'x-sluice-csrf': csrf, 'sec-fetch-site': 'same-origin' });
  const made = await res.text();
  assert.equal(res.status, 201, made);
  const { key } = JSON.parse(made);
  // Reads need no token.
  assert.equal((await me(session)).status, 200);
  const audit = await (await fetch(`${gwUrl}/admin/api/audit?target=/keys/${key.id}`, { headers: { authorization: `Bearer ${MASTER}` } })).json();
  assert.equal(audit.data[0].actor, 'oidc:hostile-user-1 <hu@acme.test>');
  assert.equal(audit.data[0].role, 'admin');
  // A bearer key needs no CSRF token (no browser attaches it on its own).
  res = await fetch(`${gwUrl}/admin/api/keys/${key.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${MASTER}` } });
  assert.ok(res.status === 200 || res.status === 204, String(res.status));
});

test('a viewer-group user gets the viewer role and a 403 on writes', async () => {
  const saved = idp.user;
  idp.user = { ...saved, sub: 'fin-1', email: 'fin@acme.test', groups: ['finance', 'unmapped'] };
  try {
    const { session } = await signIn();
    const who = await (await me(session)).json();
    assert.equal(who.role, 'viewer');
    const res = await fetch(`${gwUrl}/admin/api/keys`, {
      method: 'POST', headers: { cookie: `sluice_session=${session}`, 'x-sluice-csrf': who.csrf_token, 'content-type': 'application/json' },
      body: '{"name":"nope"}',
    });
    assert.equal(res.status, 403);
    assert.match((await res.json()).error.message, /needs the operator role; oidc:fin-1 <fin@acme.test> has the viewer role/);
  } finally {
    idp.user = saved;
  }
});

test('a user whose groups map to no role (and no "*") is refused with a clear page', async () => {
  const saved = idp.user;
  idp.user = { ...saved, groups: ['contractors'] };
  try {
    const { res, body, session } = await signIn();
    assert.equal(res.status, 403);
    assert.equal(session, undefined);
    assert.match(res.headers.get('content-type'), /text\/html/);
    assert.match(body, /none of your groups \(claim &quot;groups&quot;\) is given a role in auth\.oidc\.role_map/);
  } finally {
    idp.user = saved;
  }
});

// The attack table of the callback: each row is what arrives, and the page it must get.
test('callback refusals: state, replays, cookies, PKCE, malformed queries', async () => {
  const refused = async (res, status, re) => {
    const body = await res.text();
    assert.equal(res.status, status, body);
    assert.match(body, re);
    assert.equal(cookieOf(res, 'sluice_session'), undefined);
  };
  // State mismatch.
  let { login, location } = await startLogin();
  let cb = await authorize(location);
  cb.searchParams.set('state', 'A'.repeat(43));
  await refused(await callback(cb, login), 400, /state the identity provider sent back is not this sign-in/);
  // The sign-in is single-use: even the right state now fails.
  await refused(await callback(cb, login), 400, /expired or was already used/);
  // No login cookie (another browser), a malformed one.
  ({ login, location } = await startLogin());
  cb = await authorize(location);
  await refused(await callback(cb, null), 400, /no sign-in under way/);
  await refused(await callback(cb, 'x;y'), 400, /no sign-in under way/);
  // A parameter twice.
  const twice = new URL(cb);
  twice.search += `&state=${cb.searchParams.get('state')}`;
  await refused(await callback(twice, login), 400, /repeats a parameter/);
  // The IdP's error, with markup in it: shown escaped.
  const err = new URL(`${gwUrl}/auth/callback?error=access_denied&error_description=${encodeURIComponent('<script>alert(1)</script>')}`);
  const res = await callback(err, login);
  const body = await res.text();
  assert.equal(res.status, 403);
  assert.ok(!body.includes('<script>alert'), body);
  assert.match(body, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  // PKCE: a code issued to one sign-in, brought back with another's state and cookie (code
  // injection): the IdP sees the wrong verifier and refuses the exchange.
  const a = await startLogin();
  const b = await startLogin();
  const cbA = await authorize(a.location);
  const cbB = await authorize(b.location);
  cbB.searchParams.set('code', cbA.searchParams.get('code'));
  await refused(await callback(cbB, b.login), 502, /token endpoint refused the code: HTTP 400 invalid_grant \(PKCE verification failed\)/);
  // A code far too long.
  const c = await startLogin();
  const cbC = await authorize(c.location);
  cbC.searchParams.set('code', 'c'.repeat(5000));
  await refused(await callback(cbC, c.login), 400, /no authorization code/);
});

test('ID token refusals: nonce, signature, expiry, audience, azp, issuer, alg none, unknown key', async () => {
  const cases = [
    ['nonce', (c) => ({ claims: { ...c, nonce: 'n'.repeat(43) } }), /nonce is not the one this sign-in sent/],
    ['tampered', () => ({ tamper: true }), /signature does not verify/],
    ['expired', (c) => ({ claims: { ...c, exp: c.iat - 3600, iat: c.iat - 7200 } }), /has expired/],
    ['audience', (c) => ({ claims: { ...c, aud: 'another-client' } }), /not for this client/],
    ['several audiences, no azp', (c) => ({ claims: { ...c, aud: [CLIENT_ID, 'other'] } }), /several audiences and no azp/],
    ['azp of another client', (c) => ({ claims: { ...c, aud: [CLIENT_ID, 'other'], azp: 'other' } }), /issued to another client/],
    ['issuer', (c) => ({ claims: { ...c, iss: 'https://evil.example' } }), /issuer &quot;https:\/\/evil\.example&quot; is not/],
    ['alg none', (c, h) => ({ header: { ...h, alg: 'none' } }), /alg &quot;none&quot; is not accepted/],
    ['HS256 with the public key', (c, h) => ({ header: { ...h, alg: 'HS256' } }), /alg &quot;HS256&quot; is not accepted/],
    ['a key the IdP never published', (c, h) => {
      const k = idp.keyFor('RSA', h.kid);  // same kid, another key
      return { key: k };
    }, /signature does not verify/],
    ['iat in the future', (c) => ({ claims: { ...c, iat: c.iat + 3600 } }), /issued in the future/],
    ['no sub', (c) => { const { sub, ...rest } = c; return { claims: rest }; }, /has no sub/],
  ];
  for (const [name, alter, re] of cases) {
    const { res, body, session } = await signIn((c, h) => {
      const t = alter(c, h);
      if (t.header?.alg === 'HS256') t.key = { alg: 'RS256', privateKey: idp.keys[0].privateKey };
      return t;
    });
    assert.equal(res.status, 403, `${name}: ${body}`);
    assert.match(body, re, name);
    assert.equal(session, undefined, name);
  }
  // The gateway keeps serving.
  assert.equal((await signIn()).res.status, 302);
});

test('ES256 ID tokens verify, and a key rotated at the IdP is picked up (JWKS refetched on an unknown kid)', async () => {
  idp.signer = 1;  // the EC key of the first JWKS
  let r = await signIn();
  assert.equal(r.res.status, 302, r.body);
  const fetchesBefore = idp.requests.filter((q) => q.path === '/jwks').length;
  idp.rotate('EC');
  // The refetch on an unknown kid is rate-limited (5 s since the last fetch).
  await sleep(5500);
  r = await signIn();
  assert.equal(r.res.status, 302, r.body);
  assert.equal(idp.requests.filter((q) => q.path === '/jwks').length, fetchesBefore + 1);
  idp.rotate('RSA');
  await sleep(5500);
  r = await signIn();
  assert.equal(r.res.status, 302, r.body);
  assert.equal((await (await me(r.session)).json()).role, 'admin');
});

test('sign-out needs the CSRF token, ends the session, and answers the IdP\'s end_session URL', async () => {
  const { session } = await signIn();
  const { csrf_token: csrf } = await (await me(session)).json();
  let res = await fetch(`${gwUrl}/auth/logout`, { method: 'POST', headers: { cookie: `sluice_session=${session}` } });
  assert.equal(res.status, 403);
  assert.equal((await me(session)).status, 200, 'a refused sign-out leaves the session');
  res = await fetch(`${gwUrl}/auth/logout`, { method: 'POST', headers: { cookie: `sluice_session=${session}`, 'x-sluice-csrf': csrf } });
  assert.equal(res.status, 200);
  const out = await res.json();
  assert.equal(out.signed_out, true);
  assert.equal(out.logout_url, `${idp.issuer}/logout?client_id=${CLIENT_ID}`);
  assert.deepEqual(setCookies(res), ['sluice_session=; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=0']);
  res = await me(session);
  assert.equal(res.status, 401);
  assert.match((await res.json()).error.message, /session has ended/);
});

test('a session ends after session_idle without use', async () => {
  const { session } = await signIn();
  assert.equal((await me(session)).status, 200);
  await sleep((IDLE_S + 1) * 1000);
  const res = await me(session);
  assert.equal(res.status, 401);
  assert.equal((await res.json()).error.code, 'session_expired');
});

test('a session in use ends after session_max', async () => {
  const { session } = await signIn();
  let ok = 0, status = 200;
  // Used every second (well inside session_idle) until the absolute end refuses it.
  for (let i = 0; i < MAX_S + 6 && status === 200; ++i) {
    status = (await me(session)).status;
    if (status === 200) ++ok;
    await sleep(1000);
  }
  assert.equal(status, 401);
  assert.ok(ok >= IDLE_S + 1, `used ${ok} times before the end: longer than session_idle`);
});

test('bogus session cookies are refused; the master key still works beside SSO; client_secret masked', async () => {
  for (const v of ['', 'short', 'A'.repeat(43), 'A'.repeat(42) + '\u00e9', 'A'.repeat(4000)]) {
    const res = await fetch(`${gwUrl}/admin/api/me`, { headers: { cookie: `sluice_session=${encodeURIComponent(v)}` } });
    assert.equal(res.status, 401, v);
  }
  const res = await fetch(`${gwUrl}/admin/api/config`, { headers: { authorization: `Bearer ${MASTER}` } });
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.ok(!text.includes(CLIENT_SECRET), 'the client secret is masked');
  assert.match(text, /client_secret/);
  assert.equal((await (await fetch(`${gwUrl}/admin/api/me`, { headers: { authorization: `Bearer ${MASTER}` } })).json()).kind, 'master_key');
});

// CSRF on every state-changing call a cookie can make, not only the one the console makes most:
// each write endpoint of the API document (and a method none has), with the session cookie and
// no token, or the token from another site, is refused before it runs.
test('every write endpoint refuses the session cookie without the CSRF token', async () => {
  const { session } = await signIn();
  const { csrf_token: csrf } = await (await me(session)).json();
  const asMaster = async (path) => (await fetch(`${gwUrl}/admin/api${path}`, { headers: { authorization: `Bearer ${MASTER}` } })).json();
  const doc = await asMaster('/openapi.json');
  const writes = Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.keys(item).filter((m) => ['post', 'patch', 'put', 'delete'].includes(m)).map((m) => [m.toUpperCase(), p]));
  assert.ok(writes.length >= 24, `the document lists the writes: ${writes.length}`);
  writes.push(['PUT', '/keys']);
  // Bodies that would work, where a write makes something; ids that exist nowhere elsewhere.
  const bodies = {
    'POST /keys': { name: 'csrf-key' }, 'POST /tokens': { name: 'csrf-token', role: 'admin' },
    'POST /teams': { name: 'csrf-team' }, 'PATCH /settings': { cache: { enabled: false } },
    'POST /channels': { name: 'csrf-ch', type: 'openai-compatible', base_url: 'http://127.0.0.1:1/v1', models: ['c-*'] },
  };
  const counts = async () => [(await asMaster('/audit?limit=1000')).data.length, (await asMaster('/tokens')).data.length,
    (await asMaster('/keys')).data.length, (await asMaster('/teams')).data.length, (await asMaster('/channels')).data.length];
  const was = await counts();
  for (const [m, p] of writes) {
    const path = p.replace('{id}', '999999').replace('{key_id}', '999999').replace('{ref}', 'no-such-ref');
    for (const extra of [{}, { 'x-sluice-csrf': csrf, 'sec-fetch-site': 'cross-site' }, { 'x-sluice-csrf': `${csrf}x` }]) {
      const res = await fetch(`${gwUrl}/admin/api${path}`, {
        method: m, headers: { cookie: `sluice_session=${session}`, 'content-type': 'application/json', ...extra },
        body: m === 'DELETE' ? undefined : JSON.stringify(bodies[`${m} ${p}`] ?? {}),
      });
      const text = await res.text();
      assert.equal(res.status, 403, `${m} ${path} ${JSON.stringify(extra)}: ${text}`);
      assert.equal(JSON.parse(text).error.code, 'csrf', `${m} ${path}`);
    }
  }
  assert.deepEqual(await counts(), was, 'nothing was made, and nothing audited');
});

// A person whose groups map only through "*" to member reaches the teams that name them, by
// OIDC subject or by e-mail (without case), and nothing else; an e-mail the IdP says it has not
// verified names no one.
test('an OIDC member reaches the keys of the teams naming their subject or e-mail, and no others', async () => {
  const port = await freePort();
  const other = await startGateway(config(port, idp.issuer, { roleMap: '{platform-admins: admin, "*": member}' }));
  const saved = idp.user;
  try {
    const base = other.url;
    const adm = async (method, path, body) => {
      const res = await fetch(`${base}/admin/api${path}`, { method, body: body && JSON.stringify(body),
        headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' } });
      const text = await res.text();
      assert.ok(res.status < 300, `${method} ${path}: ${text}`);
      return text ? JSON.parse(text) : null;
    };
    const byMail = await adm('POST', '/teams', { name: 'by-mail', members: [{ email: 'Mia@Acme.test' }] });
    const bySub = await adm('POST', '/teams', { name: 'by-sub', members: [{ subject: 'member-sub-1' }] });
    await adm('POST', '/teams', { name: 'not-mine', members: [{ email: 'other@acme.test' }] });
    await adm('POST', '/keys', { name: 'mail-key', team_id: 'by-mail' });
    await adm('POST', '/keys', { name: 'sub-key', team_id: 'by-sub' });
    const foreign = (await adm('POST', '/keys', { name: 'other-key', team_id: 'not-mine' })).key;
    await adm('POST', '/keys', { name: 'no-team-key' });

    const signInHere = async (alter) => {
      const { login, location } = await startLogin(base);
      idp.next = alter ?? null;
      const res = await callback(await authorize(location), login);
      assert.equal(res.status, 302, await res.text());
      const session = cookieOf(res, 'sluice_session');
      const call = async (method, path, body, headers = {}) => {
        const r = await fetch(`${base}/admin/api${path}`, { method, body: body && JSON.stringify(body),
          headers: { cookie: `sluice_session=${session}`, 'content-type': 'application/json', ...headers } });
        const text = await r.text();
        return { status: r.status, json: text ? JSON.parse(text) : null, text };
      };
      return { call, who: (await call('GET', '/me')).json };
    };
    const names = (r) => r.json.data.map((x) => x.name).sort();

    idp.user = { sub: 'member-sub-1', email: 'mia@acme.test', name: 'Mia', groups: ['staff'] };
    const mia = await signInHere();
    assert.equal(mia.who.role, 'member');
    assert.equal(mia.who.actor, 'oidc:member-sub-1 <mia@acme.test>');
    assert.deepEqual(names(await mia.call('GET', '/teams')), ['by-mail', 'by-sub']);
    assert.deepEqual(names(await mia.call('GET', '/keys')), ['mail-key', 'sub-key']);
    assert.equal((await mia.call('GET', `/keys/${foreign.id}`)).status, 404);
    assert.equal((await mia.call('GET', '/logs')).status, 403);
    const csrf = { 'x-sluice-csrf': mia.who.csrf_token };
    const made = await mia.call('POST', '/keys', { name: 'mia-made', team_id: 'by-sub' }, csrf);
    assert.equal(made.status, 201, made.text);
    assert.equal(made.json.key.team_id, bySub.id);
    assert.equal((await mia.call('POST', '/keys', { name: 'mia-elsewhere', team_id: 'not-mine' }, csrf)).status, 403);
    const audit = await adm('GET', `/audit?target=/keys/${made.json.key.id}`);
    assert.deepEqual(audit.data.map((r) => [r.actor, r.role, r.action]), [['oidc:member-sub-1 <mia@acme.test>', 'member', 'create']]);

    // The same person with an e-mail the IdP has not verified: the subject's team only.
    const unverified = await signInHere((c) => ({ claims: { ...c, email_verified: false } }));
    assert.equal(unverified.who.email, '');
    assert.deepEqual(names(await unverified.call('GET', '/teams')), ['by-sub']);
    // Someone else claiming Mia's address, unverified: no team at all.
    idp.user = { sub: 'impostor-9', email: 'MIA@acme.test', name: 'Not Mia', groups: [] };
    const impostor = await signInHere((c) => ({ claims: { ...c, email_verified: 'false' } }));
    assert.deepEqual((await impostor.call('GET', '/teams')).json.data, []);
    assert.deepEqual((await impostor.call('GET', '/keys')).json.data, []);
    assert.equal((await impostor.call('GET', `/teams/${byMail.id}`)).status, 404);
    // Verified, the address is theirs.
    const verified = await signInHere((c) => ({ claims: { ...c, email_verified: true } }));
    assert.deepEqual(names(await verified.call('GET', '/teams')), ['by-mail']);
  } finally {
    idp.user = saved;
    await stop(other.proc);
  }
});

test('an IdP that is down gives a clear error page, not a hang', async () => {
  const port = await freePort();
  const dead = await freePort();
  const other = await startGateway(config(port, `http://127.0.0.1:${dead}`));
  try {
    const res = await fetch(`${other.url}/auth/login`, { redirect: 'manual' });
    assert.equal(res.status, 502);
    const body = await res.text();
    assert.match(body, /The identity provider cannot be reached/);
    assert.match(body, /discovery document cannot be reached/);
    assert.equal((await fetch(`${other.url}/healthz`)).status, 200);
  } finally {
    await stop(other.proc);
  }
});

test('client_secret_post when the IdP offers only that', async () => {
  const postIdp = await startHostileIdp({ authMethods: ['client_secret_post'] });
  const port = await freePort();
  const other = await startGateway(config(port, postIdp.issuer));
  try {
    const res = await fetch(`${other.url}/auth/login`, { redirect: 'manual' });
    const login = cookieOf(res, 'sluice_login');
    const cb = await authorize(res.headers.get('location'));
    const done = await callback(cb, login);
    assert.equal(done.status, 302);
    const tok = postIdp.requests.find((r) => r.path === '/token');
    assert.equal(tok.headers.authorization, undefined);
    const form = new URLSearchParams(tok.body);
    assert.equal(form.get('client_id'), CLIENT_ID);
    assert.equal(form.get('client_secret'), CLIENT_SECRET);
  } finally {
    await stop(other.proc);
    await postIdp.close();
  }
});
