// Coding agents through sluice, unchanged: Claude Code, OpenAI's Codex CLI, Gemini CLI (each
// run headless as a real process) and the Vercel AI SDK, with only their base URL and key
// pointed at a gateway on loopback, which serves them from `sluice mock` over channels of
// their own wire format (relayed natively) and of the other formats (translated).
//
// Every CLI run gets a fresh temporary HOME (nothing is read from or written to the real home),
// an environment built from scratch (no real provider keys or base URLs leak in), telemetry,
// error reporting and update checks off, and a hard timeout after which its whole process
// group is killed. Every base URL is http://127.0.0.1:PORT.
//
// The mock calls a tool only when the last user turn names one of the offered tools, filling
// the arguments from the tool's schema with placeholders ("example"); the tool then usually
// fails (no file/command "example"), which still sends a tool result back and completes the
// loop. /mock/stats `last_request` shows the request that carried it.
//
// Install: (cd tests/e2e/agents && npm ci). Run: SLUICE_BIN=build/sluice node --test tests/e2e/agents/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMock, startGateway, waitFor, admin, createKey, metrics, metricValue, MASTER } from '../../lib/harness.mjs';
// server-everything, run by the gateway over stdio behind /mcp, for `claude mcp add --transport http`.
import { EVERYTHING } from '../../lib/mcp-servers.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const BIN_DIR = join(HERE, 'node_modules', '.bin');
const RUN_TIMEOUT_MS = Number(process.env.AGENT_RUN_TIMEOUT_MS || 60000);
const pkg = JSON.parse(readFileSync(join(HERE, 'package.json'), 'utf8'));

let mock, gw;
const homes = [];

before(async () => {
  mock = await startMock(['--chunks', '4']);
  gw = await startGateway({ channels: [
    { name: 'oa', type: 'openai', url: mock.url, models: ['gpt-4o-mini'] },
    { name: 'an', type: 'anthropic', base_url: mock.url, models: ['claude-sonnet-4-5', 'claude-haiku-4-5'] },
    { name: 'ge', type: 'gemini', base_url: mock.url, models: ['gemini-2.5-flash'] },
    // A chat-completions-only server (vLLM, Ollama...): Responses requests reach it as chat.
    { name: 'vllm', type: 'openai-compatible', url: mock.url, models: ['llama-3.1-8b'] },
  ], extra: `mcp:\n  servers:\n    - {name: tools, command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(EVERYTHING)}, stdio], timeout: 20s}\n` });
});
after(async () => {
  await gw?.stop();
  await mock?.stop();
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});

const CHANNEL_OF = { 'gpt-4o-mini': 'oa', 'claude-sonnet-4-5': 'an', 'claude-haiku-4-5': 'an', 'gemini-2.5-flash': 'ge', 'llama-3.1-8b': 'vllm' };

// ---------------------------------------------------------------------------------------------
// helpers

function freshHome() {
  const home = mkdtempSync(join(tmpdir(), 'sluice-agent-'));
  homes.push(home);
  const work = join(home, 'work');
  mkdirSync(work);
  return { home, work };
}

function cliPath(name) {
  const p = join(BIN_DIR, name);
  if (!existsSync(p)) {
    assert.fail(`${name} is not installed: ${p} is missing. Run \`npm ci\` in tests/e2e/agents ` +
      `(package.json pins ${JSON.stringify(pkg.dependencies)}).`);
  }
  return p;
}

