// The console's only way to the gateway: same-origin fetches that carry the session cookie
// (HttpOnly, SameSite=Strict: the page never sees it). No API key is ever kept by the page;
// sign-in hands it to the server once and forgets it.

/** An RFC 9457 problem answered by the gateway (or a network failure, status 0). */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {{title?: string, detail?: string, error_code?: number, errors?: {pointer: string, detail: string}[]}} problem
   */
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

/** The tenant an operator is looking at (sent as X-Console-Tenant on /v1 calls), or null. */
let viewTenant = null;
/** @param {string | null} id */
export function setViewTenant(id) {
  viewTenant = id;
}
export function getViewTenant() {
  return viewTenant;
}

/** @type {Set<(path: string) => void>} */
const unauthorizedListeners = new Set();
/** Called when a call made with a session is refused with 401 (the session ended or was revoked). */
export function onUnauthorized(fn) {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

function headersFor(path, hasBody) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (hasBody) headers['content-type'] = 'application/json';
  if (viewTenant && path.startsWith('/v1/')) headers['x-console-tenant'] = viewTenant;
  return headers;
}

/**
 * @param {string} method
 * @param {string} path  same-origin path, with its query
 * @param {unknown} [body]
 * @param {{quiet401?: boolean}} [opts]  quiet401: a 401 is an answer here (session probes, sign-in)
 */
export async function api(method, path, body, opts = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: headersFor(path, body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
      redirect: 'error',
    });
  } catch (err) {
    throw new ApiError(0, { title: 'Network error', detail: `The gateway could not be reached (${String(err)}).` });
  }
  const text = await res.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    if (res.status === 401 && !opts.quiet401) for (const fn of unauthorizedListeners) fn(path);
    throw new ApiError(res.status, parsed && typeof parsed === 'object' ? parsed : { title: `HTTP ${res.status}`, detail: text.slice(0, 300) });
  }
  return parsed;
}

/** A query string from the set values of `params` ('' when none). */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Fetches a file (CSV) with the console's headers and hands it to the browser as a download. */
export async function download(path, filename) {
  const res = await fetch(path, { headers: headersFor(path, false), credentials: 'same-origin', cache: 'no-store' });
  if (!res.ok) {
    let problem;
    try {
      problem = await res.json();
    } catch {
      problem = { title: `HTTP ${res.status}` };
    }
    throw new ApiError(res.status, problem);
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
