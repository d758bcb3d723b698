// Hash routing (#/logs, #/logs/42?model=x): the gateway serves only `/` and `/assets/*`.
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  path: string; // "/logs/42"
  parts: string[]; // ["logs", "42"]
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/';
  const [p, q = ''] = raw.split('?', 2);
  const path = p.startsWith('/') ? p : `/${p}`;
  return { path, parts: path.split('/').filter(Boolean), query: new URLSearchParams(q) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function navigate(path: string, query?: Record<string, string | undefined>): void {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) q.set(k, v);
  const s = q.toString();
  location.hash = `#${path}${s ? `?${s}` : ''}`;
}

// Rewrites the query of the current route without adding a history entry.
export function replaceQuery(query: Record<string, string | undefined>): void {
  const { path } = parseHash(location.hash);
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
  const s = q.toString();
  history.replaceState(null, '', `#${path}${s ? `?${s}` : ''}`);
}