// Runs a CLI in its own process group with a scratch environment; kills the group on timeout.
function runCli(name, args, { env, cwd, timeoutMs = RUN_TIMEOUT_MS }) {
  const file = cliPath(name);
  const baseEnv = {
    PATH: process.env.PATH, HOME: env.HOME, USER: 'sluice-test', LANG: 'C.UTF-8', TERM: 'dumb',
    NO_COLOR: '1', CI: '1', TMPDIR: tmpdir(),
    // no proxy can divert loopback traffic
    NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost',
  };
  const started = Date.now();
  return new Promise((resolveP) => {
    const child = spawn(file, args, { cwd, env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '', stderr = '', timedOut = false;
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const killGroup = (sig) => { try { process.kill(-child.pid, sig); } catch {} };
    const timer = setTimeout(() => { timedOut = true; killGroup('SIGKILL'); }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      killGroup('SIGKILL'); // anything the CLI left behind in its group
      resolveP({ name, args, code, signal, stdout, stderr, timedOut, started, ended: Date.now(), ms: Date.now() - started });
    });
    child.on('error', (e) => { clearTimeout(timer); resolveP({ name, args, code: -1, error: e, stdout, stderr, timedOut, started, ended: Date.now(), ms: Date.now() - started }); });
  });
}

const tail = (s, n = 3000) => (s.length > n ? '…' + s.slice(-n) : s);

// The gateway's access lines of a run: those stamped while it ran (tests here run one at a
// time). They leave the gateway in 50 ms batches: wait for the batch after the run's end.
async function accessOf(run) {
  const wait = run.ended + 200 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  return gw.accessLines().filter((l) => l.ts >= run.started - 5 && l.ts <= run.ended + 5);
}

async function explain(run, note = '') {
  const lines = (await accessOf(run)).map((l) => `${l.method} ${l.path} model=${l.model} channel=${l.channel} status=${l.status}`);
  return `${note}\n--- ${run.name} ${run.args.map((a) => JSON.stringify(a)).join(' ')}\n` +
    `exit=${run.code} signal=${run.signal} timedOut=${run.timedOut} (${run.ms} ms, limit ${RUN_TIMEOUT_MS} ms)` +
    `${run.error ? ' spawn error: ' + run.error.message : ''}\n` +
    `--- gateway requests of this run:\n${lines.join('\n') || '(none)'}\n` +
    `--- stdout:\n${tail(run.stdout)}\n--- stderr:\n${tail(run.stderr)}`;
}

// The run exited by itself, 0, in time; the gateway answered all its model calls with 200 on
// the expected channel.
async function assertCleanRun(run, model, path = /./) {
  if (run.timedOut) assert.fail(await explain(run, `${run.name} did not finish within ${RUN_TIMEOUT_MS} ms (killed)`));
  if (run.code !== 0) assert.fail(await explain(run, `${run.name} exited with ${run.code}`));
  const lines = await accessOf(run);
  if (lines.length === 0) assert.fail(await explain(run, `${run.name} never reached the gateway`));
  const bad = lines.filter((l) => l.status !== 200 || l.channel !== CHANNEL_OF[l.model] || !path.test(l.path) ||
    (l.model !== model && !l.model?.startsWith('claude-haiku')));
  if (bad.length) assert.fail(await explain(run, `gateway answered ${run.name} with errors, on the wrong channel or endpoint (want model ${model} on ${CHANNEL_OF[model]}, path ${path})`));
  return lines;
}

// Did this upstream request body (any of the four wire formats) carry a call of `tool` and the
// result that answers it?
function toolRoundTripIn(body, tool) {
  if (!body) return false;
  const ids = new Set();
  if (Array.isArray(body.messages)) { // anthropic messages or openai chat
    for (const m of body.messages) {
      if (Array.isArray(m.content)) for (const b of m.content) if (b.type === 'tool_use' && b.name === tool) ids.add(b.id);
      for (const c of m.tool_calls ?? []) if (c.function?.name === tool) ids.add(c.id);
    }
    return body.messages.some((m) => (m.role === 'tool' && ids.has(m.tool_call_id)) ||
      (Array.isArray(m.content) && m.content.some((b) => b.type === 'tool_result' && ids.has(b.tool_use_id))));
  }
  if (Array.isArray(body.input)) { // openai responses
    for (const it of body.input) if (it.type === 'function_call' && it.name === tool) ids.add(it.call_id);
    return body.input.some((it) => it.type === 'function_call_output' && ids.has(it.call_id));
  }
  if (Array.isArray(body.contents)) { // gemini
    const parts = body.contents.flatMap((c) => c.parts ?? []);
    return parts.some((p) => p.functionCall?.name === tool) && parts.some((p) => p.functionResponse?.name === tool);
  }
  return false;
}

async function assertToolResultReachedUpstream(run, tool) {
  const last = (await mock.stats()).last_request;
  if (!toolRoundTripIn(last?.body, tool)) {
    assert.fail(await explain(run, `the upstream never received a result for a ${tool} call; mock last_request ` +
      `${last?.method} ${last?.path}: ${tail(JSON.stringify(last?.body ?? null), 1500)}`));
  }
}

// ---------------------------------------------------------------------------------------------
// Claude Code (@anthropic-ai/claude-code): Anthropic Messages at ANTHROPIC_BASE_URL/v1/messages

function claudeEnv(model) {
  const { home, work } = freshHome();
  return { cwd: work, env: {
    HOME: home,
    ANTHROPIC_BASE_URL: gw.url, ANTHROPIC_API_KEY: MASTER,
    ANTHROPIC_MODEL: model,
    // the small/fast model (titles, summaries...): the same family, reachable through sluice
    ANTHROPIC_SMALL_FAST_MODEL: model.startsWith('claude') ? 'claude-haiku-4-5' : model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model.startsWith('claude') ? 'claude-haiku-4-5' : model,
    DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_BUG_COMMAND: '1',
  } };
}

async function claude(model, prompt, { tool, extraEnv = {} } = {}) {
  const { cwd, env } = claudeEnv(model);
  const args = ['-p', prompt, '--output-format', 'json', '--model', model];
  if (tool) args.push('--allowedTools', tool);
  const run = await runCli('claude', args, { cwd, env: { ...env, ...extraEnv } });
  await assertCleanRun(run, model, /^\/v1\/messages$/);
  let out;
  try { out = JSON.parse(run.stdout.trim().split('\n').pop()); } catch { assert.fail(await explain(run, 'claude printed no JSON result')); }
  // Claude Code exits 0 even when the API call failed: the JSON result says so.
  if (out.is_error || out.subtype !== 'success') assert.fail(await explain(run, `claude reported an error: ${out.result}`));
  assert.ok(typeof out.result === 'string' && out.result.length > 0, await explain(run, 'empty answer'));
  if (tool) {
    assert.ok(out.num_turns >= 2, await explain(run, `no tool turn (num_turns ${out.num_turns})`));
    assert.deepEqual(out.permission_denials ?? [], [], await explain(run, 'the allowed tool was denied'));
    await assertToolResultReachedUpstream(run, tool);
  }
  return out;
}

test('Claude Code -> claude-sonnet-4-5 on an anthropic channel (native): answer', async () => {
  const out = await claude('claude-sonnet-4-5', 'Say hi');
  assert.ok(out.usage?.output_tokens > 0);
});

test('Claude Code -> claude-sonnet-4-5 on an anthropic channel (native): Bash tool round trip', async () => {
  await claude('claude-sonnet-4-5', 'Use the Bash tool to run: echo hi', { tool: 'Bash' });
});

test('Claude Code -> gpt-4o-mini on an openai channel (translated): Bash tool round trip', async () => {
  await claude('gpt-4o-mini', 'Use the Bash tool to run: echo hi', { tool: 'Bash' });
});

test('Claude Code -> gemini-2.5-flash on a gemini channel (translated): answer', async () => {
  await claude('gemini-2.5-flash', 'Say hi');
});

// Not a configuration a user needs: Claude Code sends `thinking: {type: "adaptive"}` to models it
// does not know; with thinking off, this tells apart a failure of that field's translation from
// any other failure of the translated path.
test('Claude Code -> gpt-4o-mini (translated), diagnostic with thinking off: Bash tool round trip', async () => {
  await claude('gpt-4o-mini', 'Use the Bash tool to run: echo hi', { tool: 'Bash', extraEnv: { CLAUDE_CODE_DISABLE_THINKING: '1' } });
});

// Claude Code with the gateway's /mcp added as its MCP server (`claude mcp add --transport http`,
// a virtual key in the header): the mock model calls the MCP tool, Claude Code calls it through
// the gateway, which runs it on server-everything and logs the call; the result goes back to the
// model. The key may use one tool only: the other is not even listed to Claude Code.
test('Claude Code -> an MCP tool through the gateway (claude mcp add --transport http), limited by allowed_tools', async () => {
  assert.ok(existsSync(EVERYTHING), `${EVERYTHING} is missing: run npm ci in tests/e2e`);
  assert.equal(await waitFor(async () => metricValue(await metrics(gw), 'sluice_mcp_server_up') === 1, 20000), true,
    'the MCP server behind the gateway comes up');
  const { key, secret } = await createKey(gw, { name: 'claude-mcp', allowed_tools: ['tools__echo'] });
  const model = 'claude-sonnet-4-5';
  const { cwd, env } = claudeEnv(model);
  env.ANTHROPIC_API_KEY = secret;
  const add = await runCli('claude', ['mcp', 'add', '--transport', 'http', '--scope', 'user', 'sluice', `${gw.url}/mcp`,
    '--header', `Authorization: Bearer ${secret}`], { cwd, env });
  assert.equal(add.code, 0, await explain(add, 'claude mcp add failed'));
  const list = await runCli('claude', ['mcp', 'list'], { cwd, env });
  assert.match(list.stdout, /sluice: http:\/\/127\.0\.0\.1:\d+\/mcp \(HTTP\) - . Connected/, await explain(list, 'claude mcp list does not show the gateway connected'));

  const tool = 'mcp__sluice__tools__echo';
  // Built-in tools off (--tools ""): the model sees the MCP tools only, so the mock calls just this one.
  const run = await runCli('claude', ['-p', `Use the ${tool} tool`, '--output-format', 'json', '--model', model,
    '--tools', '', '--allowedTools', tool], { cwd, env });
  if (run.timedOut || run.code !== 0) assert.fail(await explain(run, 'claude did not finish cleanly'));
  let out;
  try { out = JSON.parse(run.stdout.trim().split('\n').pop()); } catch { assert.fail(await explain(run, 'claude printed no JSON result')); }
  if (out.is_error || out.subtype !== 'success') assert.fail(await explain(run, `claude reported an error: ${out.result}`));
  assert.ok(out.num_turns >= 2, await explain(run, `no tool turn (num_turns ${out.num_turns})`));
  assert.deepEqual(out.permission_denials ?? [], [], await explain(run, 'the MCP tool was denied'));

  // The model offered Claude Code's tools: the allowed MCP tool is among them, the other tools of
  // the server are not (allowed_tools applies to the list Claude Code got from the gateway).
  const last = (await mock.stats()).last_request;
  const offered = (last?.body?.tools ?? []).map((t) => t.name).filter((n) => n.startsWith('mcp__'));
  assert.deepEqual(offered, [tool], `MCP tools offered to the model: ${offered}`);
  assert.ok(toolRoundTripIn(last?.body, tool), await explain(run, `no ${tool} round trip reached the model`));
  const result = JSON.stringify(last.body.messages.at(-1));
  assert.match(result, /Echo: example/, 'the tool result is server-everything\'s echo of the argument');

  // The call is a request-log row of the key: channel the server, model the tool.
  const row = await waitFor(async () => {
    const page = await (await admin(gw, `/logs?virtual_key_id=${key.id}&limit=50`)).json();
    return page.data.find((r) => r.channel === 'tools' && r.model === 'echo');
  }, 5000);
  assert.ok(row, 'the MCP tool call is in the request log under the key');
  assert.equal(row.status, 200);
});

// ---------------------------------------------------------------------------------------------
// Codex CLI (@openai/codex): OpenAI Responses at base_url/responses, configured in CODEX_HOME

// model null: none configured, Codex asks for its own default.
function codexSetup(model, { wireApi = 'responses', extraToml = '', url = gw.url } = {}) {
  const { home, work } = freshHome();
  const codexHome = join(home, '.codex');
  mkdirSync(codexHome);
  writeFileSync(join(codexHome, 'config.toml'), [
    model === null ? '' : `model = "${model}"`,
    'model_provider = "sluice"',
    'check_for_update_on_startup = false',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    extraToml,
    '[analytics]', 'enabled = false',
    '[feedback]', 'enabled = false',
    '[otel]', 'exporter = "none"',
    '[model_providers.sluice]',
    'name = "Sluice"',
    `base_url = "${url}/v1"`,
    'env_key = "SLUICE_API_KEY"',
    `wire_api = "${wireApi}"`,
    '',
  ].join('\n'));
  return { cwd: work, env: { HOME: home, CODEX_HOME: codexHome, SLUICE_API_KEY: MASTER } };
}

async function codex(model, prompt, opts = {}) {
  const { cwd, env } = codexSetup(model, opts);
  const run = await runCli('codex', ['exec', '--json', '--skip-git-repo-check', '--sandbox', 'read-only', prompt], { cwd, env });
  await assertCleanRun(run, model, /^\/v1\/responses$/);
  const events = run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const failed = events.find((e) => e.type === 'turn.failed' || e.type === 'error');
  if (failed) assert.fail(await explain(run, `codex reported: ${JSON.stringify(failed)}`));
  const answer = events.filter((e) => e.type === 'item.completed' && e.item?.type === 'agent_message').map((e) => e.item.text).join('\n');
  assert.ok(answer.length > 0, await explain(run, 'codex printed no answer'));
  assert.ok(events.some((e) => e.type === 'turn.completed'), await explain(run, 'no turn.completed event'));
  return { run, events, answer };
}

async function codexToolRoundTrip(model, opts) {
  const { run, events, answer } = await codex(model, 'Use the exec_command tool to run: echo hi', opts);
  const cmd = events.find((e) => e.type === 'item.completed' && e.item?.type === 'command_execution');
  assert.ok(cmd, await explain(run, 'codex ran no command'));
  assert.match(answer, /The tool returned/, await explain(run, 'the answer does not come from the tool result'));
  await assertToolResultReachedUpstream(run, 'exec_command');
}

test('Codex -> gpt-4o-mini on an openai channel (/v1/responses native): answer', async () => {
  const { answer } = await codex('gpt-4o-mini', 'Say hi');
  assert.match(answer, /Hello/);
});

test('Codex -> gpt-4o-mini on an openai channel (/v1/responses native): exec_command tool round trip', async () => {
  await codexToolRoundTrip('gpt-4o-mini');
});

test('Codex -> llama-3.1-8b on an openai-compatible channel (Responses translated to chat): exec_command tool round trip', async () => {
  await codexToolRoundTrip('llama-3.1-8b');
});

test('Codex -> claude-sonnet-4-5 on an anthropic channel (translated): exec_command tool round trip', async () => {
  await codexToolRoundTrip('claude-sonnet-4-5');
});

test('Codex -> gemini-2.5-flash on a gemini channel (translated): answer', async () => {
  await codex('gemini-2.5-flash', 'Say hi');
});

// Not a configuration a user needs: Codex always offers a `web_search` hosted tool and a
// `namespace` tool (multi_agent_v1); with both turned off, this tells apart a failure to carry
// those to other providers from any other failure of the translated path.
const codexPlainTools = { extraToml: 'web_search = "disabled"\n[features]\nmulti_agent = false' };
for (const model of ['llama-3.1-8b', 'claude-sonnet-4-5']) {
  test(`Codex -> ${model} (translated), diagnostic without web_search/namespace tools: exec_command tool round trip`, async () => {
    await codexToolRoundTrip(model, codexPlainTools);
  });
}

// Codex on its default model, with no model configured. That model's requests take Codex's
// "responses-lite" shape: no `tools`, an `additional_tools` input item holding namespaces
// ("functions", "collaboration", ...) whose shell is `exec`, a custom (free-form JavaScript) tool;
// calls come back as custom_tool_call items with a namespace. Each direction gets a gateway of its
// own that serves the default model by name from one channel (or, for failover, from an OpenAI
// channel that is down and an Anthropic one behind it).
const CODEX_DEFAULT_MODEL = 'gpt-6.2-sol'; // @openai/codex 0.171.0's default
const JS_PROMPT = 'Use the exec tool to run: text("hi from js")';

// Codex's built-in OpenAI provider: no [model_providers] table, only openai_base_url, and the key
// from `codex login --with-api-key` (the auth.json it writes). It opens the Responses WebSocket
// (GET /v1/responses, upgraded) and falls back to POST only if that fails.
function codexBuiltInSetup(url) {
  const { home, work } = freshHome();
  const codexHome = join(home, '.codex');
  mkdirSync(codexHome);
  writeFileSync(join(codexHome, 'config.toml'), [
    `openai_base_url = "${url}/v1"`,
    'check_for_update_on_startup = false',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    '[analytics]', 'enabled = false',
    '[feedback]', 'enabled = false',
    '[otel]', 'exporter = "none"',
    '',
  ].join('\n'));
  writeFileSync(join(codexHome, 'auth.json'), JSON.stringify({ auth_mode: 'apikey', OPENAI_API_KEY: MASTER }));
  return { cwd: work, env: { HOME: home, CODEX_HOME: codexHome } };
}

async function codexDefaultModel(type, { failover = false, builtIn = false } = {}) {
  const served = type === 'openai'
    ? { name: 'target', type, url: mock.url, models: [CODEX_DEFAULT_MODEL], priority: 2 }
    : { name: 'target', type, base_url: type === 'openai-compatible' ? mock.url + '/v1' : mock.url, models: [CODEX_DEFAULT_MODEL], priority: 2 };
  const channels = [served];
  // Nothing listens on port 9 of loopback: every attempt there is refused.
  if (failover) channels.unshift({ name: 'down', type: 'openai', base_url: 'http://127.0.0.1:9/v1', models: [CODEX_DEFAULT_MODEL], priority: 1 });
  const g = await startGateway({ channels });
  try {
    const { cwd, env } = builtIn ? codexBuiltInSetup(g.url) : codexSetup(null, { url: g.url });
    const run = await runCli('codex', ['exec', '--json', '--skip-git-repo-check', '--sandbox', 'read-only', JS_PROMPT], { cwd, env });
    const why = () => `--- codex exit=${run.code} timedOut=${run.timedOut}\n--- stdout:\n${tail(run.stdout)}\n--- stderr:\n${tail(run.stderr)}\n` +
      `--- gateway:\n${tail(g.proc.output)}`;
    assert.equal(run.timedOut, false, why());
    assert.equal(run.code, 0, why());
    // Access lines leave the gateway in 50 ms batches: wait for the run's two.
    const responsesLines = () => g.accessLines().filter((l) => l.method === 'POST' && l.path === '/v1/responses');
    await waitFor(() => responsesLines().length >= 2, 3000);
    const lines = responsesLines();
    assert.ok(lines.length >= 2, `two model calls (the tool call and the answer to its result)\n${why()}`);
    for (const l of lines) {
      assert.equal(l.model, CODEX_DEFAULT_MODEL, `Codex asked for ${l.model}: its default model changed; update CODEX_DEFAULT_MODEL\n${why()}`);
      assert.equal(l.status, 200, why());
      assert.equal(l.channel, 'target', why());
    }
    const events = run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    const answer = events.filter((e) => e.type === 'item.completed' && e.item?.type === 'agent_message').map((e) => e.item.text).join('\n');
    // The model (the mock) asked exec to run exactly the JavaScript of the prompt, Codex ran it,
    // and its output went back upstream as the tool's result.
    assert.match(answer, /The tool returned: .*Script completed.*hi from js/s, why());
    const last = (await mock.stats()).last_request;
    const body = JSON.stringify(last?.body ?? null);
    assert.match(body, /hi from js/, `the upstream never received exec's output: ${tail(body, 1500)}`);
    if (builtIn) {
      // It stayed on the WebSocket: one upgrade, held for the whole run, and no fallback to POST.
      await waitFor(() => g.accessLines().some((l) => l.method === 'GET' && l.status === 101), 3000);
      const upgrades = g.accessLines().filter((l) => l.method === 'GET' && l.path === '/v1/responses');
      assert.ok(upgrades.length >= 1 && upgrades.every((l) => l.status === 101), `${JSON.stringify(upgrades)}\n${why()}`);
      assert.doesNotMatch(run.stdout + run.stderr, /Falling back from WebSockets|failed to connect to Responses WebSocket/, why());
      // The second turn named the first response and sent only its new input; the gateway
      // expanded it: the upstream got the tool call and its output in one conversation.
      assert.match(body, /text\(\\"hi from js\\"\)|text\(\"hi from js\"\)/, `the call is missing upstream: ${tail(body, 1500)}`);
    }
    return { last, lines };
  } finally {
    await g.stop();
  }
}

test(`Codex on its default model (${CODEX_DEFAULT_MODEL}) -> an openai channel (native): exec (custom, namespaced) tool round trip`, async () => {
  const { last } = await codexDefaultModel('openai');
  assert.equal(last.path, '/v1/responses');
  const call = last.body.input.find((it) => it.type === 'custom_tool_call');
  assert.equal(call?.name, 'exec');
  assert.equal(call?.namespace, 'functions');
  assert.ok(last.body.input.some((it) => it.type === 'additional_tools'), 'the request kept the responses-lite shape');
});

test(`Codex on its default model (${CODEX_DEFAULT_MODEL}) -> an anthropic channel (translated): exec tool round trip`, async () => {
  const { last } = await codexDefaultModel('anthropic');
  assert.equal(last.path, '/v1/messages');
  const names = last.body.tools.map((t) => t.name);
  assert.ok(names.includes('exec') && names.includes('list_agents'), `every namespaced tool offered: ${names}`);
  assert.deepEqual(last.body.tools.find((t) => t.name === 'exec').input_schema.required, ['input']);
});

test(`Codex on its default model (${CODEX_DEFAULT_MODEL}) -> a gemini channel (translated): exec tool round trip`, async () => {
  await codexDefaultModel('gemini');
});

test(`Codex on its default model (${CODEX_DEFAULT_MODEL}) -> an openai-compatible channel (chat, translated): exec tool round trip`, async () => {
  const { last } = await codexDefaultModel('openai-compatible');
  assert.equal(last.path, '/v1/chat/completions');
});

test(`Codex on its default model (${CODEX_DEFAULT_MODEL}): the OpenAI channel is down, the Anthropic one behind it answers (translated)`, async () => {
  const { last } = await codexDefaultModel('anthropic', { failover: true });
  assert.equal(last.path, '/v1/messages');
});

test(`Codex's built-in OpenAI provider on its default model -> an openai channel: stays on the Responses WebSocket`, async () => {
  const { last } = await codexDefaultModel('openai', { builtIn: true });
  assert.equal(last.path, '/v1/responses');
});

test(`Codex's built-in OpenAI provider on its default model -> an anthropic channel: the WebSocket's turns translated`, async () => {
  const { last } = await codexDefaultModel('anthropic', { builtIn: true });
  assert.equal(last.path, '/v1/messages');
});

// Codex dropped `wire_api = "chat"` (it refuses the config: "`wire_api = \"chat\"` is no longer
// supported"). If the installed Codex still takes it, it must work through sluice's chat endpoint.
test('Codex wire_api="chat" -> gpt-4o-mini: works, or this Codex no longer offers it', async (t) => {
  const { cwd, env } = codexSetup('gpt-4o-mini', { wireApi: 'chat' });
  const run = await runCli('codex', ['exec', '--json', '--skip-git-repo-check', '--sandbox', 'read-only', 'Say hi'], { cwd, env });
  if (run.code !== 0 && /wire_api = "chat"` is no longer supported/.test(run.stderr + run.stdout)) {
    t.diagnostic(`codex ${pkg.dependencies['@openai/codex']} rejects wire_api="chat" itself (no request made): ${run.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    assert.equal((await accessOf(run)).length, 0);
    return;
  }
  await assertCleanRun(run, 'gpt-4o-mini', /^\/v1\/chat\/completions$/);
});

// ---------------------------------------------------------------------------------------------
// Gemini CLI (@google/gemini-cli): Gemini API at GOOGLE_GEMINI_BASE_URL/v1beta/models/...
//
// GOOGLE_GEMINI_BASE_URL alone makes gemini-cli 0.61.0 pick its "gateway" auth type, which its own
// non-interactive validation then rejects ("Invalid auth method selected.", exit 41) before any
// request: selecting the API-key auth type in settings keeps the base URL and works.

function geminiSetup() {
  const { home, work } = freshHome();
  mkdirSync(join(home, '.gemini'));
  writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify({
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { disableAutoUpdate: true, disableUpdateNag: true },
    security: { auth: { selectedType: 'gemini-api-key' } },
  }, null, 2));
  return { cwd: work, env: {
    HOME: home, GEMINI_API_KEY: MASTER, GOOGLE_GEMINI_BASE_URL: `${gw.url}/gemini`,
    GEMINI_CLI_TRUST_WORKSPACE: 'true', GEMINI_TELEMETRY_ENABLED: 'false',
  } };
}

async function gemini(model, prompt, { tool } = {}) {
  const { cwd, env } = geminiSetup();
  const run = await runCli('gemini', ['-p', prompt, '-m', model, '-o', 'json'], { cwd, env });
  await assertCleanRun(run, model, new RegExp(`^/gemini/v1beta/models/${model.replace(/\./g, '\\.')}:(stream)?[gG]enerateContent`));
  let out;
  try { out = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))); } catch { assert.fail(await explain(run, 'gemini printed no JSON result')); }
  if (out.error) assert.fail(await explain(run, `gemini reported an error: ${JSON.stringify(out.error)}`));
  assert.ok(typeof out.response === 'string' && out.response.length > 0, await explain(run, 'empty answer'));
  if (tool) {
    assert.ok(out.stats?.tools?.totalCalls >= 1, await explain(run, 'gemini made no tool call'));
    assert.ok(out.stats.tools.byName?.[tool], await explain(run, `gemini did not call ${tool}`));
    await assertToolResultReachedUpstream(run, tool);
  }
  return out;
}

