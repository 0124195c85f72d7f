// Pieces every page uses: loading state, problems, times and money, the secret shown once, the
// two-step confirmation. Everything a tenant typed goes through htm's ${} and renders as text.
import { html, useCallback, useEffect, useRef, useState } from './lib.js';

/** The client-side router's navigate, set by app.js. */
let navigateImpl = (/** @type {string} */ _path) => {};
export function setNavigate(fn) {
  navigateImpl = fn;
}
export function navigate(path) {
  navigateImpl(path);
}

/**
 * Runs `load` now, whenever `deps` change, and on reload(); with `everyMs`, again on that beat
 * while the page is visible (the page keeps what it shows until the next answer comes).
 * @template T
 * @param {() => Promise<T>} load
 * @param {unknown[]} deps
 * @param {{everyMs?: number}} [opts]
 */
export function useLoad(load, deps, opts = {}) {
  const [state, setState] = useState(/** @type {{data?: T, error?: any, loading: boolean}} */ ({ loading: true }));
  const seq = useRef(0);
  const run = useCallback(() => {
    const n = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => n === seq.current && setState({ data, loading: false }),
      (error) => n === seq.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, deps);
  useEffect(() => {
    run();
    if (!opts.everyMs) return undefined;
    const t = setInterval(() => {
      if (document.visibilityState === 'visible') run();
    }, opts.everyMs);
    return () => clearInterval(t);
  }, [run, opts.everyMs]);
  return { ...state, reload: run };
}

/** An API refusal as the user should read it: its title, its detail, and the fields it names. */
export function Problem({ error, label }) {
  if (!error) return html`<div class="problem-slot"></div>`;
  const p = error.problem ?? { title: 'Error', detail: String(error.message ?? error) };
  return html`<div class="problem-slot"><div class="problem" role="alert">
    <strong>${label ? `${label}: ` : ''}${p.title ?? 'Refused'}</strong>
    ${p.detail ? html`<p class="detail">${p.detail}</p>` : null}
    ${Array.isArray(p.errors) && p.errors.length
      ? html`<ul>${p.errors.map((e) => html`<li><code>${e.pointer || '/'}</code> ${e.detail}</li>`)}</ul>`
      : null}
    ${p.error_code ? html`<p class="muted small">Service code ${p.error_code}${p.trace_id ? `, trace ${p.trace_id}` : ''}</p>` : null}
  </div></div>`;
}

export function Loading({ state }) {
  if (state.loading && state.data === undefined) return html`<div class="load-state"><p class="muted" role="status">Loading…</p></div>`;
  return html`<div class="load-state"><${Problem} error=${state.error} /></div>`;
}

/** '2026-11-24 20:41:07 UTC': one unambiguous spelling for everyone reading the same page. */
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export function Time({ iso }) {
  return iso ? html`<time datetime=${iso}>${fmtTime(iso)}</time>` : html`<span class="muted">—</span>`;
}

/** A value of <input type="datetime-local"> (taken as UTC, as every time on the page) → RFC 3339. */
export function localInputToIso(value) {
  if (!value) return undefined;
  const d = new Date(value.length === 16 ? `${value}:00Z` : `${value}Z`);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

export function Status({ value }) {
  return html`<span class=${`badge status-${String(value).toLowerCase()}`}>${value}</span>`;
}

export function Field({ label, hint, children, id }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children}
    ${hint ? html`<p class="hint" id=${`${id}-hint`}>${hint}</p>` : null}
  </div>`;
}

/** The secret of a key or a webhook endpoint, shown the one time the API returns it. */
export function SecretOnce({ title, secret, onDone }) {
  const [copied, setCopied] = useState('');
  const ref = useRef(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('Copied to the clipboard.');
    } catch {
      // No clipboard permission (an insecure origin, a locked-down browser): select it for Ctrl+C.
      const range = document.createRange();
      range.selectNodeContents(ref.current);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      setCopied('Selected: press Ctrl+C (⌘C) to copy.');
    }
  };
  return html`<section class="secret-once" aria-labelledby="secret-once-title">
    <h3 id="secret-once-title">${title}</h3>
    <p class="warning"><strong>Copy it now: you will not see it again.</strong> The gateway keeps only a hash of it.</p>
    <div class="secret-row">
      <code class="secret" ref=${ref} aria-label="Secret">${secret}</code>
      <button type="button" onClick=${copy}>Copy</button>
    </div>
    <p class="muted small" role="status">${copied}</p>
    <button type="button" class="secondary" onClick=${onDone}>I have saved it</button>
  </section>`;
}

/** A destructive action asked twice, in the page (keyboard- and screen-reader-friendly, unlike confirm()). */
export function ConfirmButton({ label, question, confirmLabel, onConfirm, danger = true, disabled = false }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const yes = useRef(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
  }, [asking]);
  if (!asking) {
    return html`<button type="button" class=${danger ? 'danger' : ''} disabled=${disabled} onClick=${() => setAsking(true)}>${label}</button>`;
  }
  const confirm = async () => {
    setBusy(true);
    try {
      await onConfirm();
    } finally {
      setBusy(false);
      setAsking(false);
    }
  };
  return html`<span class="confirm" role="group" aria-label=${question}>
    <span>${question}</span>
    <button type="button" ref=${yes} class=${danger ? 'danger' : ''} disabled=${busy} onClick=${confirm}>${confirmLabel}</button>
    <button type="button" class="secondary" onClick=${() => setAsking(false)}>Cancel</button>
  </span>`;
}

/** Runs an async action, keeping its error for display beside the control that started it. */
export function useAction() {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const run = async (/** @type {() => Promise<unknown>} */ fn) => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run, setError };
}

export function PageHeader({ title, children }) {
  return html`<div class="page-header">
    <h1 tabindex="-1">${title}</h1>
    <div class="actions">${children}</div>
  </div>`;
}

/** A link inside the app (the router turns the click into a history push). */
export function Link({ href, children, ...rest }) {
  return html`<a href=${href} ...${rest}>${children}</a>`;
}
