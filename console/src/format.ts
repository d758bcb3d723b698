// Number and time formatting, in the user's locale and time zone.

const int = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });

export function fmtInt(n: number | null | undefined): string {
  return n === null || n === undefined || !Number.isFinite(n) ? '—' : int.format(n);
}

export function fmtNum(n: number | null | undefined, digits = 2): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return n.toLocaleString(undefined, { maximumFractionDigits: digits });
}

// Axis ticks: three significant digits, so close ticks stay distinct (0.012, 0.014...).
export function fmtTick(n: number): string {
  if (n === 0) return '0';
  const a = Math.abs(n);
  if (a >= 1e4) return fmtCompact(n);
  return String(Number(n.toPrecision(3)));
}

// A rate that may be tiny: "<0.01" rather than a misleading 0.
export function fmtRate(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  if (n > 0 && n < 0.01) return '<0.01';
  return n.toLocaleString(undefined, { maximumFractionDigits: 2 });
}

// Large counts as 1.2k / 3.4M.
export function fmtCompact(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const a = Math.abs(n);
  if (a >= 1e9) return `${(n / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return int.format(n);
}

export function fmtUsd(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  if (n === 0) return '$0';
  if (Math.abs(n) < 0.01) return `$${n.toPrecision(2)}`;
  return `$${n.toFixed(2)}`;
}

export function fmtMs(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  if (n >= 3_600_000) return `${Number((n / 3_600_000).toFixed(1))} h`;
  if (n >= 120_000) return `${Number((n / 60_000).toFixed(1))} min`;
  if (n >= 10_000) return `${(n / 1000).toFixed(1)} s`;
  if (n > 0 && n < 10 && !Number.isInteger(n)) return `${n.toFixed(1)} ms`;
  return `${Math.round(n)} ms`;
}

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number(v.toFixed(1))} ${units[i]}`;
}

export function fmtPct(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return `${(n * 100).toFixed(n < 0.1 && n > 0 ? 2 : 1)}%`;
}

export function fmtTime(ms: number | null | undefined): string {
  if (!ms) return '—';
  return new Date(ms).toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

export function fmtDay(ms: number): string {
  return new Date(ms).toLocaleDateString(undefined, { timeZone: 'UTC', year: 'numeric', month: 'short', day: 'numeric' });
}

// "in 5 min" / "3 h ago".
export function fmtRelative(ms: number, now = Date.now()): string {
  const d = ms - now;
  const a = Math.abs(d);
  const unit = a < 60_000 ? [Math.round(a / 1000), 's'] : a < 3_600_000 ? [Math.round(a / 60_000), 'min']
    : a < 86_400_000 ? [Math.round(a / 3_600_000), 'h'] : [Math.round(a / 86_400_000), 'd'];
  return d >= 0 ? `in ${unit[0]} ${unit[1]}` : `${unit[0]} ${unit[1]} ago`;
}

// <input type="datetime-local"> value <-> Unix ms, in local time.
export function toLocalInput(ms: number | null | undefined): string {
  if (!ms) return '';
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fromLocalInput(v: string): number | null {
  if (!v) return null;
  const ms = new Date(v).getTime();
  return Number.isFinite(ms) ? ms : null;
}

export function splitList(s: string): string[] {
  return s.split(/[,\n]/).map((x) => x.trim()).filter(Boolean);
}
