import { useEffect, useState } from 'preact/hooks';
import { ApiError, errorText, lastSignOutMessage, signIn } from '../api';

// Checks the key against the admin API before keeping it (in sessionStorage only).
export function SignIn() {
  const [key, setKey] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const notice = lastSignOutMessage();
  // Single sign-on, when the gateway has auth.oidc (GET /auth/info needs no credential).
  const [sso, setSso] = useState('');
  useEffect(() => {
    fetch('/auth/info')
      .then((r) => (r.ok ? (r.json() as Promise<{ oidc?: boolean; login_url?: string }>) : null))
      .then((i) => { if (i?.oidc && i.login_url) setSso(i.login_url); })
      .catch(() => {});
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!key.trim()) {
      setError('Enter the master key (auth.master_key in the gateway config) or an admin token.');
      return;
    }
    setBusy(true);
    setError('');
    try {
      // /me answers any admin credential; an older gateway without it has /upstream-keys.
      let res = await fetch('/admin/api/me', { headers: { authorization: `Bearer ${key.trim()}` } });
      if (res.status === 404) res = await fetch('/admin/api/upstream-keys', { headers: { authorization: `Bearer ${key.trim()}` } });
      if (res.status === 401) {
        setError('The gateway refused that key: the console takes the master key or an admin token, not a virtual key.');
        return;
      }
      if (!res.ok && res.status !== 404) throw new ApiError(res.status, `the gateway answered ${res.status}`);
      signIn(key.trim());
    } catch (err) {
      setError(err instanceof ApiError ? errorText(err) : `Cannot reach the gateway: ${errorText(err)}`);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin" id="main">
      <form class="card signin-card" onSubmit={submit} aria-labelledby="page-title" noValidate>
        <h1 id="page-title">
          <span class="brand-mark" aria-hidden="true">≋</span> Sluice console
        </h1>
        {notice && (
          <p class="state state-error" role="alert" data-testid="signin-notice">
            {notice}
          </p>
        )}
        <div class={`field${error ? ' field-invalid' : ''}`}>
          <label for="master-key">Master key or admin token</label>
          <input
            id="master-key"
            name="master-key"
            type="password"
            autoComplete="current-password"
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
            aria-describedby={`master-key-hint${error ? ' master-key-error' : ''}`}
            aria-invalid={error ? true : undefined}
            autoFocus
          />
          <small id="master-key-hint" class="hint">
            Kept in this tab only (sessionStorage) and sent as a Bearer token to the admin API.
          </small>
          {error && (
            <small id="master-key-error" class="field-error" role="alert">
              {error}
            </small>
          )}
        </div>
        <button type="submit" class="btn btn-primary" disabled={busy} aria-busy={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {sso && (
          <p class="signin-sso">
            <a class="btn" href={sso} data-testid="sso-signin">Sign in with SSO</a>
          </p>
        )}
      </form>
    </main>
  );
}
