/**
 * The egress chart: allowed, refused and failed decisions per bucket of time as stacked bars, in inline
 * SVG markup whose look comes only from classes in the stylesheet — no `style` attribute, so the
 * strict CSP (`style-src 'self'`) holds. Each bar says its counts on hover (`<title>`), and the
 * whole chart has a text label for screen readers.
 */
import type { EgressBucket } from "../../app/index.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";

const W = 760;
const H = 190;
const LEFT = 40;
const BOTTOM = 24;
const TOP = 8;

function label(iso: string, spanMs: number): string {
  const d = new Date(iso);
  // Within two days the hour says enough; beyond, the date.
  return spanMs <= 2 * 86_400_000 ? `${d.toISOString().slice(11, 16)}` : d.toISOString().slice(5, 10);
}

/** A round step for the y axis. */
function niceMax(n: number): number {
  if (n <= 4) return 4;
  const mag = 10 ** Math.floor(Math.log10(n));
  const f = n / mag;
  return (f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/** The chart of a summary's buckets. */
export function egressChart(buckets: readonly EgressBucket[]): Markup {
  const n = buckets.length;
  if (n === 0) return html``;
  const max = niceMax(Math.max(...buckets.map((b) => b.allowed + b.refused + b.failed)));
  const plotW = W - LEFT - 8;
  const plotH = H - BOTTOM - TOP;
  const step = plotW / n;
  const barW = Math.max(1, step * 0.8);
  const y = (v: number): number => TOP + plotH - (v / max) * plotH;
  const span = Date.parse(buckets[n - 1]?.end ?? "") - Date.parse(buckets[0]?.start ?? "");
  const total = buckets.reduce((s, b) => s + b.allowed + b.refused + b.failed, 0);
  const refused = buckets.reduce((s, b) => s + b.refused, 0);
  const failed = buckets.reduce((s, b) => s + b.failed, 0);
  const grid = [0, max / 2, max].map((v) => html`<line class="grid-line" x1="${LEFT}" x2="${W - 8}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/><text x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${v}</text>`);
  const bars = buckets.map((b, i) => {
    const x = (LEFT + i * step + (step - barW) / 2).toFixed(1);
    const hA = (b.allowed / max) * plotH;
    const hF = (b.failed / max) * plotH;
    const hR = (b.refused / max) * plotH;
    const base = TOP + plotH;
    const rect = (cls: string, bottom: number, h: number): Markup => html`<rect class="${cls}" x="${x}" y="${(base - bottom - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}"/>`;
    return html`<g><title>${label(b.start, span)}–${label(b.end, span)}: ${b.allowed} allowed, ${b.refused} refused, ${b.failed} failed</title>${rect("allowed", 0, hA)}${rect("failed", hA, hF)}${rect("refused", hA + hF, hR)}</g>`;
  });
  // The axis' ends are the window's: its start under the first bar's left edge, its end under the last's right.
  const first = buckets[0];
  const middle = buckets[Math.floor(n / 2)];
  const last = buckets[n - 1];
  const ticks = [
    first === undefined ? html`` : html`<text x="${LEFT}" y="${H - 6}" text-anchor="start">${label(first.start, span)}</text>`,
    middle === undefined || n < 3 ? html`` : html`<text x="${(LEFT + Math.floor(n / 2) * step).toFixed(1)}" y="${H - 6}" text-anchor="middle">${label(middle.start, span)}</text>`,
    last === undefined ? html`` : html`<text x="${LEFT + plotW}" y="${H - 6}" text-anchor="end">${label(last.end, span)}</text>`,
  ];
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${`Egress decisions over time: ${total} in all, ${refused} refused, ${failed} failed`}" xmlns="http://www.w3.org/2000/svg">${grid}<line class="axis" x1="${LEFT}" x2="${W - 8}" y1="${TOP + plotH}" y2="${TOP + plotH}"/>${bars}${ticks}</svg>`;
}
