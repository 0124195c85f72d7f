// What a completed task answers for each result field, read from the upstream's final answer.
// The spec types `images`, `videos` and `audios` as arrays of URL strings. Upstreams disagree on
// the shape (one image tool answers ["https://…"], another [{"url": "https://…"}], a third one
// URL alone), so the engine, not each descriptor, accepts a URL string or a `{url}` object per
// item and always answers strings: a descriptor names the list and a client gets the spec's
// shape whichever way that upstream spells it. Anything else is refused, naming the field, so a
// changed upstream fails its tasks with 3003 instead of handing clients a shape they cannot read.

/** Result fields the spec types as arrays of URL strings. */
export const URL_LIST_FIELDS: ReadonlySet<string> = new Set(['images', 'videos', 'audios']);

export type ResultValue = { ok: true; value: unknown[] } | { ok: false; reason: string };

/**
 * The answered value of result field `name` from what its mapping read. A single value becomes a
 * one-item list. On refusal, `reason` completes "the provider's answer …" and describes what was
 * found by type only: an upstream's body never reaches a client.
 */
export function resultFieldValue(name: string, read: unknown): ResultValue {
  const list = read === undefined || read === null ? [] : Array.isArray(read) ? read : [read];
  if (list.length === 0) return { ok: false, reason: `has no ${name}` };
  if (!URL_LIST_FIELDS.has(name)) return { ok: true, value: list };
  const urls: string[] = [];
  for (const [i, item] of list.entries()) {
    const url = isObject(item) && 'url' in item ? item.url : item;
    if (typeof url !== 'string') return { ok: false, reason: `has ${name}[${i}] as ${kindOf(item)}, not a URL string or {"url": "..."} object` };
    if (!isHttpUrl(url)) return { ok: false, reason: `has ${name}[${i}] as a string that is not an http(s) URL` };
    urls.push(url);
  }
  return { ok: true, value: urls };
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function isHttpUrl(s: string): boolean {
  const u = URL.parse(s);
  return u !== null && (u.protocol === 'https:' || u.protocol === 'http:');
}

function kindOf(x: unknown): string {
  if (x === null || x === undefined) return String(x);
  if (Array.isArray(x)) return 'an array';
  if (isObject(x)) return 'url' in x ? `an object whose url is ${kindOf(x.url)}` : 'an object without url';
  return `a ${typeof x}`;
}
