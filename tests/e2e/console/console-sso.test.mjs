// The console's single sign-on in headless Chromium: a real OpenID Provider (the certified
// `oidc-provider` package, tests/e2e/console/idps.mjs) with users in groups, a real gateway with
// auth.oidc. An admin-group user and a viewer-group user each sign in through the IdP's own
// login and consent pages and see what their role allows; a user of an unmapped group is
// refused with a page saying why; sign-out ends the session at the gateway and at the IdP.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { MASTER, startGateway, stop } from '../../lib/harness.mjs';
import { freePort } from '../../lib/mcp-servers.mjs';
import { CLIENT_ID, CLIENT_SECRET, startRealIdp } from './idps.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ARTIFACTS = join(HERE, 'artifacts');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const UI_MS = 15_000;

let idp, gw, browser;
const pageErrors = [];

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  idp = await startRealIdp({ redirectUri: `${base}/auth/callback`, postLogoutUri: `${base}/` });
  gw = await startGateway(`server:
  listen: "127.0.0.1:${port}"
  workers: 2
auth:
  master_key: "${MASTER}"
  oidc:
    issuer: "${idp.issuer}"
    client_id: ${CLIENT_ID}
    client_secret: "${CLIENT_SECRET}"
    redirect_url: "${base}/auth/callback"
    post_logout_redirect_url: "${base}/"
    scopes: [openid, email, profile, groups]
    roles_claim: groups
    role_map: {platform-admins: admin, ml-platform: operator, finance: viewer}
channels:
  - name: sso-mock
    type: mock
    base_url: "http://127.0.0.1:1"
    keys: ["k"]
    models: ["mock-*"]
`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});

after(async () => {
  await browser?.close();
  await stop(gw?.proc);
  await idp?.close();
  assert.deepEqual(pageErrors, [], 'no uncaught errors in the console pages');
});

// Signs `user` in through the IdP's pages, from the console's sign-in page.
async function ssoSignIn(user) {
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(UI_MS);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${gw.url}/`);
  await page.getByTestId('sso-signin').click();
  // oidc-provider's login page, then its consent page.
  await page.waitForURL((u) => u.href.startsWith(idp.issuer));
  await page.locator('input[name="login"]').fill(user);
  await page.locator('input[name="password"]').fill('any-password');
  await page.locator('button[type="submit"]').click();
  await page.waitForURL((u) => u.href.startsWith(gw.url) || /interaction/.test(u.pathname));
  if (!page.url().startsWith(gw.url)) {
    await page.locator('button[type="submit"]').click();  // consent: "Continue"
    await page.waitForURL((u) => u.href.startsWith(gw.url));
  }
  return { context, page };
}

test('the sign-in page offers SSO beside the master key', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(UI_MS);
  await page.goto(`${gw.url}/`);
  await page.getByTestId('sso-signin').waitFor();
  assert.equal(await page.getByTestId('sso-signin').textContent(), 'Sign in with SSO');
  assert.equal(await page.getByLabel('Master key or admin token').count(), 1);
  await page.screenshot({ path: join(ARTIFACTS, 'sso-signin.png') });
  await context.close();
});

test('an admin-group user signs in through the IdP, sees every page, writes through the console, and signs out', async () => {
  const { context, page } = await ssoSignIn('alice');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await page.getByTestId('whoami').getByText('Alice Admin · admin').waitFor();
  const nav = await page.getByRole('navigation', { name: 'Console sections' }).textContent();
  for (const shown of ['Keys', 'Tokens', 'Audit']) assert.ok(nav.includes(shown), `${shown} is offered to an admin: ${nav}`);
  assert.ok(!nav.includes('Playground'), 'the playground needs the master key');
  // The session cookie as the browser keeps it.
  const cookie = (await context.cookies()).find((c) => c.name === 'sluice_session');
  assert.ok(cookie, 'the session cookie is set');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.secure, true);
  assert.equal(cookie.sameSite, 'Lax');
  assert.equal(cookie.path, '/');
  assert.equal(await page.evaluate(() => document.cookie.includes('sluice_session')), false, 'scripts cannot read it');
  // A write from the console (the CSRF token goes with it), audited under the OIDC subject.
  await page.goto(`${gw.url}/#/keys`);
  await page.getByRole('button', { name: 'New key' }).click();
  const form = page.getByTestId('key-form');
  await form.getByLabel('Name', { exact: true }).fill('sso-made');
  await form.getByRole('button', { name: 'Create key' }).click();
  await page.getByTestId('new-key-secret').waitFor();
  await page.getByRole('button', { name: 'I have stored it' }).click();
  await page.getByTestId('vkey-sso-made').waitFor();
  const audit = await (await fetch(`${gw.url}/admin/api/audit?action=create`, { headers: { authorization: `Bearer ${MASTER}` } })).json();
  assert.ok(audit.data.some((r) => r.actor === 'oidc:alice <alice@acme.test>' && r.target.startsWith('/keys/')), JSON.stringify(audit.data));
  await page.screenshot({ path: join(ARTIFACTS, 'sso-admin.png') });
  // Sign-out: the gateway's session ends, then the IdP's end-session page.
  const session = `sluice_session=${cookie.value}`;
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL((u) => u.href.startsWith(idp.issuer));
  const me = await fetch(`${gw.url}/admin/api/me`, { headers: { cookie: session } });
  assert.equal(me.status, 401);
  await context.close();
});

test('a viewer-group user sees the viewer\'s console: no admin pages, no write buttons', async () => {
  const { context, page } = await ssoSignIn('fred');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await page.getByTestId('whoami').getByText('Fred Finance · viewer').waitFor();
  const nav = await page.getByRole('navigation', { name: 'Console sections' }).textContent();
  for (const hidden of ['Tokens', 'Audit', 'Playground']) assert.ok(!nav.includes(hidden), `${hidden} is not offered to a viewer: ${nav}`);
  await page.goto(`${gw.url}/#/keys`);
  await page.getByTestId('vkey-sso-made').waitFor();
  assert.equal(await page.getByRole('button', { name: 'New key' }).count(), 0);
  await page.screenshot({ path: join(ARTIFACTS, 'sso-viewer.png') });
  await context.close();
});

test('a user whose groups map to no role gets a page saying so', async () => {
  const { context, page } = await ssoSignIn('mallory');
  await page.getByRole('heading', { name: 'No access' }).waitFor();
  assert.match(await page.getByTestId('auth-error').textContent(), /mallory@acme\.test.*none of your groups/);
  assert.equal((await context.cookies()).some((c) => c.name === 'sluice_session'), false);
  await context.close();
});
