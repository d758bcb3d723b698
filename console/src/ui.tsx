// Small shared pieces: data loading hooks and the loading / empty / error states every page uses.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, errorText } from './api';

export interface AsyncState<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
  setData: (d: T) => void;
}

// Runs `fn` when `deps` change; `reload` runs it again. A stale answer never overwrites a newer one.
export function useAsync<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[]): AsyncState<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const ctrl = useRef<AbortController | null>(null);
  const fnRef = useRef(fn);
  fnRef.current = fn;

  const run = useCallback(async () => {
    const my = ++seq.current;
    ctrl.current?.abort();
    const c = new AbortController();
    ctrl.current = c;
    setLoading(true);
    try {
      const d = await fnRef.current(c.signal);
      if (my === seq.current) {
        setData(d);
        setError(undefined);
      }
    } catch (e) {
      if (e instanceof DOMException && e.name === 'AbortError') return;
      if (my === seq.current) setError(e);
    } finally {
      if (my === seq.current) setLoading(false);
    }
  }, []);

  useEffect(() => {
    void run();
    return () => ctrl.current?.abort();
  }, deps);

  return { data, error, loading, reload: run, setData };
}

export function usePageVisible(): boolean {
  const [visible, setVisible] = useState(() => document.visibilityState !== 'hidden');
  useEffect(() => {
    const on = () => setVisible(document.visibilityState !== 'hidden');
    document.addEventListener('visibilitychange', on);
    return () => document.removeEventListener('visibilitychange', on);
  }, []);
  return visible;
}

// Calls `tick` every `ms` while `enabled` and the tab is visible; once more as soon as it shows again.
export function usePoll(tick: () => void, ms: number, enabled = true): boolean {
  const visible = usePageVisible();
  const tickRef = useRef(tick);
  tickRef.current = tick;
  const wasHidden = useRef(false);
  useEffect(() => {
    if (!enabled || !visible) {
      wasHidden.current = !visible;
      return undefined;
    }
    if (wasHidden.current) {
      wasHidden.current = false;
      tickRef.current();
    }
    const id = window.setInterval(() => tickRef.current(), ms);
    return () => window.clearInterval(id);
  }, [enabled, visible, ms]);
  return visible && enabled;
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div class="state state-loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

export function ErrorBox({ error, onRetry, title }: { error: unknown; onRetry?: () => void; title?: string }) {
  if (!error) return null;
  return (
    <div class="state state-error" role="alert">
      <div>
        {title && <strong>{title}: </strong>}
        {errorText(error)}
      </div>
      {onRetry && (
        <button type="button" class="btn btn-small" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

// An inline error next to the control the user acted on.
export function InlineError({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="inline-error" role="alert">
      {errorText(error)}
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="state state-empty">{children}</div>;
}

export function NotAvailable({ what }: { what: string }) {
  return (
    <div class="state state-unavailable" role="note">
      <strong>{what}</strong> is not available in this gateway version: it does not have that admin endpoint yet.
    </div>
  );
}

export function isMissing(e: unknown): boolean {
  return e instanceof ApiError && e.missingEndpoint;
}

// The message of a 400 that names `param`, for showing under that field.
export function fieldError(e: unknown, ...params: string[]): string | undefined {
  if (e instanceof ApiError && e.param && params.some((p) => e.param === p || e.param!.startsWith(`${p}[`)))
    return e.message;
  return undefined;
}

export function Badge({ kind, children, title }: { kind: string; children: ComponentChildren; title?: string }) {
  return (
    <span class={`badge badge-${kind}`} title={title}>
      {children}
    </span>
  );
}

interface FieldProps {
  id: string;
  label: string;
  hint?: string;
  error?: string;
  children: ComponentChildren;
  wide?: boolean;
}

// A labelled form control with its hint and its error, wired with aria-describedby by the caller's id.
export function Field({ id, label, hint, error, children, wide }: FieldProps) {
  return (
    <div class={`field${wide ? ' field-wide' : ''}${error ? ' field-invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children}
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {error && (
        <small id={`${id}-error`} class="field-error" role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

export function describedBy(id: string, hint?: string, error?: string): string | undefined {
  const ids = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return ids || undefined;
}

// A button that runs an async action, shows it is busy, and puts the action's error beside itself.
export function ActionButton({
  onClick, children, kind = '', label, disabled, confirm, testid,
}: {
  onClick: () => Promise<unknown>;
  children: ComponentChildren;
  kind?: string;
  label?: string;
  disabled?: boolean;
  confirm?: string;
  testid?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const click = async () => {
    if (confirm && !window.confirm(confirm)) return;
    setBusy(true);
    setError(undefined);
    try {
      await onClick();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button
        type="button"
        class={`btn btn-small ${kind}`}
        onClick={click}
        disabled={disabled || busy}
        aria-busy={busy}
        aria-label={label}
        data-testid={testid}
      >
        {children}
      </button>
      {error !== undefined && (
        <span class="inline-error" role="alert">
          {errorText(error)}
        </span>
      )}
    </span>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone('Copied');
    } catch {
      // Clipboard API refused (plain http, permissions): select the text for a manual copy.
      setDone('Press Ctrl+C to copy');
      const el = document.querySelector<HTMLElement>('[data-copy-source]');
      if (el) {
        const r = document.createRange();
        r.selectNodeContents(el);
        const s = window.getSelection();
        s?.removeAllRanges();
        s?.addRange(r);
      }
    }
  };
  return (
    <span class="action">
      <button type="button" class="btn btn-small" onClick={copy}>
        {label}
      </button>
      <span role="status" aria-live="polite" class="hint">
        {done}
      </span>
    </span>
  );
}

export function TableWrap({ children, label }: { children: ComponentChildren; label: string }) {
  return (
    <div class="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

export function Card({ title, children, actions, id }: {
  title?: string; children: ComponentChildren; actions?: ComponentChildren; id?: string;
}) {
  return (
    <section class="card" aria-labelledby={title && id ? `${id}-title` : undefined}>
      {(title || actions) && (
        <header class="card-head">
          {title && <h2 id={id ? `${id}-title` : undefined}>{title}</h2>}
          {actions && <div class="card-actions">{actions}</div>}
        </header>
      )}
      {children}
    </section>
  );
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-head">
      <h1 tabIndex={-1} id="page-title">
        {title}
      </h1>
      {children && <div class="page-tools">{children}</div>}
    </div>
  );
}

