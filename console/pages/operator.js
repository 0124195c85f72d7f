// The operator's view (admin session): tenants (create, disable), a tenant's wallet (top-up with
// a reference, adjustment, low-balance threshold), its limits, and opening its console view.
import { html, useState } from '../lib.js';
import { api } from '../api.js';
import { ConfirmButton, Field, Loading, PageHeader, Problem, Status, Time, useAction, useLoad } from '../ui.js';

export function OperatorTenants({ onOpen }) {
  const list = useLoad(() => api('GET', '/admin/v1/tenants'), []);
  const create = useAction();
  const row = useAction();
  const [made, setMade] = useState(/** @type {any} */ (null));
  const submit = async (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const f = new FormData(form);
    const t = await create.run(() => api('POST', '/admin/v1/tenants', { name: String(f.get('name') ?? '').trim(), requires_live: f.get('requires_live') === 'on' }));
    if (t) {
      form.reset();
      setMade(t);
      list.reload();
    }
  };
  const setDisabled = (t, disabled) => row.run(async () => {
    await api('PATCH', `/admin/v1/tenants/${encodeURIComponent(t.id)}`, { disabled });
    list.reload();
  });
  return html`<${PageHeader} title="Tenants">
      <button type="button" class="secondary" onClick=${list.reload}>Refresh</button>
    <//>
    <section class="card" aria-labelledby="tenants-title">
      <h2 id="tenants-title">All tenants</h2>
      <${Loading} state=${list} />
      <${Problem} error=${row.error} label="The action failed" />
      ${list.data ? html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Name</th><th scope="col">ID</th><th scope="col">Created</th><th scope="col">Live keys only</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>${list.data.data.map((t) => html`<tr data-tenant-id=${t.id}>
          <td><a href=${`/console/operator/tenants/${encodeURIComponent(t.id)}`}>${t.name}</a></td>
          <td><code>${t.id}</code></td><td><${Time} iso=${t.created_at} /></td><td>${t.requires_live ? 'yes' : 'no'}</td>
          <td><${Status} value=${t.disabled ? 'disabled' : 'active'} /></td>
          <td class="actions">
            <button type="button" onClick=${() => onOpen(t.id)}>Open this tenant's console</button>
            ${t.disabled
              ? html`<button type="button" class="secondary" onClick=${() => setDisabled(t, false)}>Enable</button>`
              : html`<${ConfirmButton} label="Disable" question=${`Disable ${t.name}? All its keys stop working.`} confirmLabel="Yes, disable" onConfirm=${() => setDisabled(t, true)} />`}
          </td>
        </tr>`)}</tbody>
      </table></div>` : null}
    </section>
    <section class="card" aria-labelledby="tenant-create-title">
      <h2 id="tenant-create-title">Create a tenant</h2>
      ${made ? html`<p class="notice" role="status">Created <a href=${`/console/operator/tenants/${encodeURIComponent(made.id)}`}>${made.name}</a> (<code>${made.id}</code>).</p>` : null}
      <form onSubmit=${submit} class="grid-form">
        <${Field} id="tenant-name" label="Name"><input id="tenant-name" name="name" required maxlength="200" /><//>
        <label class="check"><input type="checkbox" name="requires_live" /> Only live, non-expiring keys may call provider routes</label>
        <div class="form-end">
          <${Problem} error=${create.error} label="The tenant was not created" />
          <button type="submit" disabled=${create.busy}>Create tenant</button>
        </div>
      </form>
    </section>`;
}

function WalletForms({ id, onChanged }) {
  const topup = useAction();
  const adjust = useAction();
  const threshold = useAction();
  const base = `/admin/v1/tenants/${encodeURIComponent(id)}/wallet`;
  const submit = (action, fn) => async (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const f = Object.fromEntries(new FormData(form).entries());
    const ok = await action.run(() => fn(f));
    if (ok) {
      form.reset();
      onChanged();
    }
  };
  const opt = (v) => (String(v ?? '').trim() ? String(v).trim() : undefined);
  return html`<div class="forms-row">
    <form class="card" aria-labelledby="topup-title" onSubmit=${submit(topup, (f) => api('POST', `${base}/topups`, { credits: String(f.credits).trim(), ref: opt(f.ref), note: opt(f.note) }))}>
      <h3 id="topup-title">Top up</h3>
      <${Field} id="topup-credits" label="Credits"><input id="topup-credits" name="credits" required inputmode="decimal" pattern="[0-9]{1,12}(\\.[0-9]{1,3})?" /><//>
      <${Field} id="topup-ref" label="Reference (e.g. the payment id)" hint="The same reference is never credited twice."><input id="topup-ref" name="ref" maxlength="200" aria-describedby="topup-ref-hint" /><//>
      <${Field} id="topup-note" label="Note (optional)"><input id="topup-note" name="note" maxlength="500" /><//>
      <${Problem} error=${topup.error} label="Top-up refused" />
      <button type="submit" disabled=${topup.busy}>Top up</button>
    </form>
    <form class="card" aria-labelledby="adjust-title" onSubmit=${submit(adjust, (f) => api('POST', `${base}/adjustments`, { credits: String(f.credits).trim(), note: String(f.note).trim(), ref: opt(f.ref) }))}>
      <h3 id="adjust-title">Adjustment</h3>
      <${Field} id="adjust-credits" label="Credits (negative to debit)"><input id="adjust-credits" name="credits" required inputmode="decimal" pattern="-?[0-9]{1,12}(\\.[0-9]{1,3})?" /><//>
      <${Field} id="adjust-note" label="Reason"><input id="adjust-note" name="note" required maxlength="500" /><//>
      <${Field} id="adjust-ref" label="Reference (optional)"><input id="adjust-ref" name="ref" maxlength="200" /><//>
      <${Problem} error=${adjust.error} label="Adjustment refused" />
      <button type="submit" disabled=${adjust.busy}>Apply adjustment</button>
    </form>
    <form class="card" aria-labelledby="threshold-title" onSubmit=${submit(threshold, (f) => api('PUT', `${base}/threshold`, { credits: opt(f.credits) ?? null }))}>
      <h3 id="threshold-title">Low-balance threshold</h3>
      <${Field} id="threshold-credits" label="Credits" hint="Empty: the configured default."><input id="threshold-credits" name="credits" inputmode="decimal" aria-describedby="threshold-credits-hint" /><//>
      <${Problem} error=${threshold.error} label="Threshold refused" />
      <button type="submit" disabled=${threshold.busy}>Set threshold</button>
    </form>
  </div>`;
}

/** {per_second: 5, per_minute: null, ...} → '5 / second' ('unlimited' when every window is null). */
function rateText(windows) {
  const set = Object.entries(windows ?? {}).filter(([, v]) => v !== null && v !== undefined);
  return set.length ? set.map(([k, v]) => `${v} / ${k.replace(/^per_/, '')}`).join(', ') : 'unlimited';
}

function Limits({ id }) {
  const limits = useLoad(() => api('GET', `/admin/v1/tenants/${encodeURIComponent(id)}/limits`), [id]);
  const save = useAction();
  const submit = async (e) => {
    e.preventDefault();
    const text = String(new FormData(e.currentTarget).get('overrides') ?? '').trim();
    await save.run(async () => {
      let body;
      try {
        body = text ? JSON.parse(text) : {};
      } catch (err) {
        throw new Error(`The overrides are not JSON: ${err.message}`);
      }
      await api('PUT', `/admin/v1/tenants/${encodeURIComponent(id)}/limits`, body);
      limits.reload();
    });
  };
  const l = limits.data;
  return html`<section class="card" aria-labelledby="limits-title">
    <h2 id="limits-title">Limits</h2>
    <${Loading} state=${limits} />
    ${l ? html`<div><dl class="stats">
        <div><dt>Rate per key</dt><dd>${rateText(l.rate.key)}</dd></div>
        <div><dt>Rate per tenant</dt><dd>${rateText(l.rate.tenant)}</dd></div>
        <div><dt>Rate per model</dt><dd>${rateText(l.rate.model)}</dd></div>
        <div><dt>Concurrent tasks</dt><dd>${l.concurrent_tasks ?? 'unlimited'}</dd></div>
        <div><dt>Daily spend (credits)</dt><dd>${l.daily_spend_credits ?? 'unlimited'}</dd></div>
      </dl>
      <form onSubmit=${submit} key=${JSON.stringify(l.overrides)} class="spaced">
        <${Field} id="limits-overrides" label="This tenant's overrides (JSON)"
          hint='For example {"concurrent_tasks": 5, "daily_spend_credits": "1000", "rate": {"key": {"per_minute": 60}}}; null lifts a limit, {} restores the defaults.'>
          <textarea id="limits-overrides" name="overrides" rows="5" spellcheck="false" aria-describedby="limits-overrides-hint" defaultValue=${JSON.stringify(l.overrides ?? {}, null, 2)}></textarea>
        <//>
        <${Problem} error=${save.error} label="Limits refused" />
        <button type="submit" disabled=${save.busy}>Save limits</button>
      </form></div>` : null}
  </section>`;
}

export function OperatorTenant({ id, onOpen }) {
  const tenant = useLoad(() => api('GET', `/admin/v1/tenants/${encodeURIComponent(id)}`), [id]);
  const wallet = useLoad(() => api('GET', `/admin/v1/tenants/${encodeURIComponent(id)}/wallet`), [id]);
  const t = tenant.data;
  const w = wallet.data;
  return html`<${PageHeader} title=${t ? `Tenant ${t.name}` : `Tenant ${id}`}>
      <a class="button secondary" href="/console/operator">All tenants</a>
      <button type="button" onClick=${() => onOpen(id)}>Open this tenant's console</button>
    <//>
    <${Loading} state=${tenant} />
    ${t ? html`<p class="muted"><code>${t.id}</code> · created <${Time} iso=${t.created_at} /> · <${Status} value=${t.disabled ? 'disabled' : 'active'} /></p>` : null}
    <section class="card" aria-labelledby="op-wallet-title">
      <h2 id="op-wallet-title">Wallet</h2>
      <${Loading} state=${wallet} />
      ${w ? html`<dl class="stats">
        <div><dt>Available</dt><dd class="big" data-field="available">${w.available}</dd></div>
        <div><dt>Balance</dt><dd>${w.balance}</dd></div>
        <div><dt>Held</dt><dd>${w.held}</dd></div>
        <div><dt>State</dt><dd><${Status} value=${w.state} /></dd></div>
        <div><dt>Threshold</dt><dd>${w.low_balance_threshold ?? 'none'}</dd></div>
      </dl>` : null}
    </section>
    <${WalletForms} id=${id} onChanged=${wallet.reload} />
    <${Limits} id=${id} />`;
}
