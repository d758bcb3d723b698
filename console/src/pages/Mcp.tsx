// MCP servers: the tool servers behind the gateway's /mcp endpoint, each with its state and its
// tools (named SERVER__TOOL, the names a key's allowed_tools matches). Servers from the config file
// are read-only; servers added here are stored, their header values encrypted at rest.
import { useState } from 'preact/hooks';
import { atLeast, useMe } from '../role';
import { api, ApiError } from '../api';
import { fmtInt } from '../format';
import type { McpServer } from '../types';
import {
  ActionButton, Badge, describedBy, Empty, ErrorBox, Field, fieldError, InlineError, isMissing, Loading, NotAvailable,
  PageHeader, TableWrap, useAsync, usePoll,
} from '../ui';

export function Mcp() {
  const state = useAsync<McpServer[]>(async (signal) => (await api<{ data: McpServer[] }>('/mcp-servers', { signal })).data, []);
  // Servers come up, go down and restart on their own: keep the states fresh.
  usePoll(() => { if (!state.loading) void state.reload(); }, 5000);
  const [creating, setCreating] = useState(false);
  const canEdit = atLeast(useMe(), 'operator');

  // A change reaches the running hub at once, but a new server takes a moment to start: reload now
  // and once more shortly after.
  const changed = async () => {
    await state.reload();
    window.setTimeout(() => void state.reload(), 1500);
  };

  if (isMissing(state.error)) return <><PageHeader title="MCP servers" /><NotAvailable what="MCP servers" /></>;
  const servers = state.data;
  const up = servers?.filter((s) => s.state === 'up').length ?? 0;
  const tools = servers?.reduce((n, s) => n + s.tools.length, 0) ?? 0;
  return (
    <>
      <PageHeader title="MCP servers">
        {canEdit && (
          <button type="button" class="btn btn-primary" onClick={() => setCreating(!creating)} aria-expanded={creating}
            aria-controls="new-mcp-server">
            {creating ? 'Close form' : 'New server'}
          </button>
        )}
      </PageHeader>
      <p class="lead">
        Agents reach every tool below through one endpoint, <code>/mcp</code>, with their virtual key; a key's allowed
        tools decide which they may list and call. Servers from the config file are read-only.
      </p>
      {servers && servers.length > 0 && (
        <p class="muted" data-testid="mcp-summary">{up} of {servers.length} servers up · {fmtInt(tools)} tools</p>
      )}
      {creating && (
        <div id="new-mcp-server">
          <ServerForm onDone={async () => { setCreating(false); await changed(); }} onCancel={() => setCreating(false)} />
        </div>
      )}
      <ErrorBox error={state.error} onRetry={() => void state.reload()} title="Could not load the MCP servers" />
      {!servers && state.loading && <Loading label="Loading MCP servers…" />}
      {servers && servers.length === 0 && (
        <Empty>No MCP servers yet. Add one here or under <code>mcp.servers</code> in the config file.</Empty>
      )}
      {servers && (
        <div class="stack">
          {servers.map((s) => <ServerCard key={`${s.source}:${s.id ?? s.name}`} s={s} onChange={changed} />)}
        </div>
      )}
    </>
  );
}

function stateBadge(s: McpServer) {
  if (s.state === 'up') return <Badge kind="ok">up</Badge>;
  if (s.state === 'starting') return <Badge kind="warn">starting</Badge>;
  return <Badge kind="bad">down</Badge>;
}

function slug(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, '-');
}

