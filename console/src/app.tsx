// The shell: sign-in gate, navigation, and the page for the current #/route.
import { useEffect, useRef, useState } from 'preact/hooks';
import { masterKey, onSessionChange, signOut } from './api';
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

const NAV = [
  { path: '/', label: 'Dashboard' },
  { path: '/channels', label: 'Channels' },
  { path: '/keys', label: 'Keys' },
  { path: '/mcp', label: 'MCP' },
  { path: '/logs', label: 'Logs' },
  { path: '/usage', label: 'Usage' },
  { path: '/settings', label: 'Settings' },
  { path: '/playground', label: 'Playground' },
];

export function App() {
  const [signedIn, setSignedIn] = useState(() => masterKey() !== '');
  const route = useRoute();

  useEffect(() => onSessionChange(() => setSignedIn(masterKey() !== '')), []);

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

  const section = `/${route.parts[0] ?? ''}`;
  let page;
  switch (route.parts[0] ?? '') {
    case '': page = <Dashboard />; break;
    case 'channels': page = <Channels />; break;
    case 'keys': page = <Keys />; break;
    case 'mcp': page = <Mcp />; break;
    case 'logs': page = route.parts[1] ? <LogDetail id={route.parts[1]} /> : <Logs query={route.query} />; break;
    case 'usage': page = <Usage />; break;
    case 'settings': page = <Settings />; break;
    case 'playground': page = <Playground />; break;
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
            {NAV.map((n) => (
              <li key={n.path}>
                <a href={`#${n.path}`} aria-current={section === n.path ? 'page' : undefined}>{n.label}</a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="btn btn-small btn-ghost signout" onClick={() => { signOut(); navigate('/'); }}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>{page}</main>
    </div>
  );
}
