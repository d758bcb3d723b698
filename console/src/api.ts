// The admin API client. The master key lives in sessionStorage only (gone when the tab closes);
// every call sends it as a Bearer token, and a 401 signs the user out with a message.

const STORAGE_KEY = 'sluice.masterKey';

// Single sign-on (auth.oidc): the session is an HttpOnly cookie the browser sends by itself; the
// console holds only the session's CSRF token (from GET /admin/api/me), sent on every write.
let ssoCsrf = '';

export function ssoActive(): boolean {
  return ssoCsrf !== '';
}

export function signedIn(): boolean {
  return masterKey() !== '' || ssoActive();
}

// Called once the cookie session answered /me: the console is signed in through SSO.
export function adoptSso(csrf: string): void {
  ssoCsrf = csrf;
  signOutMessage = '';
  listeners.forEach((l) => l());
}

type SessionListener = () => void;
const listeners = new Set<SessionListener>();
let signOutMessage = '';

export function masterKey(): string {
  try {
    return sessionStorage.getItem(STORAGE_KEY) ?? '';
  } catch {
    return '';
  }
}

export function signIn(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
  signOutMessage = '';
  listeners.forEach((l) => l());
}

export function signOut(message = ''): void {
  sessionStorage.removeItem(STORAGE_KEY);
  ssoCsrf = '';
  signOutMessage = message;
  listeners.forEach((l) => l());
}

// Sign-out of an SSO session: the gateway deletes it; then the IdP's own sign-out page, when it
// has one (RP-initiated logout).
export async function ssoSignOut(): Promise<void> {
  const csrf = ssoCsrf;
  let next = '';
  try {
    const res = await fetch('/auth/logout', { method: 'POST', headers: { 'x-sluice-csrf': csrf } });
    if (res.ok) next = ((await res.json()) as { logout_url?: string }).logout_url ?? '';
  } catch {
    // the session ends with the cookie's browser session anyway
  }
  signOut();
  if (next) window.location.assign(next);
}

// The reason the user was last sent back to the sign-in page (empty after a plain sign-out).
export function lastSignOutMessage(): string {
  return signOutMessage;
}

export function onSessionChange(l: SessionListener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

// An error the gateway answered ({"error":{"message","type","param"}}), or a network failure (status 0).
export class ApiError extends Error {
  readonly status: number;
  readonly param: string | null;
  // True when the gateway has no such endpoint: an older version than the console expects.
  readonly missingEndpoint: boolean;
  constructor(status: number, message: string, param: string | null = null, missingEndpoint = false) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.param = param;
    this.missingEndpoint = missingEndpoint;
  }
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.status ? `${e.message} (HTTP ${e.status})` : e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

async function errorFrom(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`.trim();
  let param: string | null = null;
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { message?: string; param?: string | null } | string };
    if (typeof body.error === 'string') message = body.error;
    else if (body.error?.message) {
      message = body.error.message;
      param = body.error.param ?? null;
    }
  } catch {
    if (text.trim()) message = text.trim().slice(0, 300);
  }
  // The admin router answers an unknown path with 404 "no admin endpoint ..."; an older build
  // may not route it at all and fall through to the proxy's "no route for ...".
  const missing = res.status === 404 && /no admin endpoint|no route for/i.test(message);
  return new ApiError(res.status, message, param, missing);
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  signal?: AbortSignal;
  query?: Record<string, string | number | undefined | null | false>;
}

export function withQuery(path: string, query?: RequestOptions['query']): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path;
}

// Sends an authorised request to the gateway; `path` is absolute (/admin/api/..., /v1/...).
export async function rawRequest(path: string, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  if (masterKey()) headers.authorization = `Bearer ${masterKey()}`;
  else if (ssoCsrf) headers['x-sluice-csrf'] = ssoCsrf;
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(withQuery(path, opts.query), { method: opts.method ?? 'GET', headers, body, signal: opts.signal });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new ApiError(0, `cannot reach the gateway: ${errorText(e)}`);
  }
  if (res.status === 401 && path.startsWith('/admin/api/')) {
    const err = await errorFrom(res);
    signOut(ssoActive() ? `Your session ended: ${err.message}` : `The gateway refused the master key: ${err.message}. Sign in again.`);
    throw err;
  }
  return res;
}

// An admin API call: JSON in, JSON out; throws ApiError on any non-2xx answer.
export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const res = await rawRequest(`/admin/api${path}`, opts);
  if (!res.ok) throw await errorFrom(res);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  if (!text) return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError(res.status, `the gateway answered ${path} with something that is not JSON`);
  }
}

export { errorFrom };
