import { useEffect, useRef, useState } from 'preact/hooks';
import { errorFrom, errorText, rawRequest } from '../api';
import { fmtInt, fmtMs } from '../format';
import { readSse } from '../sse';
import { Card, ErrorBox, PageHeader, useAsync } from '../ui';

interface Run {
  status: 'idle' | 'waiting' | 'streaming' | 'done' | 'stopped' | 'failed';
  text: string;
  chunks: number;
  started: number;
  headersMs?: number;
  ttfbMs?: number;
  totalMs?: number;
  httpStatus?: number;
  channel?: string;
  requestId?: string;
  attempts?: string;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  error?: unknown;
}

const IDLE: Run = { status: 'idle', text: '', chunks: 0, started: 0 };

interface ChatChunk {
  choices?: Array<{ delta?: { content?: string | null; reasoning_content?: string | null }; finish_reason?: string | null }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string; code?: string };
}

export function Playground() {
  const models = useAsync(async (signal) => {
    const res = await rawRequest('/v1/models', { signal });
    if (!res.ok) throw await errorFrom(res);
    const body = (await res.json()) as { data?: Array<{ id: string }> };
    return (body.data ?? []).map((m) => m.id).sort();
  }, []);
  const [model, setModel] = useState(() => sessionStorage.getItem('sluice.playground.model') ?? '');
  const [system, setSystem] = useState('');
  const [prompt, setPrompt] = useState('Write a haiku about a river.');
  const [maxTokens, setMaxTokens] = useState('256');
  const [run, setRun] = useState<Run>(IDLE);
  const ctrl = useRef<AbortController | null>(null);
  const out = useRef<HTMLDivElement>(null);

  // The first listed model as the default, unless the field was typed in (even emptied) or holds
  // a model already: the ref is set by the keystroke itself, before any render or effect, so a
  // list arriving in the same frame as typing never replaces what was typed.
  const typed = useRef(false);
  useEffect(() => {
    const first = models.data?.[0];
    if (first && !typed.current) setModel((current) => current || first);
  }, [models.data]);
  useEffect(() => () => ctrl.current?.abort(), []);
  useEffect(() => {
    const el = out.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [run.text]);

  const send = async (e: Event) => {
    e.preventDefault();
    if (!model.trim() || !prompt.trim()) return;
    sessionStorage.setItem('sluice.playground.model', model.trim());
    const c = new AbortController();
    ctrl.current = c;
    const t0 = performance.now();
    let r: Run = { ...IDLE, status: 'waiting', started: t0 };
    const update = (p: Partial<Run>) => { r = { ...r, ...p }; setRun(r); };
    update({});
    try {
      const messages = [
        ...(system.trim() ? [{ role: 'system', content: system }] : []),
        { role: 'user', content: prompt },
      ];
      const body: Record<string, unknown> = { model: model.trim(), stream: true, stream_options: { include_usage: true }, messages };
      if (maxTokens.trim()) body.max_tokens = Number(maxTokens);
      const res = await rawRequest('/v1/chat/completions', { method: 'POST', body, signal: c.signal });
      update({
        headersMs: performance.now() - t0,
        httpStatus: res.status,
        channel: res.headers.get('x-sluice-channel') ?? undefined,
        requestId: res.headers.get('x-request-id') ?? undefined,
        attempts: res.headers.get('x-sluice-attempts') ?? undefined,
      });
      if (!res.ok || !res.body) throw await errorFrom(res);
      update({ status: 'streaming' });
      for await (const ev of readSse(res.body)) {
        if (ev.data === '[DONE]') break;
        let chunk: ChatChunk;
        try {
          chunk = JSON.parse(ev.data) as ChatChunk;
        } catch {
          continue;
        }
        if (chunk.error) throw new Error(chunk.error.message ?? 'the stream ended with an error');
        const delta = chunk.choices?.[0]?.delta;
        const piece = (delta?.content ?? '') + (delta?.reasoning_content ?? '');
        const patch: Partial<Run> = { chunks: r.chunks + 1 };
        if (piece) {
          patch.text = r.text + piece;
          if (r.ttfbMs === undefined) patch.ttfbMs = performance.now() - t0;
        }
        if (chunk.usage) patch.usage = chunk.usage;
        update(patch);
      }
      update({ status: 'done', totalMs: performance.now() - t0 });
    } catch (err) {
      if (c.signal.aborted) update({ status: 'stopped', totalMs: performance.now() - t0 });
      else update({ status: 'failed', error: err, totalMs: performance.now() - t0 });
    } finally {
      if (ctrl.current === c) ctrl.current = null;
    }
  };

  const busy = run.status === 'waiting' || run.status === 'streaming';
  const statusText = {
    idle: 'Ready.', waiting: 'Waiting for the first byte…', streaming: 'Streaming…', done: 'Done.',
    stopped: 'Stopped.', failed: 'Failed.',
  }[run.status];

  return (
    <>
      <PageHeader title="Playground" />
      <p class="lead">Send a chat request through the gateway with the master key and watch the stream arrive.</p>
      <div class="playground">
        <Card>
          <form class="form" onSubmit={send} aria-label="Chat request">
            <div class="field">
              <label for="pg-model">Model</label>
              <input id="pg-model" list="pg-models" value={model} required autoComplete="off"
                onInput={(e) => { typed.current = true; setModel(e.currentTarget.value); }} aria-describedby="pg-model-hint" />
              <datalist id="pg-models">{models.data?.map((m) => <option key={m} value={m} />)}</datalist>
              <small id="pg-model-hint" class="hint">
                {models.loading ? 'Loading the model list…' : models.error ? `Model list unavailable: ${errorText(models.error)}` : `${models.data?.length ?? 0} models listed by /v1/models; CHANNEL/model pins a channel.`}
              </small>
            </div>
            <div class="field">
              <label for="pg-system">System prompt (optional)</label>
              <textarea id="pg-system" rows={2} value={system} onInput={(e) => setSystem(e.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="pg-prompt">Message</label>
              <textarea id="pg-prompt" rows={4} value={prompt} required onInput={(e) => setPrompt(e.currentTarget.value)}
                onKeyDown={(e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); e.currentTarget.form?.requestSubmit(); } }}
                aria-describedby="pg-prompt-hint" />
              <small id="pg-prompt-hint" class="hint">Ctrl+Enter sends.</small>
            </div>
            <div class="field field-narrow">
              <label for="pg-max">Max tokens</label>
              <input id="pg-max" type="number" min={1} value={maxTokens} onInput={(e) => setMaxTokens(e.currentTarget.value)} />
            </div>
            <div class="form-actions">
              <button type="submit" class="btn btn-primary" disabled={busy || !model.trim()} data-testid="pg-send">Send</button>
              <button type="button" class="btn btn-danger" disabled={!busy} onClick={() => ctrl.current?.abort()} data-testid="pg-stop">Stop</button>
            </div>
          </form>
        </Card>
        <Card title="Response" id="pg-response">
          <p class="muted" role="status" aria-live="polite" data-testid="pg-status" data-status={run.status}>{statusText}</p>
          <div class="pg-output" ref={out} tabIndex={0} aria-label="Streamed answer" aria-busy={busy} data-testid="pg-output">
            {run.text || (run.status === 'idle' ? <span class="muted">The answer appears here as it streams.</span> : '')}
            {run.status === 'streaming' && <span class="caret" aria-hidden="true" />}
          </div>
          {run.status === 'failed' && <ErrorBox error={run.error} title="The request failed" />}
          <dl class="props props-grid pg-meta" data-testid="pg-meta">
            <div><dt>HTTP status</dt><dd>{run.httpStatus ?? '—'}</dd></div>
            <div><dt>Headers after</dt><dd>{fmtMs(run.headersMs)}</dd></div>
            <div><dt>First token (TTFB)</dt><dd data-testid="pg-ttfb">{fmtMs(run.ttfbMs)}</dd></div>
            <div><dt>Total</dt><dd>{fmtMs(run.totalMs)}</dd></div>
            <div><dt>Chunks</dt><dd data-testid="pg-chunks">{fmtInt(run.chunks)}</dd></div>
            <div><dt>Tokens in / out</dt><dd>{run.usage ? `${fmtInt(run.usage.prompt_tokens)} / ${fmtInt(run.usage.completion_tokens)}` : '—'}</dd></div>
            <div><dt>x-sluice-channel</dt><dd><code data-testid="pg-channel">{run.channel ?? '—'}</code></dd></div>
            <div><dt>x-sluice-attempts</dt><dd>{run.attempts ?? '—'}</dd></div>
            <div><dt>x-request-id</dt><dd><code class="break" data-testid="pg-request-id">{run.requestId ?? '—'}</code></dd></div>
          </dl>
        </Card>
      </div>
    </>
  );
}
