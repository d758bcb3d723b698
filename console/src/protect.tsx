// The protect-stage overrides a virtual key or a store channel may carry (screening action and
// response cache; unset inherits), shared by the Keys and Channels forms and cards.
import { describedBy, Field } from './ui';

const SCREENING = [
  ['', 'Gateway default'],
  ['off', 'Off'],
  ['log', 'Log: count it'],
  ['warn', 'Warn: add a header'],
  ['block', 'Block: refuse with 400'],
] as const;
const CACHE = [
  ['', 'Gateway default'],
  ['on', 'On'],
  ['off', 'Off'],
] as const;

export interface Overrides {
  screening?: 'off' | 'log' | 'warn' | 'block' | null;
  cache?: boolean | null;
}

// Form values: '' inherits.
export interface ProtectForm {
  screening: string;
  cache: string;
}

export function protectForm(o?: Overrides): ProtectForm {
  return {
    screening: o?.screening ?? '',
    cache: o?.cache === null || o?.cache === undefined ? '' : o.cache ? 'on' : 'off',
  };
}

export function protectBody(f: ProtectForm): { screening: string | null; cache: boolean | null } {
  return { screening: f.screening || null, cache: f.cache === '' ? null : f.cache === 'on' };
}

export const PROTECT_PARAMS = ['screening', 'cache'] as const;

// The two rows of a card's property list.
export function ProtectProps({ o, testid }: { o: Overrides; testid: string }) {
  return (
    <>
      <div><dt>Screening</dt><dd data-testid={`${testid}-screening`}>{o.screening ?? 'gateway default'}</dd></div>
      <div><dt>Cache</dt><dd data-testid={`${testid}-cache`}>{o.cache === null || o.cache === undefined ? 'gateway default' : o.cache ? 'on' : 'off'}</dd></div>
    </>
  );
}

// The two selects of a form. `what` completes the hints: "this key", "this channel".
export function ProtectFields({ base, value, onChange, error, what }: {
  base: string; value: ProtectForm; onChange: (v: ProtectForm) => void; error: (param: string) => string | undefined; what: string;
}) {
  const select = (p: keyof ProtectForm, label: string, hint: string, options: ReadonlyArray<readonly [string, string]>) => (
    <Field id={`${base}-${p}`} label={label} error={error(p)} hint={hint}>
      <select id={`${base}-${p}`} name={p} value={value[p]} onChange={(e) => onChange({ ...value, [p]: e.currentTarget.value })}
        aria-describedby={describedBy(`${base}-${p}`, 'h', error(p))} aria-invalid={!!error(p)}>
        {options.map(([v, l]) => <option key={v} value={v}>{l}</option>)}
      </select>
    </Field>
  );
  return (
    <>
      {select('screening', 'Prompt screening', `What a prompt the detector flags does on ${what}`, SCREENING)}
      {select('cache', 'Response cache', `Exact-match cache for ${what}'s requests`, CACHE)}
    </>
  );
}