test('Gemini CLI -> gemini-2.5-flash on a gemini channel (native): answer', async () => {
  const out = await gemini('gemini-2.5-flash', 'Say hi');
  assert.match(out.response, /Hello/);
});

test('Gemini CLI -> gemini-2.5-flash on a gemini channel (native): list_directory tool round trip', async () => {
  await gemini('gemini-2.5-flash', 'Use the list_directory tool to list the files here', { tool: 'list_directory' });
});

test('Gemini CLI -> gpt-4o-mini on an openai channel (translated): list_directory tool round trip', async () => {
  await gemini('gpt-4o-mini', 'Use the list_directory tool to list the files here', { tool: 'list_directory' });
});

test('Gemini CLI -> claude-sonnet-4-5 on an anthropic channel (translated): answer', async () => {
  const out = await gemini('claude-sonnet-4-5', 'Say hi');
  assert.match(out.response, /Hello/);
});

// ---------------------------------------------------------------------------------------------
// Vercel AI SDK (ai + @ai-sdk/openai, @ai-sdk/anthropic, @ai-sdk/google), in process

const aiSdk = await (async () => {
  try {
    const [ai, oa, an, go, zod] = await Promise.all([import('ai'), import('@ai-sdk/openai'), import('@ai-sdk/anthropic'), import('@ai-sdk/google'), import('zod')]);
    return { ai, oa, an, go, z: zod.z };
  } catch (e) { return { error: e }; }
})();
globalThis.AI_SDK_LOG_WARNINGS = false;

