// API keys: the tenant's keys (previews only), a new key (its secret shown once), revocation.
import { html, useState } from '../lib.js';
import { api } from '../api.js';
import { ConfirmButton, Field, Loading, PageHeader, Problem, SecretOnce, Status, Time, localInputToIso, useAction, useLoad } from '../ui.js';

function keyState(k) {
  if (k.revoked_at) return 'revoked';
  if (k.expires_at && Date.parse(k.expires_at) <= Date.now()) return 'expired';
  return 'active';
}

export function Keys({ session }) {
  const keys = useLoad(() => api('GET', '/v1/keys'), []);
  const [created, setCreated] = useState(null);
  const create = useAction();
  const revoke = useAction();

  const submit = async (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const f = new FormData(form);
    const scopes = String(f.get('scopes') ?? '').split(/[\s,]+/).filter(Boolean);
    /** @type {Record<string, unknown>} */
    const body = { name: String(f.get('name') ?? '').trim() };
    if (scopes.length) body.scopes = scopes;
    if (f.get('mode')) body.mode = f.get('mode');
    const expires = localInputToIso(String(f.get('expires_at') ?? ''));
    if (expires) body.expires_at = expires;
    const answer = await create.run(() => api('POST', '/v1/keys', body));
    if (answer) {
      form.reset();
      setCreated(answer);
      keys.reload();
    }
  };

  return html`<${PageHeader} title="API keys">
      <button type="button" class="secondary" onClick=${keys.reload}>Refresh</button>
    <//>
    ${created ? html`<${SecretOnce} title=${`New key “${created.name ?? created.id}”`} secret=${created.secret} onDone=${() => setCreated(null)} />` : null}
    <section class="card" aria-labelledby="keys-list-title">
      <h2 id="keys-list-title">Keys</h2>
      <${Loading} state=${keys} />
      <${Problem} error=${revoke.error} label="Revoke failed" />
      ${keys.data ? html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Scopes</th><th scope="col">Mode</th>
          <th scope="col">Created</th><th scope="col">Expires</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>${keys.data.data.map((k) => html`<tr data-key-id=${k.id}>
          <td>${k.name || html`<span class="muted">(no name)</span>`}</td>
          <td><code>${k.preview}</code>${session?.key_id === k.id ? html` <span class="badge">this session</span>` : null}</td>
          <td>${(k.scopes ?? []).map((s) => html`<code class="scope">${s}</code> `)}</td>
          <td>${k.mode}</td>
          <td><${Time} iso=${k.created_at} /></td>
          <td><${Time} iso=${k.expires_at} /></td>
          <td><${Status} value=${keyState(k)} /></td>
          <td>${k.revoked_at ? null : html`<${ConfirmButton} label="Revoke" question=${`Revoke ${k.name || k.preview}? Requests with it fail at once.`}
            confirmLabel="Yes, revoke" onConfirm=${() => revoke.run(async () => { await api('DELETE', `/v1/keys/${encodeURIComponent(k.id)}`); keys.reload(); })} />`}</td>
        </tr>`)}</tbody>
      </table></div>` : null}
    </section>
    <section class="card" aria-labelledby="key-create-title">
      <h2 id="key-create-title">Create a key</h2>
      <form onSubmit=${submit} class="grid-form">
        <${Field} id="key-name" label="Name"><input id="key-name" name="name" required maxlength="200" /><//>
        <${Field} id="key-scopes" label="Scopes" hint=${`Separated by commas or spaces, e.g. provider_b:create, console:read. Empty: the same as this session's (${(session?.scopes ?? []).join(', ')}). A key never gets more than yours.`}>
          <input id="key-scopes" name="scopes" aria-describedby="key-scopes-hint" spellcheck="false" />
        <//>
        <${Field} id="key-mode" label="Mode" hint="A test key cannot create a live one.">
          <select id="key-mode" name="mode" aria-describedby="key-mode-hint">
            <option value="">Same as this session (${session?.mode ?? '—'})</option>
            <option value="live">live</option>
            <option value="test">test</option>
          </select>
        <//>
        <${Field} id="key-expires" label="Expires (UTC, optional)">
          <input id="key-expires" name="expires_at" type="datetime-local" />
        <//>
        <div class="form-end">
          <${Problem} error=${create.error} label="The key was not created" />
          <button type="submit" disabled=${create.busy}>Create key</button>
        </div>
      </form>
    </section>`;
}
