// Sign-in: the API key (or the operator's admin token) goes to the server once, in the body of
// one same-origin POST, and is exchanged for an HttpOnly session cookie. The page keeps neither:
// the field is cleared as soon as the request is sent, and nothing is written to storage.
import { html, useRef, useState } from '../lib.js';
import { api } from '../api.js';
import { Problem } from '../ui.js';

export function SignIn({ onSignedIn, notice }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const input = useRef(null);
  const submit = async (e) => {
    e.preventDefault();
    const key = input.current.value.trim();
    input.current.value = '';
    setBusy(true);
    setError(null);
    try {
      const info = await api('POST', '/console/v1/session', { api_key: key }, { quiet401: true });
      onSignedIn({ kind: 'tenant', info });
    } catch (err) {
      setError(err);
      input.current?.focus();
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="signin card" aria-labelledby="signin-title">
    <h1 id="signin-title" tabindex="-1">Sign in to the console</h1>
    ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
    <p>Sign in with an API key that has the <code>console:read</code> scope. The key is exchanged for a
      short session; this page does not keep it.</p>
    <form onSubmit=${submit}>
      <div class="field">
        <label for="api-key">API key</label>
        <input id="api-key" name="api_key" type="password" autocomplete="off" spellcheck="false" required
          placeholder="gw_live_… or gw_test_…" ref=${input} aria-describedby="api-key-hint" />
        <p class="hint" id="api-key-hint">With the sandbox on, the demo tenant's key is the gateway's <code>GATEWAY_DEMO_API_KEY</code>.</p>
      </div>
      <${Problem} error=${error} label="Sign-in refused" />
      <button type="submit" disabled=${busy}>Sign in</button>
    </form>
    <p class="muted small"><a href="/console/operator">Operator sign-in</a></p>
  </section>`;
}

export function OperatorSignIn({ onSignedIn, notice }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const input = useRef(null);
  const submit = async (e) => {
    e.preventDefault();
    const token = input.current.value;
    input.current.value = '';
    setBusy(true);
    setError(null);
    try {
      await api('POST', '/console/v1/admin-session', { admin_token: token }, { quiet401: true });
      onSignedIn({ kind: 'operator' });
    } catch (err) {
      setError(err);
      input.current?.focus();
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="signin card" aria-labelledby="op-signin-title">
    <h1 id="op-signin-title" tabindex="-1">Operator sign-in</h1>
    ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
    <p>Sign in with the gateway's admin token (<code>GATEWAY_ADMIN_TOKEN</code>) to manage tenants, wallets and limits.</p>
    <form onSubmit=${submit}>
      <div class="field">
        <label for="admin-token">Admin token</label>
        <input id="admin-token" name="admin_token" type="password" autocomplete="off" spellcheck="false" required ref=${input} />
      </div>
      <${Problem} error=${error} label="Sign-in refused" />
      <button type="submit" disabled=${busy}>Sign in as operator</button>
    </form>
    <p class="muted small"><a href="/console">Tenant sign-in</a></p>
  </section>`;
}
