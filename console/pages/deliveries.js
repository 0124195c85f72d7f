// Webhook deliveries: per endpoint and per event, each delivery's attempts (time, status,
// duration, error), its next retry, and resend.
import { html, useState } from '../lib.js';
import { api, query } from '../api.js';
import { Loading, PageHeader, Problem, Status, Time, navigate, useAction, useLoad } from '../ui.js';

function DeliveryTable({ rows, showEndpoint = false }) {
  if (!rows.length) return html`<p class="muted">No delivery yet.</p>`;
  return html`<div class="table-wrap"><table>
    <thead><tr>
      <th scope="col">Delivery</th><th scope="col">Event</th>${showEndpoint ? html`<th scope="col">Endpoint</th>` : null}
      <th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Next retry</th><th scope="col">Created</th>
    </tr></thead>
    <tbody>${rows.map((d) => html`<tr data-delivery-id=${d.id}>
      <td><a href=${`/console/deliveries/${encodeURIComponent(d.id)}`}><code>${d.id}</code></a></td>
      <td><code>${d.event_type}</code>${d.test ? html` <span class="badge">test</span>` : null}<br />
        <a class="small" href=${`/console/events/${encodeURIComponent(d.event_id)}`}><code>${d.event_id}</code></a></td>
      ${showEndpoint ? html`<td><code>${d.endpoint_id}</code></td>` : null}
      <td><${Status} value=${d.status} /></td>
      <td class="num">${d.attempt_count}</td>
      <td>${d.last_status_code ?? ''}${d.last_error ? html` <span class="muted small">${d.last_error}</span>` : null}</td>
      <td><${Time} iso=${d.next_attempt_at} /></td>
      <td><${Time} iso=${d.created_at} /></td>
    </tr>`)}</tbody>
  </table></div>`;
}

/** Pages of a delivery list through its cursor (`starting_after` = the last id shown). */
function usePaged(path, deps) {
  const [more, setMore] = useState(/** @type {any[]} */ ([]));
  const [hasMore, setHasMore] = useState(false);
  const extra = useAction();
  const first = useLoad(async () => {
    if (!path) return null;
    const page = await api('GET', `${path}${query({ limit: 20 })}`);
    setMore([]);
    setHasMore(page.has_more);
    return page.data;
  }, deps, { everyMs: 5_000 });
  const rows = [...(first.data ?? []), ...more];
  const loadMore = () => extra.run(async () => {
    const page = await api('GET', `${path}${query({ limit: 20, starting_after: rows[rows.length - 1]?.id })}`);
    setMore((m) => [...m, ...page.data]);
    setHasMore(page.has_more);
  });
  return { first, rows, hasMore, loadMore, extra };
}

export function Deliveries() {
  const endpointId = new URLSearchParams(location.search).get('endpoint') ?? '';
  const endpoints = useLoad(() => api('GET', '/v1/webhooks/endpoints'), []);
  const chosen = endpointId || endpoints.data?.data[0]?.id || '';
  const list = usePaged(chosen ? `/v1/webhooks/endpoints/${encodeURIComponent(chosen)}/deliveries` : '', [chosen]);
  const findEvent = (e) => {
    e.preventDefault();
    const id = String(new FormData(e.currentTarget).get('event') ?? '').trim();
    if (id) navigate(`/console/events/${encodeURIComponent(id)}`);
  };
  return html`<${PageHeader} title="Deliveries">
      <button type="button" class="secondary" onClick=${list.first.reload}>Refresh</button>
    <//>
    <section class="card" aria-labelledby="by-endpoint">
      <h2 id="by-endpoint">By endpoint</h2>
      <${Loading} state=${endpoints} />
      ${endpoints.data ? (endpoints.data.data.length ? html`<div class="field inline-field">
          <label for="delivery-endpoint">Endpoint</label>
          <select id="delivery-endpoint" value=${chosen} onChange=${(e) => navigate(`/console/deliveries${query({ endpoint: e.currentTarget.value })}`)}>
            ${endpoints.data.data.map((ep) => html`<option value=${ep.id}>${ep.url}${ep.description ? ` — ${ep.description}` : ''}</option>`)}
          </select>
        </div>` : html`<p class="muted">No endpoint: <a href="/console/webhooks">add one</a>.</p>`) : null}
      ${chosen ? html`<div><${Loading} state=${list.first} /><${DeliveryTable} rows=${list.rows} />
        <${Problem} error=${list.extra.error} />
        ${list.hasMore ? html`<button type="button" class="secondary" disabled=${list.extra.busy} onClick=${list.loadMore}>Load more</button>` : null}</div>` : null}
    </section>
    <section class="card" aria-labelledby="by-event">
      <h2 id="by-event">By event</h2>
      <form onSubmit=${findEvent} class="inline-form">
        <div class="field inline-field">
          <label for="event-id">Event ID</label>
          <input id="event-id" name="event" required placeholder="evt_…" spellcheck="false" />
        </div>
        <button type="submit">Show its deliveries</button>
      </form>
    </section>`;
}

