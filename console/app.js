// The console's shell: who is signed in (a tenant's session or the operator's), the client-side
// routes under /console, the navigation, and sign-out. Pages live in ./pages/.
import { html, render, useEffect, useState } from './lib.js';
import { api, ApiError, onUnauthorized, setViewTenant } from './api.js';
import { Problem, setNavigate } from './ui.js';
import { SignIn, OperatorSignIn } from './pages/signin.js';
import { Overview } from './pages/overview.js';
import { Keys } from './pages/keys.js';
import { Webhooks } from './pages/webhooks.js';
import { Deliveries, DeliveryDetail, EventDeliveries } from './pages/deliveries.js';
import { Tasks, TaskDetail } from './pages/tasks.js';
import { Credits } from './pages/credits.js';
import { OperatorTenants, OperatorTenant } from './pages/operator.js';

const VIEW_KEY = 'gw_console_view_tenant';

/** The path below /console, as segments: /console/tasks/abc → ['tasks', 'abc']. */
function segmentsOf(pathname) {
  return pathname.replace(/^\/console\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

const TENANT_NAV = [
  ['', 'Overview'],
  ['keys', 'API keys'],
  ['webhooks', 'Webhooks'],
  ['deliveries', 'Deliveries'],
  ['tasks', 'Tasks'],
  ['credits', 'Credits'],
];

function tenantPage(seg, session) {
  const [first, id] = seg;
  switch (first) {
    case undefined: return html`<${Overview} session=${session} />`;
    case 'keys': return html`<${Keys} session=${session} />`;
    case 'webhooks': return html`<${Webhooks} />`;
    case 'deliveries': return id ? html`<${DeliveryDetail} id=${id} />` : html`<${Deliveries} />`;
    case 'events': return html`<${EventDeliveries} id=${id ?? ''} />`;
    case 'tasks': return id ? html`<${TaskDetail} id=${id} />` : html`<${Tasks} />`;
    case 'credits': return html`<${Credits} />`;
    default: return html`<${NotFound} />`;
  }
}

function NotFound() {
  return html`<h1 tabindex="-1">Page not found</h1><p>There is no such console page. <a href="/console">Go to the overview</a>.</p>`;
}

function App() {
  const [path, setPath] = useState(location.pathname + location.search);
  /** @type {[null | undefined | {kind: 'tenant', info: any} | {kind: 'operator'}, any]} undefined: still asking */
  const [session, setSession] = useState(undefined);
  const [ended, setEnded] = useState('');
  const [viewTenant, setView] = useState(() => sessionStorage.getItem(VIEW_KEY));
  const [signOutError, setSignOutError] = useState(null);

  const go = (to, replace = false) => {
    if (to === location.pathname + location.search) return;
    history[replace ? 'replaceState' : 'pushState'](null, '', to);
    setPath(to);
  };
  setNavigate(go);
  setViewTenant(session?.kind === 'operator' ? viewTenant : null);

  useEffect(() => {
    const onPop = () => setPath(location.pathname + location.search);
    // Links inside the app change the route without a page load; others (downloads, new tabs,
    // modified clicks) keep the browser's behaviour.
    const onClick = (/** @type {MouseEvent} */ e) => {
      const a = /** @type {HTMLElement} */ (e.target).closest?.('a');
      if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const href = a.getAttribute('href');
      if (!href || !href.startsWith('/console') || a.hasAttribute('download') || a.target) return;
      e.preventDefault();
      go(href);
    };
    addEventListener('popstate', onPop);
    document.addEventListener('click', onClick);
    const off = onUnauthorized(() => {
      setSession(null);
      setEnded('Your session has ended or was revoked. Sign in again.');
    });
    return () => {
      removeEventListener('popstate', onPop);
      document.removeEventListener('click', onClick);
      off();
    };
  }, []);

  useEffect(() => {
    (async () => {
      try {
        setSession({ kind: 'tenant', info: await api('GET', '/console/v1/session', undefined, { quiet401: true }) });
        return;
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 401) console.warn('session probe', err);
      }
      try {
        await api('GET', '/admin/v1/tenants', undefined, { quiet401: true });
        setSession({ kind: 'operator' });
      } catch {
        setSession(null);
      }
    })();
  }, []);

  // A new page gets the focus on its heading, so keyboard and screen-reader users start there.
  useEffect(() => {
    document.querySelector('main h1')?.focus({ preventScroll: false });
    const h1 = document.querySelector('main h1');
    document.title = `${h1?.textContent ?? 'Console'} · Model gateway console`;
  }, [path, session?.kind, viewTenant]);

  const pathname = path.split('?')[0];
  const seg = segmentsOf(pathname);

  if (session === undefined) return html`<main id="main"><p class="muted" role="status">Loading…</p></main>`;

  if (session === null) {
    const operator = seg[0] === 'operator';
    const signedIn = (s) => {
      setEnded('');
      setSession(s);
      if (s.kind === 'operator' && !operator) go('/console/operator', true);
    };
    return html`<div class="signin-page">
      <main id="main">
        ${operator ? html`<${OperatorSignIn} onSignedIn=${signedIn} notice=${ended} />` : html`<${SignIn} onSignedIn=${signedIn} notice=${ended} />`}
      </main>
    </div>`;
  }

  const signOut = async () => {
    setSignOutError(null);
    try {
      await api('DELETE', session.kind === 'operator' ? '/console/v1/admin-session' : '/console/v1/session', undefined, { quiet401: true });
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 401) {
        setSignOutError(err);
        return;
      }
    }
    sessionStorage.removeItem(VIEW_KEY);
    setView(null);
    setSession(null);
    setEnded('You are signed out.');
    go(session.kind === 'operator' ? '/console/operator' : '/console', true);
  };

  const openTenant = (id) => {
    // Only the tenant id (no secret) is remembered, so a reload stays in the same view.
    if (id) sessionStorage.setItem(VIEW_KEY, id);
    else sessionStorage.removeItem(VIEW_KEY);
    setView(id);
    setViewTenant(id);
    go(id ? '/console' : '/console/operator');
  };

  let nav;
  let page;
  let who;
  const operatorRoute = seg[0] === 'operator';
  if (session.kind === 'operator' && (!viewTenant || operatorRoute)) {
    nav = [['operator', 'Tenants']];
    page = seg[1] === 'tenants' && seg[2]
      ? html`<${OperatorTenant} id=${seg[2]} onOpen=${openTenant} />`
      : html`<${OperatorTenants} onOpen=${openTenant} />`;
    who = html`<span>Operator</span>`;
  } else if (session.kind === 'operator') {
    nav = [...TENANT_NAV, ['operator', 'Tenants']];
    page = tenantPage(seg, { tenant_id: viewTenant, scopes: ['*'], mode: 'live', operator: true });
    who = html`<span>Operator, viewing tenant <code>${viewTenant}</code></span>`;
  } else {
    nav = TENANT_NAV;
    page = operatorRoute ? html`<${NotFound} />` : tenantPage(seg, session.info);
    who = html`<span>Tenant <code>${session.info.tenant_id}</code> · ${session.info.mode} key</span>`;
  }
  const current = seg[0] === 'events' ? 'deliveries' : seg[0] ?? '';

  return html`<a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <div class="brand"><a href=${session.kind === 'operator' && !viewTenant ? '/console/operator' : '/console'}>Model gateway</a></div>
      <nav aria-label="Console">
        <ul>
          ${nav.map(([to, label]) => html`<li><a href=${to ? `/console/${to}` : '/console'} aria-current=${current === to ? 'page' : undefined}>${label}</a></li>`)}
        </ul>
      </nav>
      <div class="who">
        ${who}
        <button type="button" class="secondary" onClick=${signOut}>Sign out</button>
      </div>
    </header>
    ${session.kind === 'operator' && viewTenant && !operatorRoute
      ? html`<div class="banner" role="note">You are viewing tenant <code>${viewTenant}</code> as the operator.
          <button type="button" class="link" onClick=${() => openTenant(null)}>Back to tenants</button></div>`
      : null}
    <${Problem} error=${signOutError} label="Sign-out failed" />
    <main id="main">${page}</main>`;
}

const root = document.getElementById('app');
root.textContent = ''; // the "Loading" line of index.html, shown until this module runs
render(html`<${App} />`, root);
