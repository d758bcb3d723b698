// Real MCP servers for the tests: server-everything from npm (installed with the SDK tests in
// tests/e2e), started over Streamable HTTP on a loopback port, and the child processes a gateway
// runs for its stdio servers.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// server-everything's entry point: `node EVERYTHING stdio` or `PORT=N node EVERYTHING streamableHttp`.
export const EVERYTHING = join(dirname(fileURLToPath(import.meta.url)), '..', 'e2e', 'node_modules', '@modelcontextprotocol',
  'server-everything', 'dist', 'index.js');

// A loopback port nothing listens on now.
export async function freePort() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// A Streamable HTTP MCP server on `port` (server-everything unless `argv` names another script),
// resolved once it says it listens.
export async function startMcpHttp(port, argv = [EVERYTHING, 'streamableHttp']) {
  const proc = spawn(process.execPath, argv, {
    env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the MCP server did not start:\n${out}`)), 15000);
    const on = (d) => { out += d; if (/listening on port/.test(out)) { clearTimeout(t); resolve(); } };
    proc.stdout.on('data', on);
    proc.stderr.on('data', on);
    proc.once('exit', (c) => { clearTimeout(t); reject(new Error(`the MCP server exited ${c}:\n${out}`)); });
  });
  return proc;
}

// The child processes of `pid` whose command line holds `needle` (a gateway's stdio servers).
export function childrenOf(pid, needle) {
  const found = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (ppid === pid && cmd.includes(needle)) found.push(Number(d));
    } catch { /* gone meanwhile */ }
  }
  return found;
}
