// Webhook endpoints: list (the secret masked), create and rotate (the secret shown once), edit,
// enable/disable, delete, send a test event. When the API refuses (the 5-endpoint limit, an
// http:// or private URL), its problem detail is shown next to the form that was sent.
import { html, useState } from '../lib.js';
import { api } from '../api.js';
import { ConfirmButton, Field, Loading, PageHeader, Problem, SecretOnce, Status, Time, useAction, useLoad } from '../ui.js';

/** The event types an endpoint may subscribe to, from the gateway (engine/events/types.ts): the page keeps no list of its own. */
function useEventTypes() {
  return useLoad(() => api('GET', '/v1/webhooks/event-types'), []);
}

function EndpointForm({ idPrefix, initial, submitLabel, onSubmit, action, onCancel }) {
  const types = useEventTypes();
  const submit = async (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const f = new FormData(form);
    /** @type {Record<string, unknown>} */
    const body = { url: String(f.get('url') ?? '').trim(), events: f.getAll('events').map(String) };
    const description = String(f.get('description') ?? '');
    if (description || initial) body.description = description || null;
    if (initial) body.enabled = f.get('enabled') === 'on';
    if (await onSubmit(body)) form.reset();
  };
  const events = initial?.events ?? ['task.succeeded', 'task.failed'];
  return html`<form onSubmit=${submit} class="grid-form">
    <${Field} id=${`${idPrefix}-url`} label="URL" hint="HTTPS only, to a public address.">
      <input id=${`${idPrefix}-url`} name="url" type="url" required defaultValue=${initial?.url ?? ''} placeholder="https://example.com/webhooks" spellcheck="false" aria-describedby=${`${idPrefix}-url-hint`} />
    <//>
    <fieldset class="field">
      <legend>Events</legend>
      <${Loading} state=${types} />
      ${(types.data?.data ?? []).map(({ type: t, summary }) => html`<label class="check" title=${summary}><input type="checkbox" name="events" value=${t} defaultChecked=${events.includes(t)} /> ${t}</label>`)}
    </fieldset>
    <${Field} id=${`${idPrefix}-description`} label="Description (optional)">
      <input id=${`${idPrefix}-description`} name="description" maxlength="500" defaultValue=${initial?.description ?? ''} />
    <//>
    ${initial ? html`<label class="check"><input type="checkbox" name="enabled" defaultChecked=${initial.enabled} /> Enabled</label>` : null}
    <div class="form-end">
      <${Problem} error=${action.error} label=${initial ? 'The endpoint was not saved' : 'The endpoint was not created'} />
      <button type="submit" disabled=${action.busy}>${submitLabel}</button>
      ${onCancel ? html`<button type="button" class="secondary" onClick=${onCancel}>Cancel</button>` : null}
    </div>
  </form>`;
}

