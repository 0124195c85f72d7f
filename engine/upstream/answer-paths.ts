// Upstream paths that carry what a provider answered: its task id, or a URL it named for the
// task (fal's status_url / response_url). A provider's answer is untrusted input, and a path
// built from it is sent with the vendor's credentials, so it must never steer a call elsewhere
// (SSRF): whatever it holds stays below the accepting member's base URL, on its host. Refused:
// a scheme, `..` or `.` segments (raw or percent-encoded), an empty segment (`//`), a
// backslash, control characters or spaces, a fragment, an encoded slash, and a URL on another
// scheme, host or port, with credentials, or outside the base URL's path.
//
// Placeholders of a path template (poll, result, cancel):
//   {upstream_task_id}        the id as one segment, percent-encoded
//   {upstream_task_id:path}   the id as a relative path, inserted unencoded (Gemini's operation
//                             name models/<model>/operations/<id>), checked as above
//   {url:<name>}              the path (and query) of the URL upstream.submit.urls.<name> read,
//                             kept with the task relative to the member's base URL

export class UnsafePathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafePathError';
  }
}

/** What a task's upstream paths are built from. */
export interface TaskPathRefs {
  upstreamTaskId: string;
  /** Paths (relative to the member's base URL) of the URLs the submit answer named. */
  urls?: Readonly<Record<string, string>>;
}

const PLACEHOLDER = /\{(upstream_task_id(?::path)?|url:[a-z][a-z0-9_]*)\}/g;

/** The placeholders of a template, as written inside the braces. */
export function placeholdersOf(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** A path template with its placeholders filled; throws UnsafePathError when what the provider answered cannot be used. */
export function buildTaskPath(template: string, refs: TaskPathRefs): string {
  const path = template.replace(PLACEHOLDER, (_, name: string) => {
    if (name.startsWith('upstream_task_id') && refs.upstreamTaskId === '') throw new UnsafePathError('the task id is empty');
    if (name === 'upstream_task_id') return encodeURIComponent(refs.upstreamTaskId);
    if (name === 'upstream_task_id:path') return relativePath(refs.upstreamTaskId, 'the task id');
    const url = refs.urls?.[name.slice(4)];
    if (url === undefined) throw new UnsafePathError(`the submit answer named no URL "${name.slice(4)}"`);
    return url;
  });
  // The whole path once more: an id of `..` is a dot segment even percent-encoded. An encoded
  // slash is what {upstream_task_id} makes of a `/` in the id: data within one segment there.
  checkSegments(path.split('?')[0]!, 'the path', true);
  return path;
}

/** A provider's task id used as a relative path (no leading slash, no query). */
function relativePath(id: string, what: string): string {
  checkCharacters(id, what);
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(id)) throw new UnsafePathError(`${what} starts with a scheme`);
  if (id.startsWith('/')) throw new UnsafePathError(`${what} is an absolute path, not a relative one`);
  if (id.includes('?')) throw new UnsafePathError(`${what} holds a query`);
  checkSegments(id, what);
  return id;
}

/**
 * The path (and query) of a URL the provider named, relative to `baseUrl` (the member's base
 * URL, which may have a path of its own): a URL elsewhere is refused.
 */
export function pathUnderBase(value: unknown, baseUrl: string, what = 'the URL'): string {
  if (typeof value !== 'string' || value === '') throw new UnsafePathError(`${what} is not a string`);
  checkCharacters(value, what);
  const url = URL.parse(value);
  const base = URL.parse(baseUrl);
  if (!url || !/^https?:$/.test(url.protocol)) throw new UnsafePathError(`${what} is not an absolute http(s) URL`);
  if (!base || url.protocol !== base.protocol || url.host !== base.host) throw new UnsafePathError(`${what} names another scheme, host or port than the provider's base URL`);
  if (url.username || url.password) throw new UnsafePathError(`${what} carries credentials`);
  // The URL parser resolves dot segments and keeps empty ones: judge the path as written.
  const written = value.slice(value.indexOf('//') + 2);
  const slash = written.search(/[/?]/);
  const rawPath = slash < 0 || written[slash] === '?' ? '/' : written.slice(slash).split('?')[0]!;
  checkSegments(rawPath, what);
  const basePath = base.pathname.replace(/\/+$/, '');
  if (!url.pathname.startsWith(`${basePath}/`)) throw new UnsafePathError(`${what} is not below the provider's base URL`);
  return url.pathname.slice(basePath.length) + url.search;
}

function checkCharacters(s: string, what: string): void {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f\\#]/.test(s)) throw new UnsafePathError(`${what} holds a control character, a space, a backslash or a fragment`);
}

/** Every segment of a path: no empty one (`//`), no `.` or `..`, raw or percent-encoded, no encoded slash. */
function checkSegments(path: string, what: string, encodedSlashes = false): void {
  const segments = path.split('/');
  for (const [i, seg] of segments.entries()) {
    // A leading slash makes the first segment empty, and a trailing one the last.
    if (seg === '' && (i === 0 || i === segments.length - 1)) continue;
    if (seg === '') throw new UnsafePathError(`${what} holds an empty segment (//)`);
    if (!encodedSlashes && /%2f|%5c/i.test(seg)) throw new UnsafePathError(`${what} holds an encoded slash`);
    let decoded = seg;
    try {
      decoded = decodeURIComponent(seg);
    } catch {
      throw new UnsafePathError(`${what} holds a malformed percent-encoding`);
    }
    if (decoded === '.' || decoded === '..') throw new UnsafePathError(`${what} holds a ${decoded} segment`);
  }
}

/** True when an expression reads the answer's HTTP status ($http_status): only then is a non-2xx poll answer read as an answer. */
export function readsHttpStatus(source: string): boolean {
  return /\$http_status\b/.test(source);
}
