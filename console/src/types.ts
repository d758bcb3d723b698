// Shapes of the admin API's answers (see GET /admin/api/openapi.json). Only what the console reads.

export interface Percentiles {
  p50: number | null;
  p95: number | null;
  p99?: number | null;
}

export interface StatsPoint {
  t_ms: number;
  requests: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  ttfb_ms: Percentiles;
  latency_ms: Percentiles;
}

export interface StatsGroup {
  id?: number | null;
  name: string | null;
  requests: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  latency_ms: Percentiles;
}

export interface StatsTotals {
  requests: number;
  errors: number;
  error_rate: number;
  requests_per_s: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  ttfb_ms: Percentiles;
  latency_ms: Percentiles;
}

export interface Stats {
  sampled?: boolean;
  since_ms: number;
  until_ms: number;
  step_s: number;
  series: StatsPoint[];
  totals: StatsTotals;
  by_channel: StatsGroup[];
  by_model: StatsGroup[];
  by_key: StatsGroup[];
}

export interface UpstreamKey {
  id: number;
  channel_id: number;
  label: string;
  masked: string | null;
  state: 'active' | 'disabled';
  disabled_reason: string;
  cooldown_until_ms: number | null;
  created_at_ms: number;
  updated_at_ms: number;
}

export interface Channel {
  id: number | null;
  name: string;
  source: 'store' | 'config';
  type: string;
  base_url: string;
  models: string[];
  priority: number;
  weight: number;
  headers: Record<string, string>;
  enabled: boolean;
  model_map?: Record<string, string> | null;
  api_version?: string | null;
  region?: string | null;  // bedrock
  subscription?: 'claude' | 'chatgpt' | null;  // keys are the CLI's OAuth credential file
  token_url?: string | null;  // a subscription's OAuth endpoint, or an azure channel's Entra ID one
  project?: string;  // vertex
  location?: string;  // vertex
  tenant_id?: string;  // azure with Entra ID
  client_id?: string;
  client_secret?: string;  // masked
  rpm?: number | null;
  tpm?: number | null;
  max_concurrent?: number | null;
  key_rpm?: number | null;
  key_tpm?: number | null;
  screening?: 'off' | 'log' | 'warn' | 'block' | null;  // null: the gateway's screening.action
  cache?: boolean | null;  // null: the gateway's cache.enabled
  cache_ttl_ms?: number | null;
  keys: Array<Partial<UpstreamKey> & { masked?: string | null }>;
  line?: number;
}

// GET /admin/api/model-discovery: a channel whose models hold globs, and what its provider lists.
export interface Discovery {
  channel: string;
  globs: string[];
  models: string[];
  refreshed_at_ms: number | null;
  error: string | null;
}

export interface KeyHealth {
  ref: string;
  channel: string;
  masked: string;
  source: 'config' | 'store';
  store_id?: number | null;
  state: 'active' | 'cooling' | 'disabled';
  manual?: boolean;
  cooldown_until_ms?: number | null;
  reason?: string;
  successes?: number;
  failures?: number;
  // Moving averages routing.balance: latency ranks by: time to first byte (null until
  // measured) and the share of failed attempts, of the key and of its channel.
  ttfb_ewma_ms?: number | null;
  error_ewma?: number;
  channel_ttfb_ewma_ms?: number | null;
  channel_error_ewma?: number;
}

export interface ProbeResult {
  ok: boolean;
  status: number;
  latency_ms: number;
  message: string;
  key: KeyHealth;
}

export interface VirtualKey {
  id: number;
  name: string;
  key_prefix: string;
  allowed_models: string[];
  allowed_channels: string[];
  allowed_tools: string[];  // MCP tools (SERVER__TOOL names or globs); empty: every tool
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  budget_daily_usd: number | null;
  budget_monthly_usd: number | null;
  budget_total_usd: number | null;
  expires_at_ms: number | null;
  revoked_at_ms: number | null;
  metadata: Record<string, unknown>;
  screening: 'off' | 'log' | 'warn' | 'block' | null;  // null: the gateway's screening.action
  cache: boolean | null;  // null: the gateway's cache.enabled
  team_id: number | null;  // the team whose limits and budgets also bound the key
  status: 'active' | 'revoked' | 'expired';
  created_at_ms: number;
  updated_at_ms: number;
  spend: { day_usd: number; month_usd: number; total_usd: number };
}