export function Webhooks() {
  const list = useLoad(() => api('GET', '/v1/webhooks/endpoints'), []);
  const [secret, setSecret] = useState(/** @type {null | {title: string, secret: string}} */ (null));
  const [editing, setEditing] = useState(/** @type {any} */ (null));
  const [notice, setNotice] = useState(/** @type {any} */ (null));
  const create = useAction();
  const edit = useAction();
  const row = useAction();

  const onCreate = async (body) => {
    const ep = await create.run(() => api('POST', '/v1/webhooks/endpoints', body));
    if (!ep) return false;
    setSecret({ title: `Signing secret of ${ep.url}`, secret: ep.secret });
    list.reload();
    return true;
  };
  const onEdit = async (body) => {
    const ep = await edit.run(() => api('PATCH', `/v1/webhooks/endpoints/${encodeURIComponent(editing.id)}`, body));
    if (!ep) return false;
    setEditing(null);
    list.reload();
    return true;
  };
  const act = (fn) => row.run(async () => {
    setNotice(null);
    await fn();
    list.reload();
  });
  const path = (ep, rest = '') => `/v1/webhooks/endpoints/${encodeURIComponent(ep.id)}${rest}`;

  return html`<${PageHeader} title="Webhooks">
      <button type="button" class="secondary" onClick=${list.reload}>Refresh</button>
    <//>
    ${secret ? html`<${SecretOnce} title=${secret.title} secret=${secret.secret} onDone=${() => setSecret(null)} />` : null}
    <section class="card" aria-labelledby="endpoints-title">
      <h2 id="endpoints-title">Endpoints</h2>
      <p class="muted small">Deliveries are signed with the endpoint's secret (header <code>X-Service-Webhook-Signature</code>). At most 5 endpoints.</p>
      <${Loading} state=${list} />
      <${Problem} error=${row.error} label="The action failed" />
      ${notice ? html`<p class="notice" role="status">Test event <code>${notice.event.id}</code> sent:
        <a href=${`/console/deliveries/${encodeURIComponent(notice.delivery.id)}`}>see its delivery</a>.</p>` : null}
      ${list.data ? (list.data.data.length ? html`<ul class="endpoints">${list.data.data.map((ep) => html`<li class="endpoint" data-endpoint-id=${ep.id}>
        <div class="endpoint-head">
          <code class="url">${ep.url}</code>
          <${Status} value=${ep.enabled ? 'enabled' : 'disabled'} />
          ${!ep.enabled && ep.disabled_reason ? html`<span class="muted small">(${ep.disabled_reason === 'endpoint_gone' ? 'the receiver answered 410 Gone' : 'by you'})</span>` : null}
        </div>
        <dl class="inline">
          <div><dt>Description</dt><dd class="description">${ep.description ?? html`<span class="muted">—</span>`}</dd></div>
          <div><dt>Events</dt><dd>${ep.events.map((t) => html`<code class="scope">${t}</code> `)}</dd></div>
          <div><dt>Secret</dt><dd><code class="masked-secret">${ep.secret_preview}</code></dd></div>
          <div><dt>Created</dt><dd><${Time} iso=${ep.created_at} /></dd></div>
          <div><dt>ID</dt><dd><code>${ep.id}</code></dd></div>
        </dl>
        <div class="actions" role="group" aria-label=${`Actions for ${ep.url}`}>
          <button type="button" onClick=${() => { edit.setError(null); setEditing(ep); }}>Edit</button>
          <button type="button" class="secondary" onClick=${() => act(() => api('PATCH', path(ep), { enabled: !ep.enabled }))}>${ep.enabled ? 'Disable' : 'Enable'}</button>
          <button type="button" class="secondary" onClick=${() => act(async () => setNotice(await api('POST', path(ep, '/test'))))}>Send test event</button>
          <a class="button secondary" href=${`/console/deliveries?endpoint=${encodeURIComponent(ep.id)}`}>Deliveries</a>
          <${ConfirmButton} label="Rotate secret" question="Rotate the secret? The old one stops working at once." confirmLabel="Yes, rotate"
            onConfirm=${() => act(async () => { const r = await api('POST', path(ep, '/rotate-secret')); setSecret({ title: `New signing secret of ${r.url}`, secret: r.secret }); })} />
          <${ConfirmButton} label="Delete" question=${`Delete this endpoint? Its deliveries stop.`} confirmLabel="Yes, delete"
            onConfirm=${() => act(() => api('DELETE', path(ep)))} />
        </div>
        ${editing?.id === ep.id ? html`<section class="edit" aria-label="Edit endpoint">
          <h3>Edit endpoint</h3>
          <${EndpointForm} idPrefix="edit" initial=${editing} submitLabel="Save" onSubmit=${onEdit} action=${edit} onCancel=${() => setEditing(null)} />
        </section>` : null}
      </li>`)}</ul>` : html`<p class="muted">No endpoint yet.</p>`) : null}
    </section>
    <section class="card" aria-labelledby="endpoint-create-title">
      <h2 id="endpoint-create-title">Add an endpoint</h2>
      <${EndpointForm} idPrefix="new" submitLabel="Create endpoint" onSubmit=${onCreate} action=${create} />
    </section>`;
}
