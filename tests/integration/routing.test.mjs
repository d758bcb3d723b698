// Model aliases, per-channel model_map, extra headers and Azure deployment URLs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock, startGateway, gatewayYaml, chat, readSse, MASTER } from '../lib/harness.mjs';

let mock, gw;
before(async () => {
  mock = await startMock([]);
  const yaml = gatewayYaml({ channels: [
    { name: 'oa', url: mock.url, keys: ['sk-oa-0000000001'], models: ['gpt-4o', 'gpt-4o-mini'] },
  ] }).replace('routing:\n', 'routing:\n  aliases: {fast: gpt-4o-mini, pinned: oa/gpt-4o}\n') + `  - name: az
    type: azure
    base_url: "${mock.url}"
    keys: ["azure-key-000000001"]
    models: ["gpt-4.1"]
    model_map: {"gpt-4.1": "my-gpt41-deployment"}
    api_version: "2025-01-01-preview"
    headers: {X-Team: research}
`;
  gw = await startGateway(yaml);
});
after(async () => { await gw?.stop(); await mock?.stop(); });

test('an alias resolves before routing and is listed', async () => {
  await mock.reset();
  const res = await chat(gw, { model: 'fast', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.status, 200);
  await res.json();
  assert.equal((await mock.stats()).last_request.body.model, 'gpt-4o-mini');
  const pinned = await chat(gw, { model: 'pinned', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(pinned.headers.get('x-sluice-channel'), 'oa');
  await pinned.text();
  const ids = (await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${MASTER}` } })).json()).data.map((m) => m.id);
  assert.ok(ids.includes('fast'));
});

test('azure: deployment URL from model_map, api-version, api-key header, extra headers', async () => {
  await mock.reset();
  for (const stream of [false, true]) {
    const res = await chat(gw, { model: 'gpt-4.1', stream, messages: [{ role: 'user', content: 'x' }] });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-sluice-channel'), 'az');
    if (stream) assert.equal((await readSse(res)).events.at(-1), '[DONE]'); else await res.json();
  }
  const s = await mock.stats();
  assert.equal(s.last_request.path, '/openai/deployments/my-gpt41-deployment/chat/completions');
  assert.equal(s.last_request.query, 'api-version=2025-01-01-preview');
  assert.equal(s.last_request.headers['api-key'], 'azure-key-000000001');
  assert.equal(s.last_request.headers['authorization'], undefined);
  assert.equal(s.last_request.headers['x-team'], 'research');
  assert.equal(s.last_request.body.model, 'my-gpt41-deployment');
});
