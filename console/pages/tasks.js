// Tasks: the tenant's tasks, newest first, filtered and paged by cursor; one task with its
// result (images as thumbnails, other media as links), error, cost, events and their deliveries.
import { html, useState } from '../lib.js';
import { api, query } from '../api.js';
import { Field, Loading, PageHeader, Problem, Status, Time, localInputToIso, navigate, useAction, useLoad } from '../ui.js';

const STATUSES = ['pending', 'processing', 'completed', 'failed'];
const FILTERS = ['status', 'vendor', 'route', 'created_after', 'created_before'];

export function Tasks() {
  const params = new URLSearchParams(location.search);
  const filters = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) ?? '']));
  const key = JSON.stringify(filters);
  const [more, setMore] = useState(/** @type {any[]} */ ([]));
  const [cursor, setCursor] = useState(/** @type {string | null} */ (null));
  const [auto, setAuto] = useState(true);
  const extra = useAction();
  const first = useLoad(async () => {
    const page = await api('GET', `/v1/tasks${query({ ...filters, limit: 20 })}`);
    setMore([]);
    setCursor(page.has_more ? page.next_cursor : null);
    return page.data;
  }, [key], { everyMs: auto ? 3_000 : 0 });
  const rows = [...(first.data ?? []), ...more];
  const loadMore = () => extra.run(async () => {
    const page = await api('GET', `/v1/tasks${query({ ...filters, limit: 20, starting_after: cursor })}`);
    setAuto(false); // a refresh would drop the pages loaded below the first
    setMore((m) => [...m, ...page.data]);
    setCursor(page.has_more ? page.next_cursor : null);
  });
  const apply = (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const q = {};
    for (const k of FILTERS) {
      const v = String(f.get(k) ?? '').trim();
      q[k] = k.startsWith('created_') ? localInputToIso(v) : v;
    }
    navigate(`/console/tasks${query(q)}`);
  };
  const toLocal = (iso) => (iso ? iso.slice(0, 16) : '');

  return html`<${PageHeader} title="Tasks">
      <label class="check"><input type="checkbox" checked=${auto} onChange=${(e) => setAuto(e.currentTarget.checked)} /> Refresh automatically</label>
      <button type="button" class="secondary" onClick=${first.reload}>Refresh</button>
    <//>
    <section class="card" aria-labelledby="task-filters">
      <h2 id="task-filters" class="sr-only">Filters</h2>
      <form onSubmit=${apply} class="filters" key=${key}>
        <${Field} id="f-status" label="Status">
          <select id="f-status" name="status">
            <option value="">any</option>
            ${STATUSES.map((s) => html`<option value=${s} selected=${filters.status === s}>${s}</option>`)}
          </select>
        <//>
        <${Field} id="f-vendor" label="Vendor"><input id="f-vendor" name="vendor" defaultValue=${filters.vendor} placeholder="provider_b" /><//>
        <${Field} id="f-route" label="Route"><input id="f-route" name="route" defaultValue=${filters.route} /><//>
        <${Field} id="f-after" label="Created after (UTC)"><input id="f-after" name="created_after" type="datetime-local" defaultValue=${toLocal(filters.created_after)} /><//>
        <${Field} id="f-before" label="Created before (UTC)"><input id="f-before" name="created_before" type="datetime-local" defaultValue=${toLocal(filters.created_before)} /><//>
        <div class="form-end"><button type="submit">Apply filters</button> <a class="button secondary" href="/console/tasks">Clear</a></div>
      </form>
    </section>
    <section class="card" aria-labelledby="task-list-title">
      <h2 id="task-list-title">Tasks, newest first</h2>
      <${Loading} state=${first} />
      ${first.data ? (rows.length ? html`<div class="table-wrap"><table class="tasks">
        <thead><tr><th scope="col">Task</th><th scope="col">Status</th><th scope="col">Vendor</th><th scope="col">Route</th>
          <th scope="col">Created</th><th scope="col">Updated</th><th scope="col">Cost</th></tr></thead>
        <tbody>${rows.map((t) => html`<tr data-task-id=${t.task_info.id}>
          <td><a href=${`/console/tasks/${encodeURIComponent(t.task_info.id)}`}><code>${t.task_info.id}</code></a></td>
          <td class="task-status"><${Status} value=${t.task_info.status} /></td>
          <td>${t.vendor}</td><td>${t.route}</td>
          <td><${Time} iso=${t.task_info.created_at} /></td><td><${Time} iso=${t.task_info.updated_at} /></td>
          <td class="num">${t.cost ?? '—'}</td>
        </tr>`)}</tbody>
      </table></div>` : html`<p class="muted">No task matches.</p>`) : null}
      <${Problem} error=${extra.error} />
      ${cursor ? html`<button type="button" class="secondary" disabled=${extra.busy} onClick=${loadMore}>Load more</button>` : null}
    </section>`;
}