const aiProviders = {
  'openai (Responses)': () => { const p = aiSdk.oa.createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER }); return (m) => p(m); },
  'openai.chat': () => { const p = aiSdk.oa.createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER }); return (m) => p.chat(m); },
  anthropic: () => { const p = aiSdk.an.createAnthropic({ baseURL: `${gw.url}/anthropic/v1`, apiKey: MASTER }); return (m) => p(m); },
  google: () => { const p = aiSdk.go.createGoogleGenerativeAI({ baseURL: `${gw.url}/gemini/v1beta`, apiKey: MASTER }); return (m) => p(m); },
};

for (const [provider, make] of Object.entries(aiProviders)) {
  test(`Vercel AI SDK ${provider} -> every upstream: generateText, streamText with a tool round trip`, async (t) => {
    if (aiSdk.error) assert.fail(`the AI SDK is not installed (run npm ci in tests/e2e/agents): ${aiSdk.error.message}`);
    const { generateText, streamText, tool, stepCountIs } = aiSdk.ai;
    const z = aiSdk.z;
    const model = make();
    for (const name of ['gpt-4o-mini', 'claude-sonnet-4-5', 'gemini-2.5-flash', 'llama-3.1-8b']) {
      await t.test(name, async () => {
        const r = await generateText({ model: model(name), prompt: 'Say hi', maxRetries: 0, maxOutputTokens: 256 });
        assert.match(r.text, /Hello/);
        assert.equal(r.finishReason, 'stop');
        assert.ok(r.usage.outputTokens > 0);
        const tools = { get_weather: tool({
          description: 'Weather for a city', inputSchema: z.object({ location: z.string() }),
          execute: async ({ location }) => `18 degrees and sunny in ${location}`,
        }) };
        let streamError;
        const s = streamText({ model: model(name), prompt: "What's the weather in Paris? Use the get_weather tool.", tools,
          stopWhen: stepCountIs(3), maxRetries: 0, maxOutputTokens: 256, onError: ({ error }) => { streamError = error; } });
        let text = '';
        for await (const d of s.textStream) text += d;
        if (streamError) throw streamError;
        const steps = await s.steps;
        assert.equal(steps.length, 2);
        assert.deepEqual(steps[0].toolCalls.map((c) => c.toolName), ['get_weather']);
        assert.equal(typeof steps[0].toolCalls[0].input.location, 'string');
        assert.match(text, /18 degrees/);
        assert.equal(await s.finishReason, 'stop');
        assert.ok(toolRoundTripIn((await mock.stats()).last_request?.body, 'get_weather'), 'the tool result did not reach the upstream');
      });
    }
  });
}
