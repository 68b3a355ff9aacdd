/**
 * A bar chart drawn on the server as inline SVG: no script, so it is there as soon as the page is
 * (and in a fragment htmx swaps in), and the figures it draws are in the page for a test or a
 * screen reader to read. The SVG is an image with its title and a one-line description; the
 * caller puts the figures beside it as a table.
 */
import { html, raw, type Html } from '../html.ts';

export interface BarChartBar {
  /** What the bar is (its bucket), as its tooltip and the axis say it. */
  label: string;
  value: number;
}

export interface BarChartOptions {
  /** The element id the SVG's title gets; the description gets `${id}-desc`. */
  id: string;
  title: string;
  description: string;
  bars: readonly BarChartBar[];
  /** The unit of a value, singular and plural ("click", "clicks"), for the tooltips. */
  unit: [string, string];
  /** How many bars apart the axis labels are at least (the others are left blank). */
  labelEvery?: number;
}

const WIDTH = 720;
const HEIGHT = 220;
const LEFT = 44;
const RIGHT = 8;
const TOP = 10;
const BOTTOM = 28;
const BAR = '#0969da';
const GRID = '#d0d7de';
const TEXT = '#57606a';

/** The smallest of 1, 2, 5 × 10^k at or above `n`, at least 1: the axis ends on a round value. */
export function niceCeiling(n: number): number {
  if (n <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * magnitude >= n) return m * magnitude;
  return 10 * magnitude;
}

export function barChart(opts: BarChartOptions): Html {
  const { bars } = opts;
  const max = niceCeiling(Math.max(0, ...bars.map((b) => b.value)));
  const plotW = WIDTH - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const slot = plotW / Math.max(1, bars.length);
  // A few bars (a campaign in its first hours) stay bars, not blocks.
  const barW = Math.max(1, Math.min(slot * 0.8, 48));
  const y = (v: number) => TOP + plotH - (v / max) * plotH;
  const fmt = (n: number) => Number(n.toFixed(2));
  // Whole numbers only: 0, the middle when it is whole, and the top.
  const ticks = [...new Set([0, max / 2, max])].filter((t) => Number.isInteger(t));
  const every = Math.max(opts.labelEvery ?? 1, Math.ceil(bars.length / 8));
  const grid = ticks.map(
    (t) =>
      html`<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${fmt(y(t))}" y2="${fmt(y(t))}" stroke="${GRID}" stroke-width="1"/><text x="${LEFT - 6}" y="${fmt(y(t) + 4)}" text-anchor="end" font-size="11" fill="${TEXT}">${t.toLocaleString('en')}</text>`,
  );
  const drawn = bars.map((b, i) => {
    const x = LEFT + i * slot + (slot - barW) / 2;
    const label = i % every === 0 ? html`<text x="${fmt(LEFT + i * slot + slot / 2)}" y="${HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11" fill="${TEXT}">${b.label}</text>` : '';
    const tip = `${b.label}: ${b.value.toLocaleString('en')} ${b.value === 1 ? opts.unit[0] : opts.unit[1]}`;
    const bar =
      b.value > 0
        ? html`<rect class="bar" x="${fmt(x)}" y="${fmt(y(b.value))}" width="${fmt(barW)}" height="${fmt(y(0) - y(b.value))}" fill="${BAR}" data-value="${b.value}"><title>${tip}</title></rect>`
        : '';
    return html`${bar}${label}`;
  });
  return html`<svg class="bar-chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" preserveAspectRatio="xMidYMid meet" role="img" aria-labelledby="${opts.id} ${opts.id}-desc" xmlns="http://www.w3.org/2000/svg"><title id="${opts.id}">${opts.title}</title><desc id="${opts.id}-desc">${opts.description}</desc>${grid}${drawn}${raw(
    `<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${fmt(y(0))}" y2="${fmt(y(0))}" stroke="${TEXT}" stroke-width="1"/>`,
  )}</svg>`;
}