function ServerCard({ s, onChange }: { s: McpServer; onChange: () => Promise<void> }) {
  const [editing, setEditing] = useState(false);
  const canEdit = atLeast(useMe(), 'operator');
  const fromConfig = s.source === 'config';
  const id = `mcp-${slug(s.name)}`;
  const ref = s.id ?? s.name;
  const headers = Object.entries(s.headers ?? {});
  return (
    <section class="card" aria-labelledby={`${id}-title`} data-testid={`mcp-server-${s.name}`} data-state={s.state}>
      <header class="card-head">
        <h2 id={`${id}-title`}>{s.name}</h2>
        <div class="badges">
          <Badge kind="neutral">{s.transport === 'stdio' ? 'stdio' : 'HTTP'}</Badge>
          {fromConfig
            ? <Badge kind="info" title="Defined in the config file; read-only here">config file</Badge>
            : <Badge kind="neutral">store</Badge>}
          {stateBadge(s)}
        </div>
        {canEdit && !fromConfig && (
          <div class="card-actions">
            <button type="button" class="btn btn-small" onClick={() => setEditing(!editing)} aria-expanded={editing}>
              {editing ? 'Cancel edit' : 'Edit'}
            </button>
            <ActionButton kind="btn-danger" label={`Delete MCP server ${s.name}`}
              confirm={`Delete MCP server "${s.name}"? Its tools disappear from /mcp at once.`}
              onClick={async () => { await api(`/mcp-servers/${encodeURIComponent(String(ref))}`, { method: 'DELETE' }); await onChange(); }}>
              Delete
            </ActionButton>
          </div>
        )}
      </header>
      {editing ? (
        <ServerForm server={s} onDone={async () => { setEditing(false); await onChange(); }} onCancel={() => setEditing(false)} />
      ) : (
        <dl class="props">
          {s.transport === 'stdio'
            ? <div><dt>Command</dt><dd><code class="break">{(s.command ?? []).join(' ')}</code></dd></div>
            : <div><dt>URL</dt><dd><code class="break">{s.url}</code></dd></div>}
          {headers.length > 0 && (
            <div><dt>Headers</dt><dd data-testid="mcp-headers">{headers.map(([a, b]) => <code key={a} class="chip">{a}: {b}</code>)}</dd></div>
          )}
          <div><dt>Timeout</dt><dd>{fmtInt(s.timeout_ms)} ms</dd></div>
          <div><dt>Prompts / resources</dt><dd>{fmtInt(s.prompts)} / {fmtInt(s.resources)}</dd></div>
          {s.restarts > 0 && <div><dt>Restarts</dt><dd>{fmtInt(s.restarts)}</dd></div>}
          {s.error && <div><dt>Last error</dt><dd class="text-bad" data-testid="mcp-error">{s.error}</dd></div>}
        </dl>
      )}
      <ToolTable s={s} />
    </section>
  );
}

