// The shell: sign-in gate, navigation, and the page for the current #/route.
import { useEffect, useRef, useState } from 'preact/hooks';
import { adoptSso, api, onSessionChange, signedIn as isSignedIn, signOut, ssoActive, ssoSignOut } from './api';
import { navigate, useRoute } from './router';
import { SignIn } from './pages/SignIn';
import { Dashboard } from './pages/Dashboard';
import { Channels } from './pages/Channels';
import { Keys } from './pages/Keys';
import { Mcp } from './pages/Mcp';
import { Logs } from './pages/Logs';
import { LogDetail } from './pages/LogDetail';
import { Usage } from './pages/Usage';
import { Settings } from './pages/Settings';
import { Playground } from './pages/Playground';
import { Tokens } from './pages/Tokens';
import { Audit } from './pages/Audit';
import { Teams } from './pages/Teams';
import { atLeast, FULL, MeContext } from './role';
import type { Me, Role } from './types';

// Each page with the least role that can use it (the gateway checks every call anyway).
const NAV: Array<{ path: string; label: string; role: Role }> = [
  { path: '/', label: 'Dashboard', role: 'viewer' },
  { path: '/channels', label: 'Channels', role: 'viewer' },
  { path: '/keys', label: 'Keys', role: 'member' },
  { path: '/teams', label: 'Teams', role: 'member' },
  { path: '/mcp', label: 'MCP', role: 'viewer' },
  { path: '/logs', label: 'Logs', role: 'viewer' },
  { path: '/usage', label: 'Usage', role: 'member' },
  { path: '/settings', label: 'Settings', role: 'viewer' },
  { path: '/playground', label: 'Playground', role: 'admin' },
  { path: '/tokens', label: 'Tokens', role: 'admin' },
  { path: '/audit', label: 'Audit', role: 'admin' },
];

export function App() {
  const [signedIn, setSignedIn] = useState(() => isSignedIn());
  const route = useRoute();

  useEffect(() => onSessionChange(() => setSignedIn(isSignedIn())), []);

  // A single sign-on session (auth.oidc) is a cookie: /me answers for it without a key.
  useEffect(() => {
    if (isSignedIn()) return;
    fetch('/admin/api/me')
      .then((r) => (r.ok ? (r.json() as Promise<Me>) : null))
      .then((m) => { if (m && m.kind === 'oidc' && m.csrf_token) adoptSso(m.csrf_token); })
      .catch(() => {});
  }, []);

  // Who is signed in (the master key or an admin token, and its role).
  const [me, setMe] = useState<Me | null>(null);
  useEffect(() => {
    if (!signedIn) { setMe(null); return; }
    let live = true;
    api<Me>('/me').then((m) => { if (live) setMe(m); })
      .catch(() => { if (live) setMe(FULL); });  // an older gateway without /me: the master key only
    return () => { live = false; };
  }, [signedIn]);

  // After a navigation, move focus to the new page's heading so keyboard and screen-reader users
  // land on it (not on the first load: the browser's own focus order stands then).
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById('page-title')?.focus({ preventScroll: false });
  }, [route.path]);

  if (!signedIn) return <SignIn />;
  // Until /me answers, the console does not know the role: it draws no navigation and no page
  // (drawing the admin's would show a viewer, for a moment, what they may not use).
  if (!me) {
    return (
      <div class="state state-loading" role="status" data-testid="signing-in">
        Signing in…
      </div>
    );
  }
  const who = me;
  // The playground calls the proxy API with the console's key: only the master key works there.
  const nav = NAV.filter((n) => atLeast(who, n.role) && (n.path !== '/playground' || who.kind === 'master_key'));

  const section = `/${route.parts[0] ?? ''}`;
  let page;
  switch (route.parts[0] ?? '') {
    // A member has no dashboard (it is gateway-wide): their start page is their team's keys.
    case '': page = who.role === 'member' ? <Keys /> : <Dashboard />; break;
    case 'channels': page = <Channels />; break;
    case 'keys': page = <Keys />; break;
    case 'mcp': page = <Mcp />; break;
    case 'logs': page = route.parts[1] ? <LogDetail id={route.parts[1]} /> : <Logs query={route.query} />; break;
    case 'usage': page = <Usage />; break;
    case 'settings': page = <Settings />; break;
    case 'playground': page = <Playground />; break;
    case 'tokens': page = <Tokens />; break;
    case 'audit': page = <Audit />; break;
    case 'teams': page = <Teams />; break;
    default:
      page = (
        <div class="state state-empty">
          <h1 id="page-title" tabIndex={-1}>Not found</h1>
          <p>There is no console page at <code>#{route.path}</code>. <a href="#/">Go to the dashboard</a>.</p>
        </div>
      );
  }

  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href="#/" aria-label="Sluice console, dashboard">
          <span class="brand-mark" aria-hidden="true">≋</span> Sluice
        </a>
        <nav aria-label="Console sections" class="nav">
          <ul>
            {nav.map((n) => (
              <li key={n.path}>
                <a href={`#${n.path}`} aria-current={section === n.path ? 'page' : undefined}>{n.label}</a>
              </li>
            ))}
          </ul>
        </nav>
        {me && (
          <span class="whoami" data-testid="whoami" title={me.kind === 'oidc' ? `Signed in with SSO as ${me.subject}` : 'Signed in as'}>
            {me.kind === 'oidc' ? (me.name || me.email || me.subject) : me.actor} · {me.role}
          </span>
        )}
        <button type="button" class="btn btn-small btn-ghost signout"
          onClick={() => { if (ssoActive()) void ssoSignOut(); else signOut(); navigate('/'); }}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}><MeContext.Provider value={who}>{page}</MeContext.Provider></main>
    </div>
  );
}
