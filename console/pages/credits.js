// Credits: the wallet's ledger (top-ups, holds, settlements, releases, adjustments) with filters,
// paged by cursor, and its CSV export. Top-ups are the operator's.
import { html, useState } from '../lib.js';
import { api, download, getViewTenant, query } from '../api.js';
import { Field, Loading, PageHeader, Problem, Time, navigate, useAction, useLoad } from '../ui.js';

const TYPES = ['topup', 'hold', 'settle', 'release', 'adjustment'];
const FILTERS = ['type', 'from', 'to'];

export function Credits() {
  const params = new URLSearchParams(location.search);
  const filters = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) ?? '']));
  const key = JSON.stringify(filters);
  const [more, setMore] = useState(/** @type {any[]} */ ([]));
  const [cursor, setCursor] = useState(/** @type {string | null} */ (null));
  const extra = useAction();
  const csv = useAction();
  const first = useLoad(async () => {
    const page = await api('GET', `/v1/ledger${query({ ...filters, limit: 50 })}`);
    setMore([]);
    setCursor(page.next_cursor ?? null);
    return page.data;
  }, [key]);
  const rows = [...(first.data ?? []), ...more];
  const loadMore = () => extra.run(async () => {
    const page = await api('GET', `/v1/ledger${query({ ...filters, limit: 50, cursor })}`);
    setMore((m) => [...m, ...page.data]);
    setCursor(page.next_cursor ?? null);
  });
  const apply = (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    navigate(`/console/credits${query(Object.fromEntries(FILTERS.map((k) => [k, String(f.get(k) ?? '')])))}`);
  };
  const csvPath = `/v1/ledger${query({ ...filters, format: 'csv' })}`;
  // The operator's view of a tenant needs the X-Console-Tenant header, which a plain link cannot send.
  const operator = !!getViewTenant();

  return html`<${PageHeader} title="Credits">
      ${operator
        ? html`<button type="button" class="secondary" disabled=${csv.busy} onClick=${() => csv.run(() => download(csvPath, 'ledger.csv'))}>Export CSV</button>`
        : html`<a class="button secondary" href=${csvPath} download="ledger.csv">Export CSV</a>`}
      <button type="button" class="secondary" onClick=${first.reload}>Refresh</button>
    <//>
    <${Problem} error=${csv.error} label="Export failed" />
    <section class="card" aria-labelledby="ledger-filters">
      <h2 id="ledger-filters" class="sr-only">Filters</h2>
      <form onSubmit=${apply} class="filters" key=${key}>
        <${Field} id="l-type" label="Type">
          <select id="l-type" name="type">
            <option value="">any</option>
            ${TYPES.map((t) => html`<option value=${t} selected=${filters.type === t}>${t}</option>`)}
          </select>
        <//>
        <${Field} id="l-from" label="From (UTC date)"><input id="l-from" name="from" type="date" defaultValue=${filters.from} /><//>
        <${Field} id="l-to" label="To (UTC date)"><input id="l-to" name="to" type="date" defaultValue=${filters.to} /><//>
        <div class="form-end"><button type="submit">Apply filters</button> <a class="button secondary" href="/console/credits">Clear</a></div>
      </form>
    </section>
    <section class="card" aria-labelledby="ledger-title">
      <h2 id="ledger-title">Ledger, newest first</h2>
      <${Loading} state=${first} />
      ${first.data ? (rows.length ? html`<div class="table-wrap"><table class="ledger">
        <thead><tr><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Amount</th><th scope="col">Reference</th><th scope="col">Note</th></tr></thead>
        <tbody>${rows.map((e) => html`<tr>
          <td><${Time} iso=${e.at} /></td><td>${e.kind}</td>
          <td class=${`num ${String(e.amount).startsWith('-') ? 'negative' : ''}`}>${e.amount}</td>
          <td><code class="small">${e.ref}</code></td><td>${e.note}</td>
        </tr>`)}</tbody>
      </table></div>` : html`<p class="muted">No entry matches.</p>`) : null}
      <${Problem} error=${extra.error} />
      ${cursor ? html`<button type="button" class="secondary" disabled=${extra.busy} onClick=${loadMore}>Load more</button>` : null}
    </section>`;
}
