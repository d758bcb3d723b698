// The console's channel form for the cloud providers, in headless Chromium against a real sluice
// and `sluice mock`: a vertex channel (project, location, the service account's JSON pasted as its
// first key), an azure channel with Entra ID (tenant, client id, client secret, token URL) and a
// Claude subscription channel (its credential file pasted), each created through the form and
// checked through the admin API afterwards; the Entra and vertex ones then serve a request.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateKeyPairSync } from 'node:crypto';
import { chromium } from 'playwright-core';
import { MASTER, startMock, startGateway, tempDir, sleep } from '../../lib/harness.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ARTIFACTS = join(HERE, 'artifacts');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const UI_MS = 15_000;
const POLL_MS = 25_000;
const CLIENT_SECRET = 'console-entra-secret-0123456789';
const TENANT = 'contoso.onmicrosoft.com';
const EMAIL = 'console@my-project.iam.gserviceaccount.com';
const KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
const dir = tempDir();

let mock, gw, browser, page;
const pageErrors = [];
const saJson = (tokenUri) => JSON.stringify({
  type: 'service_account', project_id: 'my-project', private_key_id: 'k1', private_key: KEY, client_email: EMAIL,
  client_id: '1', token_uri: tokenUri,
}, null, 2);
const api = async (path, init = {}) => {
  const res = await fetch(`${gw.url}/admin/api${path}`, { ...init, headers: { authorization: `Bearer ${MASTER}`,
    'content-type': 'application/json' } });
  return { status: res.status, json: await res.json() };
};
const chat = (model) => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST',
  headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
async function servedBy(model) {
  for (let i = 0; i < 100; i++) {
    const r = await chat(model);
    await r.text();
    if (r.status === 200) return r.headers.get('x-sluice-channel');
    await sleep(100);
  }
  return null;
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium (or set CHROMIUM_BIN)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  const mockSa = join(dir, 'mock-sa.json');
  writeFileSync(mockSa, saJson('unused'));
  mock = await startMock(['--google-sa', mockSa, '--entra-client', `app-console:${CLIENT_SECRET}`]);
  gw = await startGateway(`store:
  url: "sqlite://${join(dir, 'sluice.db')}"
  secret_key: "console-cloud-secret-key-0123456789abcdef"
server:
  listen: "127.0.0.1:0"
  workers: 2
auth:
  master_key: "${MASTER}"
routing:
  discovery_interval: "0s"
channels:
  - name: from-file
    type: openai
    base_url: "${mock.url}/v1"
    keys: ["sk-file-key-abcdef123456"]
    models: ["file-*"]
`);
  const res = await fetch(`${gw.url}/`);
  assert.ok((await res.text()).includes('id="app"'), 'the gateway serves the console: run `make console` and rebuild');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await (await browser.newContext({ viewport: { width: 1366, height: 900 } })).newPage();
  page.setDefaultTimeout(UI_MS);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) pageErrors.push(m.text());
  });
  await page.goto(`${gw.url}/`);
  await page.getByLabel('Master key').fill(MASTER);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});

after(async () => {
  await browser?.close();
  await gw?.stop();
  await mock?.stop();
});

async function newChannelForm() {
  await page.goto(`${gw.url}/#/channels`);
  await page.locator('#page-title').waitFor();
  await page.getByRole('button', { name: 'New channel' }).click();
  return page.getByTestId('channel-form');
}

test('a vertex channel: project, location and the service account JSON pasted in the form', async () => {
  const form = await newChannelForm();
  await form.getByLabel('Name', { exact: true }).fill('ui-vertex');
  await form.getByLabel('Type').selectOption('vertex');
  await form.getByLabel('Base URL').fill(mock.url);
  await form.getByLabel('Models').fill('gemini-ui-*');
  await form.getByLabel('Google Cloud project').fill('my-project');
  await form.getByLabel('Location').fill('us-central1');
  await form.getByLabel('Service account JSON key (optional)').fill(saJson(`${mock.url}/token`));
  await form.getByRole('button', { name: 'Create channel' }).click();
  const card = page.getByTestId('channel-ui-vertex');
  await card.waitFor();
  await card.locator('tbody tr[data-state]').first().waitFor({ timeout: POLL_MS });
  assert.match(await card.textContent(), new RegExp(`sa:${EMAIL}`));
  assert.match(await card.textContent(), /Project \/ locationmy-project \/ us-central1/);
  assert.ok(!(await page.content()).includes('PRIVATE KEY'), 'the private key is on the page');

  const ch = (await api('/channels')).json.data.find((c) => c.name === 'ui-vertex');
  assert.equal(ch.type, 'vertex');
  assert.equal(ch.project, 'my-project');
  assert.equal(ch.location, 'us-central1');
  assert.equal(ch.keys.length, 1);
  assert.equal(ch.keys[0].masked, `sa:${EMAIL}`);
  assert.equal(await servedBy('gemini-ui-1'), 'ui-vertex');
  const st = await (await fetch(`${mock.url}/mock/stats`)).json();
  assert.match(st.last_request.path, /^\/v1\/projects\/my-project\/locations\/us-central1\/publishers\/google\/models\/gemini-ui-1:generateContent$/);
  await page.screenshot({ path: join(ARTIFACTS, 'channels-vertex.png'), fullPage: true });
});