function ToolTable({ s }: { s: McpServer }) {
  const title = `Tools of ${s.name}`;
  return (
    <div class="keypool">
      <div class="keypool-head">
        <h3>Tools <span class="muted">({s.tools.length})</span></h3>
      </div>
      {s.tools.length === 0 ? (
        <Empty>{s.state === 'up' ? 'This server offers no tools.' : 'No tools while the server is not up.'}</Empty>
      ) : (
        <TableWrap label={title}>
          <table class="table stack-sm" aria-label={title} data-testid="mcp-tools">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {s.tools.map((t) => (
                <tr key={t.name}>
                  <th scope="row"><code>{t.name}</code></th>
                  <td data-label="Description">{t.description ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </div>
  );
}

// ---- create / edit ----

interface FormState {
  name: string;
  transport: 'http' | 'stdio';
  url: string;
  command: string;
  headers: string;
  clear_headers: boolean;
  timeout_ms: string;
}

function toForm(s?: McpServer): FormState {
  return {
    name: s?.name ?? '',
    transport: s?.transport ?? 'http',
    url: s?.url ?? '',
    command: (s?.command ?? []).join('\n'),
    // Stored header values come back masked: the field starts empty and blank keeps them.
    headers: '',
    clear_headers: false,
    timeout_ms: s ? String(s.timeout_ms) : '',
  };
}

function parseHeaders(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const i = line.indexOf(':');
    if (i <= 0) throw new ApiError(0, `Headers: each line is "Name: value"; got "${line.slice(0, 40)}"`, 'headers');
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

function ServerForm({ server, onDone, onCancel }: { server?: McpServer; onDone: () => Promise<void>; onCancel: () => void }) {
  const [f, setF] = useState<FormState>(() => toForm(server));
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const base = server ? `edit-mcp-${slug(server.name)}` : 'new-mcp';
  const set = <K extends keyof FormState>(key: K, v: FormState[K]) => setF({ ...f, [key]: v });

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: Record<string, unknown> = { name: f.name.trim() };
      if (f.transport === 'http') body.url = f.url.trim();
      else body.command = f.command.split('\n').map((x) => x.trim()).filter(Boolean);
      const headers = parseHeaders(f.headers);
      if (f.clear_headers) body.headers = {};
      else if (Object.keys(headers).length > 0) body.headers = headers;
      if (f.timeout_ms.trim()) {
        const n = Number(f.timeout_ms);
        if (!Number.isInteger(n)) throw new ApiError(0, 'timeout_ms must be a whole number of milliseconds', 'timeout_ms');
        body.timeout_ms = n;
      }
      if (server) {
        const before = toForm(server);
        if (body.name === before.name) delete body.name;
        if (f.transport === before.transport) {
          if (f.transport === 'http' && f.url.trim() === before.url) delete body.url;
          if (f.transport === 'stdio' && JSON.stringify(body.command) === JSON.stringify(server.command ?? [])) delete body.command;
        }
        if (f.timeout_ms === before.timeout_ms) delete body.timeout_ms;
        await api(`/mcp-servers/${encodeURIComponent(String(server.id ?? server.name))}`, { method: 'PATCH', body });
      } else {
        await api('/mcp-servers', { method: 'POST', body });
      }
      await onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const fe = (p: string) => fieldError(error, p);
  const known = ['name', 'url', 'command', 'headers', 'timeout_ms'];
  return (
    <form class="form card" onSubmit={submit} aria-label={server ? `Edit MCP server ${server.name}` : 'New MCP server'}
      data-testid="mcp-form">
      {!server && <h2>New MCP server</h2>}
      <div class="form-grid">
        <Field id={`${base}-name`} label="Name" error={fe('name')} hint="Prefixes its tools: NAME__tool">
          <input id={`${base}-name`} name="name" value={f.name} required maxLength={64} pattern="[A-Za-z0-9_\-]+"
            onInput={(e) => set('name', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-name`, 'h', fe('name'))} aria-invalid={!!fe('name')} />
        </Field>
        <Field id={`${base}-transport`} label="Transport">
          <select id={`${base}-transport`} name="transport" value={f.transport}
            onChange={(e) => set('transport', e.currentTarget.value as FormState['transport'])}>
            <option value="http">Streamable HTTP (a URL)</option>
            <option value="stdio">stdio (a command the gateway runs)</option>
          </select>
        </Field>
        {f.transport === 'http' ? (
          <Field id={`${base}-url`} label="URL" error={fe('url')} hint="http:// or https://, no credentials in it">
            <input id={`${base}-url`} name="url" type="url" value={f.url} required placeholder="https://mcp.example.com/mcp"
              onInput={(e) => set('url', e.currentTarget.value)}
              aria-describedby={describedBy(`${base}-url`, 'h', fe('url'))} aria-invalid={!!fe('url')} />
          </Field>
        ) : (
          <Field id={`${base}-command`} label="Command" error={fe('command')} hint="The program, then each argument, one per line" wide>
            <textarea id={`${base}-command`} name="command" rows={3} value={f.command} required
              placeholder={'npx\n-y\n@modelcontextprotocol/server-filesystem\n/srv/docs'}
              onInput={(e) => set('command', e.currentTarget.value)}
              aria-describedby={describedBy(`${base}-command`, 'h', fe('command'))} aria-invalid={!!fe('command')} />
          </Field>
        )}
        <Field id={`${base}-timeout_ms`} label="Timeout (ms)" error={fe('timeout_ms')} hint="Per call; blank: the default">
          <input id={`${base}-timeout_ms`} name="timeout_ms" type="number" min={1} step={1} value={f.timeout_ms}
            onInput={(e) => set('timeout_ms', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-timeout_ms`, 'h', fe('timeout_ms'))} aria-invalid={!!fe('timeout_ms')} />
        </Field>
        <Field id={`${base}-headers`} label="Headers" error={fe('headers')} wide
          hint={server ? 'One "Name: value" per line; blank keeps the stored ones. Encrypted at rest, shown masked.'
            : 'One "Name: value" per line, e.g. Authorization: Bearer …. Encrypted at rest, shown masked.'}>
          <textarea id={`${base}-headers`} name="headers" rows={2} value={f.headers} autoComplete="off" spellcheck={false}
            onInput={(e) => set('headers', e.currentTarget.value)}
            aria-describedby={describedBy(`${base}-headers`, 'h', fe('headers'))} aria-invalid={!!fe('headers')} />
        </Field>
        {server && Object.keys(server.headers ?? {}).length > 0 && (
          <label class="check field-wide">
            <input type="checkbox" checked={f.clear_headers} onChange={(e) => set('clear_headers', e.currentTarget.checked)} />
            Remove the stored headers
          </label>
        )}
      </div>
      {error && !known.some((p) => fe(p)) ? <InlineError error={error} /> : null}
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={busy} aria-busy={busy}>{server ? 'Save changes' : 'Add server'}</button>
        <button type="button" class="btn btn-ghost" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}
