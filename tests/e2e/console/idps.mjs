// OpenID Providers for the sign-in tests: the certified `oidc-provider` package with users in
// groups (the real one), and a small hand-made one that signs whatever ID token a test asks for
// with node's crypto (the hostile one: wrong issuer, audience, nonce, expired, tampered, rotated
// keys). Both listen on loopback ports.
import { createServer } from 'node:http';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import Provider from 'oidc-provider';

export const CLIENT_ID = 'sluice';
export const CLIENT_SECRET = 'oidc-client-secret-7c1e9a40d2';

// Users of the real provider: login name -> claims. Any password signs in (dev interactions).
export const USERS = {
  alice: { sub: 'alice-0001', email: 'alice@acme.test', name: 'Alice Admin', groups: ['platform-admins', 'staff'] },
  fred: { sub: 'fred-0002', email: 'fred@acme.test', name: 'Fred Finance', groups: ['finance'] },
  mallory: { sub: 'mallory-0003', email: 'mallory@acme.test', name: 'Mallory', groups: ['contractors'] },
};

function listen(server) {
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(server.address().port)));
}

// The real one. `redirectUri`, `postLogoutUri`: the gateway's.
export async function startRealIdp({ redirectUri, postLogoutUri }) {
  const server = createServer();
  const port = await listen(server);
  const issuer = `http://127.0.0.1:${port}`;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const provider = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID, client_secret: CLIENT_SECRET,
      redirect_uris: [redirectUri], post_logout_redirect_uris: [postLogoutUri],
      grant_types: ['authorization_code'], response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    jwks: { keys: [{ ...rsa, kid: 'real-rsa-1', use: 'sig', alg: 'RS256' }] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    conformIdTokenClaims: false,  // the groups claim in the ID token itself, as Keycloak's mapper puts it
    pkce: { required: () => true },
    cookies: { keys: ['oidc-test-cookie-key-0123456789'] },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    async findAccount(ctx, id) {
      const u = USERS[id];
      if (!u) return undefined;
      return { accountId: id, async claims() { return { ...u, sub: id, email_verified: true }; } };
    },
  });
  provider.proxy = false;
  server.on('request', provider.callback());
  return { issuer, port, close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }) };
}

function b64u(buf) { return Buffer.from(buf).toString('base64url'); }

function newKey(kind, kid) {
  if (kind === 'EC') {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return { kid, alg: 'ES256', privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'ES256' } };
  }
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, alg: 'RS256', privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' } };
}

export function signJwt(header, claims, key) {
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}`;
  const sig = key.alg === 'ES256'
    ? sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' })
    : sign('sha256', Buffer.from(input), key.privateKey);
  return `${input}.${b64u(sig)}`;
}

// The hand-made one. Its authorize endpoint answers at once (no login page) with a code bound to
// the request's nonce and code_challenge; its token endpoint checks the client's credentials
// and the PKCE verifier, then signs an ID token that `idp.next` may alter once:
//   idp.next = (claims, header) => ({claims, header, tamper, key})
// Every request it received is in idp.requests (method, path, headers, body).
export async function startHostileIdp({ authMethods = ['client_secret_basic', 'client_secret_post'] } = {}) {
  const idp = {
    keys: [newKey('RSA', 'rsa-1'), newKey('EC', 'ec-1')],
    signer: 0,         // index of the key that signs
    next: null,
    requests: [],
    codes: new Map(),  // code -> {nonce, challenge, redirect_uri, user}
    user: { sub: 'hostile-user-1', email: 'hu@acme.test', name: 'Hostile User', groups: ['platform-admins'] },
    down: false,
  };
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    idp.requests.push({ method: req.method, path: req.url, headers: req.headers, body });
    const url = new URL(req.url, idp.issuer);
    const json = (status, v) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(v)); };
    if (idp.down) { res.destroy(); return; }
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer: idp.issuer,
        authorization_endpoint: `${idp.issuer}/authorize?tenant=t1`,
        token_endpoint: `${idp.issuer}/token`,
        jwks_uri: `${idp.issuer}/jwks`,
        end_session_endpoint: `${idp.issuer}/logout`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: authMethods,
        id_token_signing_alg_values_supported: ['RS256', 'ES256'],
      });
    }
    if (url.pathname === '/jwks') return json(200, { keys: idp.keys.map((k) => k.jwk) });
    if (url.pathname === '/authorize') {
      const q = url.searchParams;
      const code = b64u(randomBytes(16));
      idp.codes.set(code, { nonce: q.get('nonce'), challenge: q.get('code_challenge'), redirect_uri: q.get('redirect_uri'), user: idp.user });
      const back = new URL(q.get('redirect_uri'));
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state'));
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      const form = new URLSearchParams(body);
      let id = form.get('client_id'), secret = form.get('client_secret');
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      if (basic) [id, secret] = Buffer.from(basic[1], 'base64').toString().split(':').map(decodeURIComponent);
      if (id !== CLIENT_ID || secret !== CLIENT_SECRET) return json(401, { error: 'invalid_client' });
      const grant = idp.codes.get(form.get('code'));
      idp.codes.delete(form.get('code'));
      if (!grant) return json(400, { error: 'invalid_grant', error_description: 'unknown code' });
      const challenge = b64u(createHash('sha256').update(form.get('code_verifier') ?? '').digest());
      if (challenge !== grant.challenge) return json(400, { error: 'invalid_grant', error_description: 'PKCE verification failed' });
      if (form.get('redirect_uri') !== grant.redirect_uri) return json(400, { error: 'invalid_grant', error_description: 'redirect_uri' });
      const now = Math.floor(Date.now() / 1000);
      let claims = { iss: idp.issuer, sub: grant.user.sub, aud: CLIENT_ID, exp: now + 300, iat: now, nonce: grant.nonce,
        email: grant.user.email, name: grant.user.name, groups: grant.user.groups };
      let key = idp.keys[idp.signer];
      let header = { alg: key.alg, typ: 'JWT', kid: key.kid };
      let tamper = false;
      if (idp.next) {
        const t = idp.next(claims, header);
        idp.next = null;
        claims = t.claims ?? claims; header = t.header ?? header; tamper = !!t.tamper; key = t.key ?? key;
      }
      let token = header.alg === 'none'
        ? `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}.`
        : signJwt(header, claims, key);
      if (tamper) {
        // The same header and signature over other claims: a changed payload.
        const [h, , s] = token.split('.');
        token = `${h}.${b64u(JSON.stringify({ ...claims, groups: ['platform-admins'], sub: 'someone-else' }))}.${s}`;
      }
      return json(200, { access_token: 'at-' + b64u(randomBytes(8)), token_type: 'Bearer', expires_in: 300, id_token: token });
    }
    json(404, { error: 'not_found' });
  });
  const port = await listen(server);
  idp.port = port;
  idp.issuer = `http://127.0.0.1:${port}`;
  idp.rotate = (kind = 'RSA') => {
    const k = newKey(kind, `${kind.toLowerCase()}-${idp.keys.length + 1}-${b64u(randomBytes(3))}`);
    idp.keys = [k];
    idp.signer = 0;
    return k;
  };
  idp.keyFor = newKey;
  idp.close = () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); });
  return idp;
}