test('an azure channel with Entra ID: the client secret sealed, masked in the form and the API, and used', async () => {
  const form = await newChannelForm();
  await form.getByLabel('Name', { exact: true }).fill('ui-entra');
  await form.getByLabel('Type').selectOption('azure');
  await form.getByLabel('Base URL').fill(mock.url);
  await form.getByLabel('Models').fill('gpt-ui-entra');
  await form.getByRole('group', { name: 'Entra ID (optional)' }).waitFor();
  // A token URL that is not https on a public host is refused next to its field.
  await form.getByLabel('Tenant').fill(TENANT);
  await form.getByLabel('Client (application) id').fill('app-console');
  await form.getByLabel('Client secret').fill(CLIENT_SECRET);
  await form.getByLabel('Token URL (optional)').fill('http://login.example.com/token');
  await form.getByRole('button', { name: 'Create channel' }).click();
  await form.locator('.field-invalid .field-error').filter({ hasText: /token_url/ }).waitFor();
  await form.getByLabel('Token URL (optional)').fill(`${mock.url}/${TENANT}/oauth2/v2.0/token`);
  await form.getByRole('button', { name: 'Create channel' }).click();
  const card = page.getByTestId('channel-ui-entra');
  await card.waitFor();
  assert.ok(!(await page.content()).includes(CLIENT_SECRET), 'the secret is on the page');
  assert.equal(await card.getByTestId('channel-entra').textContent(), `application app-console in tenant ${TENANT}`);

  const ch = (await api('/channels')).json.data.find((c) => c.name === 'ui-entra');
  assert.equal(ch.type, 'azure');
  assert.equal(ch.tenant_id, TENANT);
  assert.equal(ch.client_id, 'app-console');
  assert.equal(ch.client_secret, 'con…89');
  assert.equal(ch.token_url, `${mock.url}/${TENANT}/oauth2/v2.0/token`);
  assert.equal(await servedBy('gpt-ui-entra'), 'ui-entra');
  const st = await (await fetch(`${mock.url}/mock/stats`)).json();
  assert.match(st.last_request.headers.authorization, /^Bearer eyJ0\.mock-entra-/);

  // Editing another field leaves the masked secret as it is stored.
  await card.getByRole('button', { name: 'Edit' }).click();
  const edit = card.getByTestId('channel-form');
  assert.equal(await edit.getByLabel('Client secret').inputValue(), 'con…89');
  await edit.getByLabel('Priority').fill('3');
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await edit.waitFor({ state: 'detached' });
  const after = (await api(`/channels/${ch.id}`)).json;
  assert.equal(after.priority, 3);
  assert.equal(after.client_secret, 'con…89');
  await (await fetch(`${mock.url}/mock/oauth/revoke`, { method: 'POST' })).text();
  assert.equal(await servedBy('gpt-ui-entra'), 'ui-entra', 'the stored secret still gets tokens');
  const audit = JSON.stringify((await api('/audit?limit=50')).json);
  assert.ok(!audit.includes(CLIENT_SECRET), 'the audit log holds the secret');
  await page.screenshot({ path: join(ARTIFACTS, 'channels-entra.png'), fullPage: true });
});

test('a Claude subscription channel created in the form with its credential file pasted', async () => {
  const ACCESS = 'sk-ant-oat01-console-form-0123456789';
  const REFRESH = 'sk-ant-ort01-console-form-0123456789';
  const form = await newChannelForm();
  await form.getByLabel('Name', { exact: true }).fill('ui-claude');
  await form.getByLabel('Type').selectOption('anthropic');
  await form.getByLabel('Base URL').fill(mock.url);
  await form.getByLabel('Models').fill('sub-ui-*');
  await form.getByLabel('Subscription').selectOption('claude');
  await form.getByLabel('Credential file (optional)').fill(JSON.stringify({ claudeAiOauth: { accessToken: ACCESS,
    refreshToken: REFRESH, expiresAt: Date.now() + 86_400_000, scopes: ['user:inference'], subscriptionType: 'max' } }, null, 2));
  await form.getByRole('button', { name: 'Create channel' }).click();
  const card = page.getByTestId('channel-ui-claude');
  await card.waitFor();
  await card.locator('tbody tr[data-state]').first().waitFor({ timeout: POLL_MS });
  assert.match(await card.textContent(), /\{credential\}/);
  const html = await page.content();
  assert.ok(!html.includes(ACCESS) && !html.includes(REFRESH), 'a token is on the page');
  const ch = (await api('/channels')).json.data.find((c) => c.name === 'ui-claude');
  assert.equal(ch.type, 'anthropic');
  assert.equal(ch.subscription, 'claude');
  assert.deepEqual(ch.keys.map((k) => k.masked), ['{credential}']);
});

test('the console raised no script errors', () => {
  assert.deepEqual(pageErrors, []);
});
