// Credits spent per day, stacked by vendor, drawn as SVG from GET /v1/usage. Colours come from
// classes in style.css (the CSP allows no inline style), so the legend and the bars agree.
import { html } from './lib.js';

const PALETTE_SIZE = 8;
const W = 720;
const H = 260;
const M = { top: 12, right: 12, bottom: 44, left: 64 };

/** Every UTC day from `from` to `to`, inclusive, as YYYY-MM-DD. */
export function daysBetween(from, to) {
  const out = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= end && out.length < 400; t += 86_400_000) {
    out.push(new Date(t).toISOString().slice(0, 10));
  }
  return out;
}

/** A round axis maximum at or above `v` (1, 2, 2.5 or 5 times a power of ten). */
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const fmt = (n) => (Math.round(n * 100) / 100).toLocaleString('en-US', { maximumFractionDigits: 2 });
const megabytes = (bytes) => `${fmt(bytes / 1e6)} MB`;

/**
 * @param {{usage: {from: string, to: string, data: {day: string, vendor: string, route: string, credits: string, count: number}[], total_credits: string, storage?: {files: number, bytes: number}}}} props
 */
export function SpendChart({ usage }) {
  const days = daysBetween(usage.from, usage.to);
  const vendors = [...new Set(usage.data.map((d) => d.vendor))].sort();
  /** @type {Map<string, Map<string, number>>} day → vendor → credits */
  const byDay = new Map(days.map((d) => [d, new Map()]));
  for (const row of usage.data) {
    const m = byDay.get(row.day);
    if (m) m.set(row.vendor, (m.get(row.vendor) ?? 0) + Number(row.credits));
  }
  const totals = days.map((d) => [...byDay.get(d).values()].reduce((a, b) => a + b, 0));
  const max = niceMax(Math.max(0, ...totals));
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const step = plotW / Math.max(days.length, 1);
  const barW = Math.max(2, step * 0.7);
  const y = (v) => M.top + plotH - (v / max) * plotH;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * max);
  const labelEvery = Math.ceil(days.length / 8);
  const title = `Credits spent per day from ${usage.from} to ${usage.to}, stacked by vendor`;
  const desc = `${fmt(Number(usage.total_credits))} credits in total` +
    (vendors.length ? `, by ${vendors.join(', ')}` : ', nothing spent') + '.';

  return html`<figure class="chart">
    <svg viewBox=${`0 0 ${W} ${H}`} role="img" aria-labelledby="spend-title spend-desc" class="spend-chart">
      <title id="spend-title">${title}</title>
      <desc id="spend-desc">${desc}</desc>
      <g class="grid" aria-hidden="true">
        ${ticks.map((t) => html`<g>
          <line x1=${M.left} x2=${W - M.right} y1=${y(t)} y2=${y(t)} />
          <text x=${M.left - 6} y=${y(t) + 4} text-anchor="end">${fmt(t)}</text>
        </g>`)}
      </g>
      <g class="bars">
        ${days.map((day, i) => {
          let base = 0;
          return html`<g data-day=${day}>
            ${vendors.map((v, vi) => {
              const val = byDay.get(day).get(v) ?? 0;
              if (val <= 0) return null;
              const top = y(base + val);
              const rect = html`<rect class=${`bar v${vi % PALETTE_SIZE}`} x=${M.left + i * step + (step - barW) / 2} y=${top}
                width=${barW} height=${Math.max(1, y(base) - top)}><title>${`${day} · ${v}: ${fmt(val)} credits`}</title></rect>`;
              base += val;
              return rect;
            })}
          </g>`;
        })}
      </g>
      <g class="axis" aria-hidden="true">
        <line x1=${M.left} x2=${W - M.right} y1=${M.top + plotH} y2=${M.top + plotH} />
        <line x1=${M.left} x2=${M.left} y1=${M.top} y2=${M.top + plotH} />
        ${days.map((d, i) => (i % labelEvery === 0 || i === days.length - 1) && (i === days.length - 1 || days.length - 1 - i >= labelEvery / 2)
          ? html`<text x=${M.left + i * step + step / 2} y=${M.top + plotH + 16} text-anchor="middle">${d.slice(5)}</text>`
          : null)}
        <text x=${M.left + plotW / 2} y=${H - 6} text-anchor="middle" class="axis-title">Day (UTC)</text>
        <text x=${14} y=${M.top + plotH / 2} text-anchor="middle" class="axis-title" transform=${`rotate(-90 14 ${M.top + plotH / 2})`}>Credits</text>
      </g>
    </svg>
    <figcaption>
      <ul class="legend" aria-label="Vendors">
        ${vendors.length
          ? vendors.map((v, vi) => html`<li><span class=${`swatch v${vi % PALETTE_SIZE}`} aria-hidden="true"></span>${v}</li>`)
          : html`<li class="muted">No spend in this period.</li>`}
      </ul>
      <p class="muted small">Total: <strong class="total-credits">${usage.total_credits}</strong> credits.</p>
      ${usage.storage ? html`<p class="muted small">Result files held now: <strong class="storage-files">${usage.storage.files}</strong> (<span class="storage-bytes">${megabytes(usage.storage.bytes)}</span>).</p>` : null}
    </figcaption>
    <details>
      <summary>Show the numbers as a table</summary>
      <table class="compact">
        <thead><tr><th scope="col">Day</th>${vendors.map((v) => html`<th scope="col">${v}</th>`)}<th scope="col">Total</th></tr></thead>
        <tbody>
          ${days.filter((_, i) => totals[i] > 0).map((d) => html`<tr>
            <th scope="row">${d}</th>
            ${vendors.map((v) => html`<td class="num">${fmt(byDay.get(d).get(v) ?? 0)}</td>`)}
            <td class="num">${fmt(totals[days.indexOf(d)])}</td>
          </tr>`)}
        </tbody>
      </table>
    </details>
  </figure>`;
}