/** Every http(s) URL in a task's result, with the JSON path it was found at. */
function mediaOf(value, path = '', out = []) {
  if (typeof value === 'string') {
    if (/^https?:\/\//i.test(value)) out.push({ path, url: value });
  } else if (Array.isArray(value)) value.forEach((v, i) => mediaOf(v, `${path}[${i}]`, out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) mediaOf(v, path ? `${path}.${k}` : k, out);
  return out;
}

const isImage = (m) => /\.(png|jpe?g|gif|webp|avif|bmp)(\?|#|$)/i.test(m.url) || /image/i.test(m.path);
const isVideo = (m) => /\.(mp4|webm|mov|m3u8)(\?|#|$)/i.test(m.url) || /video/i.test(m.path);

function Result({ task }) {
  const { task_info: _info, vendor: _v, route: _r, cost: _c, ...result } = task;
  const media = mediaOf(result);
  if (!media.length && !Object.keys(result).length) return html`<p class="muted">No result yet.</p>`;
  return html`<div>${media.length ? html`<ul class="media">${media.map((m) => html`<li>
      ${isImage(m) && !isVideo(m)
        ? html`<a href=${m.url} target="_blank" rel="noopener noreferrer"><img src=${m.url} alt=${`Result image ${m.path}`} loading="lazy" /></a>`
        : html`<a href=${m.url} target="_blank" rel="noopener noreferrer">${isVideo(m) ? 'Video' : 'File'}: ${m.path}</a>`}
      <span class="muted small url">${m.url}</span>
    </li>`)}</ul>` : null}</div>`;
}

export function TaskDetail({ id }) {
  const t = useLoad(() => api('GET', `/v1/tasks/${encodeURIComponent(id)}`), [id], { everyMs: 3_000 });
  const v = t.data;
  const task = v?.task;
  const info = task?.task_info;
  return html`<${PageHeader} title=${`Task ${id}`}>
      <a class="button secondary" href="/console/tasks">All tasks</a>
      <button type="button" class="secondary" onClick=${t.reload}>Refresh</button>
    <//>
    <${Loading} state=${t} />
    ${task ? html`<div><section class="card" aria-labelledby="task-info-title">
      <h2 id="task-info-title">Task info</h2>
      <dl class="stats">
        <div><dt>Status</dt><dd class="task-status"><${Status} value=${info.status} /></dd></div>
        <div><dt>Vendor</dt><dd>${task.vendor}</dd></div>
        <div><dt>Route</dt><dd>${task.route}</dd></div>
        <div><dt>Created</dt><dd><${Time} iso=${info.created_at} /></dd></div>
        <div><dt>Updated</dt><dd><${Time} iso=${info.updated_at} /></dd></div>
        <div><dt>Cost (credits)</dt><dd>${task.cost ?? '—'}</dd></div>
      </dl>
      ${info.error ? html`<div class="problem" role="note"><strong>Error ${info.error.code}: ${info.error.title}</strong><p class="detail">${info.error.detail}</p></div>` : null}
    </section>
    <section class="card" aria-labelledby="task-result-title">
      <h2 id="task-result-title">Result</h2>
      <${Result} task=${task} />
      <details><summary>The task as the API returns it</summary><pre class="json">${JSON.stringify(task, null, 2)}</pre></details>
    </section>
    <section class="card" aria-labelledby="task-events-title">
      <h2 id="task-events-title">Events and deliveries</h2>
      ${v.events.length ? html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Time</th><th scope="col">Deliveries</th></tr></thead>
        <tbody>${v.events.map((e) => html`<tr>
          <td><a href=${`/console/events/${encodeURIComponent(e.id)}`}><code>${e.id}</code></a></td>
          <td><code>${e.type}</code></td><td><${Time} iso=${e.created_at} /></td>
          <td>${e.deliveries.length ? html`<ul class="plain">${e.deliveries.map((d) => html`<li>
            <a href=${`/console/deliveries/${encodeURIComponent(d.id)}`}><code>${d.id}</code></a>
            <${Status} value=${d.status} /> ${d.attempt_count} attempt(s)${d.next_attempt_at ? html`, next <${Time} iso=${d.next_attempt_at} />` : null}
          </li>`)}</ul>` : html`<span class="muted">no endpoint subscribed</span>`}</td>
        </tr>`)}</tbody>
      </table></div>` : html`<p class="muted">No event yet.</p>`}
    </section></div>` : null}`;
}
