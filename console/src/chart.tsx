// A time-series chart (uPlot) that follows its container's width.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  color: string;
  values: Array<number | null>;
  dash?: boolean;
  fill?: boolean;
  points?: boolean; // draw each value as a dot (for sparse series, where lines break at gaps)
}

interface Props {
  title: string;
  x: number[]; // Unix seconds
  series: ChartSeries[];
  format: (v: number) => string; // legend values
  axis?: (v: number) => string; // y-axis ticks; default: format
  height?: number;
  empty?: boolean;
}

export const PALETTE = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];

function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

export function TimeChart({ title, x, series, format, axis, height = 200, empty }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => `${s.label}:${s.color}`).join('|');

  // (Re)build when the set of series changes; otherwise only the data moves.
  useEffect(() => {
    const el = host.current;
    if (!el) return undefined;
    const axisColor = cssVar('--muted', '#6b7280');
    const grid = cssVar('--grid', 'rgba(128,128,128,0.15)');
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height,
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      axes: [
        { stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
        {
          stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid },
          values: (_u, vals) => vals.map((v) => (axis ?? format)(v)),
          // Room for the longest tick label.
          size: (_u, values) => Math.ceil(Math.max(40, 20 + 7.5 * Math.max(0, ...(values ?? []).map((s) => String(s).length)))),
        },
      ],
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          dash: s.dash ? [6, 4] : undefined,
          fill: s.fill ? `${s.color}22` : undefined,
          spanGaps: false,
          points: s.points ? { show: true, size: 6, fill: s.color } : { show: false },
          value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? '—' : format(v)),
        })),
      ],
    };
    const u = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    plot.current = u;
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (w !== u.width) u.setSize({ width: w, height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape, height]);

  useEffect(() => {
    plot.current?.setData([x, ...series.map((s) => s.values)] as uPlot.AlignedData);
  }, [x, series]);

  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div class="chart-host" ref={host} role="img" aria-label={`${title} over time`} />
      {empty && <p class="chart-empty">No requests in this range yet.</p>}
    </figure>
  );
}
