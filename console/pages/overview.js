// Overview: the wallet, what was spent per day over the last 30 days, and the tasks still running.
import { html } from '../lib.js';
import { api } from '../api.js';
import { SpendChart } from '../chart.js';
import { Loading, PageHeader, Status, Time, useLoad } from '../ui.js';

export function Overview() {
  const wallet = useLoad(() => api('GET', '/v1/balance'), [], { everyMs: 10_000 });
  const usage = useLoad(() => api('GET', '/v1/usage'), [], { everyMs: 10_000 });
  const active = useLoad(async () => {
    const [processing, pending] = await Promise.all([
      api('GET', '/v1/tasks?status=processing&limit=20'),
      api('GET', '/v1/tasks?status=pending&limit=20'),
    ]);
    return [...processing.data, ...pending.data].sort((a, b) => b.task_info.created_at.localeCompare(a.task_info.created_at));
  }, [], { everyMs: 5_000 });
  const refresh = () => {
    wallet.reload();
    usage.reload();
    active.reload();
  };
  const w = wallet.data;
  return html`<${PageHeader} title="Overview">
      <button type="button" class="secondary" onClick=${refresh}>Refresh</button>
    <//>
    <section aria-labelledby="wallet-title" class="card">
      <h2 id="wallet-title">Wallet</h2>
      <${Loading} state=${wallet} />
      ${w ? html`<div><dl class="stats">
        <div><dt>Available</dt><dd class="big" data-field="available">${w.available}</dd></div>
        <div><dt>Balance</dt><dd data-field="balance">${w.balance}</dd></div>
        <div><dt>Held by running tasks</dt><dd data-field="held">${w.held}</dd></div>
        <div><dt>State</dt><dd><${Status} value=${w.state} /></dd></div>
        <div><dt>Low-balance threshold</dt><dd>${w.low_balance_threshold ?? 'none'}</dd></div>
      </dl>
      <p class="muted small">Amounts are in credits. Top-ups are made by the operator.</p></div>` : null}
    </section>
    <section aria-labelledby="spend-heading" class="card">
      <h2 id="spend-heading">Credits spent per day</h2>
      <${Loading} state=${usage} />
      ${usage.data ? html`<${SpendChart} usage=${usage.data} />` : null}
    </section>
    <section aria-labelledby="active-title" class="card">
      <h2 id="active-title">Active tasks</h2>
      <${Loading} state=${active} />
      ${active.data ? (active.data.length
        ? html`<div class="table-wrap"><table>
            <thead><tr><th scope="col">Task</th><th scope="col">Status</th><th scope="col">Vendor</th><th scope="col">Route</th><th scope="col">Created</th></tr></thead>
            <tbody>${active.data.map((t) => html`<tr>
              <td><a href=${`/console/tasks/${encodeURIComponent(t.task_info.id)}`}><code>${t.task_info.id}</code></a></td>
              <td><${Status} value=${t.task_info.status} /></td>
              <td>${t.vendor}</td><td>${t.route}</td><td><${Time} iso=${t.task_info.created_at} /></td>
            </tr>`)}</tbody>
          </table></div>`
        : html`<p class="muted">No task is pending or processing. <a href="/console/tasks">All tasks</a></p>`) : null}
    </section>`;
}