export function EventDeliveries({ id }) {
  const list = usePaged(`/v1/events/${encodeURIComponent(id)}/deliveries`, [id]);
  return html`<${PageHeader} title=${`Deliveries of event ${id}`}>
      <a class="button secondary" href="/console/deliveries">All deliveries</a>
    <//>
    <section class="card">
      <${Loading} state=${list.first} />
      ${list.first.data ? html`<${DeliveryTable} rows=${list.rows} showEndpoint=${true} />` : null}
      ${list.hasMore ? html`<button type="button" class="secondary" onClick=${list.loadMore}>Load more</button>` : null}
    </section>`;
}

export function DeliveryDetail({ id }) {
  const d = useLoad(() => api('GET', `/v1/webhooks/deliveries/${encodeURIComponent(id)}`), [id], { everyMs: 2_000 });
  const resend = useAction();
  const [resent, setResent] = useState(false);
  const v = d.data;
  return html`<${PageHeader} title=${`Delivery ${id}`}>
      <button type="button" class="secondary" onClick=${d.reload}>Refresh</button>
      ${v ? html`<button type="button" disabled=${resend.busy} onClick=${() => resend.run(async () => {
        await api('POST', `/v1/webhooks/deliveries/${encodeURIComponent(id)}/resend`);
        setResent(true);
        d.reload();
      })}>Resend</button>` : null}
    <//>
    <${Problem} error=${resend.error} label="Resend refused" />
    ${resent ? html`<p class="notice" role="status">Sent again: a new series of attempts has started.</p>` : null}
    <${Loading} state=${d} />
    ${v ? html`<div><section class="card" aria-labelledby="delivery-summary">
      <h2 id="delivery-summary">Summary</h2>
      <dl class="stats">
        <div><dt>Status</dt><dd class="delivery-status"><${Status} value=${v.status} /></dd></div>
        <div><dt>Event</dt><dd><code>${v.event_type}</code> <a href=${`/console/events/${encodeURIComponent(v.event_id)}`}><code>${v.event_id}</code></a></dd></div>
        <div><dt>Endpoint</dt><dd><a href=${`/console/deliveries${query({ endpoint: v.endpoint_id })}`}><code>${v.endpoint_id}</code></a></dd></div>
        <div><dt>Attempts</dt><dd>${v.attempt_count}</dd></div>
        <div><dt>Next retry</dt><dd class="next-retry"><${Time} iso=${v.next_attempt_at} /></dd></div>
        ${v.failure_reason ? html`<div><dt>Gave up because</dt><dd>${v.failure_reason}</dd></div>` : null}
      </dl>
    </section>
    <section class="card" aria-labelledby="attempts-title">
      <h2 id="attempts-title">Attempts</h2>
      ${v.attempts.length ? html`<div class="table-wrap"><table class="attempts">
        <thead><tr><th scope="col">Series</th><th scope="col">Attempt</th><th scope="col">Time</th><th scope="col">Status</th>
          <th scope="col">Duration</th><th scope="col">Error</th><th scope="col">Next retry</th></tr></thead>
        <tbody>${v.attempts.map((a) => html`<tr>
          <td class="num">${a.series}</td><td class="num">${a.attempt}</td><td><${Time} iso=${a.at} /></td>
          <td class="attempt-status">${a.status_code ?? html`<span class="muted">no answer</span>`}</td>
          <td class="num">${a.latency_ms} ms</td><td>${a.error ?? ''}</td><td><${Time} iso=${a.next_attempt_at} /></td>
        </tr>`)}</tbody>
      </table></div>` : html`<p class="muted">No attempt yet.</p>`}
    </section>
    <section class="card" aria-labelledby="payload-title">
      <h2 id="payload-title">Payload</h2>
      <pre class="json">${JSON.stringify(v.payload, null, 2)}</pre>
    </section></div>` : null}`;
}