export interface Attempt {
  channel?: string;
  key?: string;
  status?: number;
  error?: string | null;
  [k: string]: unknown;
}

// One part the prompt-injection screen scored.
export interface ScreeningVerdict {
  part: 'user' | 'tool';
  path?: string; // where a tool result sits in the request, e.g. messages[2]
  score: number;
  flagged: boolean;
}

export interface LogEntry {
  id: number;
  time_ms: number;
  request_id: string;
  channel: string;
  upstream_key: string;
  model: string;
  status: number;
  stream: boolean;
  attempts: Attempt[];
  ttfb_ms: number;
  duration_ms: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cache_write_tokens?: number; // of input_tokens, written to a prompt cache
  reasoning_tokens?: number; // of output_tokens, spent on reasoning
  cost_usd: number;
  client_addr: string;
  user_agent: string;
  screening?: ScreeningVerdict[] | null; // null: not screened
  virtual_key_id?: number | null;
  virtual_key_name?: string | null;
  request_body?: string | null;
  response_body?: string | null;
}

export interface LogPage {
  data: LogEntry[];
  next_cursor: string | null;
}

export interface UsageRow {
  day_ms?: number;
  model?: string;
  channel?: string;
  virtual_key_id?: number | null;
  virtual_key_name?: string | null;
  team_id?: number | null;  // grouped by team; null: keys without a team, and the master key
  team_name?: string | null;
  requests: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost_usd: number;
}

export interface UsagePage {
  data: UsageRow[];
  from_ms: number;
  to_ms: number;
}

// Each feature: `enabled`, plus whatever else the gateway reports about it (backend, rules, stats...).
export type Feature = { enabled: boolean } & Record<string, unknown>;
export interface Settings {
  cache?: Feature;
  redaction?: Feature;
  screening?: Feature;
  guardrail?: Feature;
}

export interface Price {
  model: string;
  input_per_mtok: number;
  output_per_mtok: number;
  cached_input_per_mtok?: number | null;
  source: 'shipped' | 'config';
}

// GET /admin/api/mcp-servers: a server behind /mcp, with the running hub's view of it.
export interface McpTool {
  name: string;  // namespaced: SERVER__TOOL
  description?: string | null;
}

export interface McpServer {
  id: number | null;  // null: declared in the config file
  name: string;
  source: 'config' | 'store';
  transport: 'http' | 'stdio';
  url: string | null;
  command: string[] | null;
  headers: Record<string, string>;  // values masked
  timeout_ms: number;
  state: 'up' | 'down' | 'starting';
  error: string | null;
  restarts: number;
  tools: McpTool[];
  prompts: number;
  resources: number;
}

// GET /admin/api/me: who is signed in.
export type Role = 'member' | 'viewer' | 'operator' | 'admin';
export interface Me {
  actor: string;  // "master key" | "token:NAME" | "oidc:SUBJECT <EMAIL>"
  role: Role;
  kind: 'master_key' | 'token' | 'oidc';
  subject?: string;     // oidc
  email?: string;       // oidc
  name?: string;        // oidc
  csrf_token?: string;  // oidc: sent in x-sluice-csrf on writes
  team_id?: number;     // a member token's team
}

// GET /admin/api/teams: limits and budgets over the sum of their keys, and who manages them.
export type TeamMember = { email: string } | { subject: string };
export interface Team {
  id: number;
  name: string;
  rpm: number | null;
  tpm: number | null;
  budget_daily_usd: number | null;
  budget_monthly_usd: number | null;
  budget_total_usd: number | null;
  members: TeamMember[];
  keys: number;
  spend: { day_usd: number; month_usd: number; total_usd: number };
  created_at_ms: number;
  updated_at_ms: number;
}

// GET /admin/api/tokens: scoped admin tokens (never their secrets).
export interface AdminToken {
  id: number;
  name: string;
  role: Role;
  token_prefix: string;
  status: 'active' | 'revoked' | 'expired';
  expires_at_ms: number | null;
  revoked_at_ms: number | null;
  created_by: string;
  created_at_ms: number;
  team_id?: number | null;  // a member token's team
}

// GET /admin/api/audit: one admin write.
export interface AuditEntry {
  id: number;
  time_ms: number;
  actor: string;
  role: Role;
  address: string;
  action: string;
  method: string;
  path: string;
  target: string;
  status: number;
  before: unknown;
  after: unknown;
}
