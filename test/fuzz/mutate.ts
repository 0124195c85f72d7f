// Turns a route template into one mutated request, deterministically from an Rng: valid requests,
// then mutated methods, paths (percent-encoding, dot segments, overlong), headers (content type,
// coding, auth, trace), bodies (from the route's valid samples: field deletions, type swaps, huge
// numbers, deep nesting, invalid UTF-8, truncation), and malformed framing, which only a raw
// socket can send (length mismatches, bad chunked encoding, bare LFs, control bytes, oversize
// request lines, pipelining).
import type { Rng } from './prng.ts';
import { ADMIN_TOKEN, type Fixtures, type Template } from './targets.ts';

export interface FuzzRequest {
  kind: 'valid' | 'method' | 'path' | 'headers' | 'body' | 'framing';
  /** What was done, for the report. */
  what: string;
  template: Template;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Set for framing mutations: the exact bytes to send on a fresh connection... */
  raw?: Buffer;
  /** ...and how the exchange ends: half-close at once, or wait for that many answers. */
  rawUntil?: 'end' | number;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'FOO', 'post', 'get', 'M-SEARCH', 'PURGE'];

export function mutate(rng: Rng, t: Template, f: Fixtures): FuzzRequest {
  const base = validRequest(rng, t, f);
  const roll = rng.next();
  if (roll < 0.1) return base;
  if (roll < 0.18) return mutateMethod(rng, base);
  if (roll < 0.32) return mutatePath(rng, base);
  if (roll < 0.5) return mutateHeaders(rng, base, f);
  if (roll < 0.85) return mutateBody(rng, base);
  return frame(rng, base);
}

function authHeader(auth: Template['auth'], f: Fixtures): Record<string, string> {
  if (auth === 'tenant') return { authorization: `Bearer ${f.key}` };
  if (auth === 'admin') return { authorization: `Bearer ${ADMIN_TOKEN}` };
  return {};
}

function validRequest(rng: Rng, t: Template, f: Fixtures): FuzzRequest {
  const headers: Record<string, string> = { ...authHeader(t.auth, f) };
  let body: Buffer | undefined;
  if (t.bodies.length) {
    body = Buffer.from(JSON.stringify(rng.pick(t.bodies)));
    headers['content-type'] = 'application/json';
  }
  return { kind: 'valid', what: 'valid', template: t, method: t.method, path: t.path, headers, body };
}

function mutateMethod(rng: Rng, r: FuzzRequest): FuzzRequest {
  const method = rng.pick(METHODS);
  return { ...r, kind: 'method', what: `method ${method}`, method };
}

// --- paths -------------------------------------------------------------------------------------

const PATH_MUTATIONS: [string, (rng: Rng, path: string) => string][] = [
  ['percent-encode a character', (rng, p) => {
    const i = 1 + rng.int(p.length - 1);
    return p.slice(0, i) + '%' + p.charCodeAt(i).toString(16).toUpperCase().padStart(2, '0') + p.slice(i + 1);
  }],
  ['encoded slash', (_rng, p) => (p.lastIndexOf('/') > 0 ? p.replace(/\/(?=[^/]*$)/, '%2F') : `${p}%2Fx`)],
  ['double-encoded', (_rng, p) => p.replace(/\//g, (m, i) => (i > 0 ? '%252F' : m))],
  ['bad percent-encoding', (rng, p) => p + rng.pick(['%', '%z', '%zz', '%E0%80', '%C0%AF', '%00', '%FF%FE', '/%'])],
  ['dot segments', (rng, p) => {
    const parts = p.split('/');
    const i = 1 + rng.int(parts.length - 1);
    parts.splice(i, 0, rng.pick(['.', '..', '%2e', '%2e%2e', '...', '.%2e']));
    return parts.join('/');
  }],
  ['escape the root', (_rng, p) => `/../../..${p}`],
  ['double slashes', (_rng, p) => p.replace(/\//g, '//')],
  ['trailing slash', (_rng, p) => `${p}/`],
  ['upper case', (_rng, p) => p.toUpperCase()],
  ['overlong segment', (rng, p) => `${p}/${'a'.repeat(rng.pick([300, 3000, 9000]))}`],
  ['overlong id', (_rng, p) => p.replace(/[0-9a-f-]{36}/, 'f'.repeat(5000))],
  ['not a uuid', (rng, p) => p.replace(/[0-9a-f-]{36}/, rng.pick(['x', '0', 'null', '{}', '%00', '../admin', 'ÄÖ'.normalize()].map(encodeURIComponent)))],
  ['upper-case uuid', (_rng, p) => p.replace(/[0-9a-f-]{36}/, (m) => m.toUpperCase())],
  ['junk query', (rng, p) => `${p}${p.includes('?') ? '&' : '?'}${rng.pick(['limit=-1', 'limit=abc', 'limit=1e9', 'limit=', 'starting_after[]=x', 'cursor=%00', '__proto__[x]=1', 'a=' + 'b'.repeat(4000), 'limit=1&limit=2', '%zz=1'])}`],
  ['fragment', (_rng, p) => `${p}#frag`],
  ['semicolon parameters', (_rng, p) => `${p};jsessionid=1`],
  ['backslashes', (_rng, p) => p.replace(/\//g, (m, i) => (i > 0 ? '%5C' : m))],
  ['unicode', (_rng, p) => `${p}/${encodeURIComponent('☃\u{1F600}')}`],
];

function mutatePath(rng: Rng, r: FuzzRequest): FuzzRequest {
  const [what, fn] = rng.pick(PATH_MUTATIONS);
  return { ...r, kind: 'path', what: `path: ${what}`, path: fn(rng, r.path) };
}

// --- headers -----------------------------------------------------------------------------------

const CONTENT_TYPES = ['text/plain', 'application/json; charset=utf-16', 'application/json; charset=latin1', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', 'application/vnd.api+json', 'APPLICATION/JSON', 'application/json;;;', '', 'application/jsonx', 'json', '*/*',
  'application/json; charset="utf-8"', 'application/problem+json'];

const HEADER_MUTATIONS: [string, (rng: Rng, r: FuzzRequest, f: Fixtures) => Record<string, string | undefined>][] = [
  ['no content-type', () => ({ 'content-type': undefined })],
  ['content-type', (rng) => ({ 'content-type': rng.pick(CONTENT_TYPES) })],
  ['content-encoding', (rng) => ({ 'content-encoding': rng.pick(['gzip', 'br', 'deflate', 'identity', 'x-unknown', 'gzip, identity']) })],
  ['no auth', () => ({ authorization: undefined })],
  ['auth', (rng, _r, f) => ({
    authorization: rng.pick(['Bearer', 'Bearer ', 'Bearer x', `Bearer ${'k'.repeat(6000)}`, 'Basic dXNlcjpwYXNz', `bearer ${f.key}`, `Bearer  ${f.key}`,
      `Bearer ${f.key}x`, `Bearer ${f.otherKey}`, `Bearer ${ADMIN_TOKEN}`, `Token ${f.key}`, `Bearer ${f.key.toUpperCase()}`, `Bearer ${f.key.slice(0, -1)}`]),
  })],
  ['traceparent', (rng) => ({ traceparent: rng.pick(['garbage', '00-0-0-00', `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`, 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01-extra`, 'x'.repeat(5000)]) })],
  ['idempotency-key', (rng) => ({ 'idempotency-key': rng.pick(['', ' ', 'k'.repeat(5000), 'same-key', '\t', 'a,b']) })],
  ['accept', (rng) => ({ accept: rng.pick(['text/event-stream', 'application/xml', '*/*', '', 'text/html;q=0']) })],
  ['forwarded', (rng) => ({ 'x-forwarded-for': rng.pick(['1.2.3.4', 'garbage', '::1, 127.0.0.1', '999.999.999.999']), 'x-forwarded-proto': 'gopher' })],
  ['many headers', (rng) => Object.fromEntries(Array.from({ length: 50 + rng.int(100) }, (_, i) => [`x-fuzz-${i}`, 'v'.repeat(rng.int(50))]))],
  ['range and conditionals', () => ({ range: 'bytes=0-1', 'if-none-match': '*', 'if-modified-since': 'yesterday' })],
];

function mutateHeaders(rng: Rng, r: FuzzRequest, f: Fixtures): FuzzRequest {
  const [what, fn] = rng.pick(HEADER_MUTATIONS);
  const headers: Record<string, string> = { ...r.headers };
  for (const [k, v] of Object.entries(fn(rng, r, f))) {
    if (v === undefined) delete headers[k];
    else headers[k] = v;
  }
  // A header mutation also applies to a route without a body: give it one.
  const body = r.body ?? (rng.chance(0.3) ? Buffer.from('{}') : undefined);
  return { ...r, kind: 'headers', what: `headers: ${what}`, headers, body };
}

// --- bodies ------------------------------------------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every [container, key] in a JSON value, depth-first. */
function slots(value: Json, out: [Json[] | Record<string, Json>, string | number][] = []): [Json[] | Record<string, Json>, string | number][] {
  if (Array.isArray(value)) value.forEach((v, i) => (out.push([value, i]), slots(v, out)));
  else if (value && typeof value === 'object') for (const k of Object.keys(value)) out.push([value, k]), slots(value[k]!, out);
  return out;
}

const SWAPS: Json[] = [null, true, false, 0, -1, 1.5, 2 ** 53 + 1, -(2 ** 63), 1e308, '', 'x', ' ', 'x'.repeat(10_000), [], {}, [null], { '': 1 }, ['a', 1], '0', 'true', 'null', '1e999', '☃', '\u0000', '\ud800'];
// Raw literals JSON.stringify cannot produce: they go in through a placeholder.
const LITERALS = ['1e400', '-1e400', '123456789012345678901234567890', '0.0000000000000000000000001', '-0', '1E-400', '0e0', '9'.repeat(400)];

const BODY_MUTATIONS: [string, (rng: Rng, value: Json) => Buffer][] = [
  ['delete a field', (rng, v) => {
    const s = slots(v);
    if (s.length) {
      const [c, k] = rng.pick(s);
      if (Array.isArray(c)) c.splice(k as number, 1);
      else delete c[k as string];
    }
    return Buffer.from(JSON.stringify(v));
  }],
  ['delete every field', () => Buffer.from('{}')],
  ['swap a type', (rng, v) => {
    const s = slots(v);
    if (s.length) {
      const [c, k] = rng.pick(s);
      (c as Record<string, Json>)[k as string] = structuredClone(rng.pick(SWAPS));
    }
    return Buffer.from(JSON.stringify(v));
  }],
  ['huge or odd number literal', (rng, v) => {
    const s = slots(v);
    const literal = rng.pick(LITERALS);
    if (!s.length) return Buffer.from(`{"n":${literal}}`);
    const [c, k] = rng.pick(s);
    (c as Record<string, Json>)[k as string] = '\u0001LITERAL\u0001';
    return Buffer.from(JSON.stringify(v).replace('"\\u0001LITERAL\\u0001"', literal));
  }],
  ['unknown field', (rng, v) => {
    const text = JSON.stringify(v && typeof v === 'object' && !Array.isArray(v) ? v : {});
    const member = `${JSON.stringify(rng.pick(['__proto__', 'constructor', 'zz_unknown', '', 'model\u0000', 'prototype']))}:${JSON.stringify(rng.pick(SWAPS))}`;
    return Buffer.from(text === '{}' ? `{${member}}` : `{${member},${text.slice(1)}`);
  }],
  ['deep nesting', (rng, v) => {
    const depth = rng.pick([64, 127, 128, 129, 1000, 100_000]);
    const [open, close] = rng.chance(0.5) ? ['{"a":', '}'] : ['[', ']'];
    const deep = `${open.repeat(depth)}1${close.repeat(depth)}`;
    const s = slots(v);
    if (!s.length || rng.chance(0.3)) return Buffer.from(deep);
    const [c, k] = rng.pick(s);
    (c as Record<string, Json>)[k as string] = '\u0001DEEP\u0001';
    return Buffer.from(JSON.stringify(v).replace('"\\u0001DEEP\\u0001"', deep));
  }],
  ['invalid UTF-8', (rng, v) => {
    const text = Buffer.from(JSON.stringify(v));
    const quote = text.indexOf(0x22, rng.int(Math.max(1, text.length - 1)));
    const bad = Buffer.from(rng.pick([[0xff], [0xfe, 0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]]));
    const at = quote === -1 ? 1 : quote + 1;
    return Buffer.concat([text.subarray(0, at), bad, text.subarray(at)]);
  }],
  ['truncated', (rng, v) => {
    const text = Buffer.from(JSON.stringify(v));
    return text.subarray(0, rng.int(text.length));
  }],
  ['not an object', (rng) => Buffer.from(rng.pick(['', ' ', 'null', '[]', '"x"', '123', 'true', '{}{}', '{"a":1}x', '{,}', "{'a':1}", '{"a":1,}', '{"a":1 /* c */}', 'NaN', '\ufeff{}', '[1,2', '{"a"', '\u0000']))],
  ['duplicate keys', (_rng, v) => {
    const text = JSON.stringify(v);
    return Buffer.from(text.length > 2 ? `${text.slice(0, -1)},${text.slice(1)}` : text);
  }],
  ['large array', (rng, v) => {
    const s = slots(v);
    const big: Json = Array.from({ length: rng.pick([1000, 20_000]) }, (_, i) => (i % 2 ? 'x' : i));
    if (!s.length) return Buffer.from(JSON.stringify({ a: big }));
    const [c, k] = rng.pick(s);
    (c as Record<string, Json>)[k as string] = big;
    return Buffer.from(JSON.stringify(v));
  }],
  ['oversize body', (rng) => Buffer.from(JSON.stringify({ prompt: 'p'.repeat(rng.pick([70_000, 1_100_000, 3_000_000])) }))],
  ['random bytes', (rng) => Buffer.from(Array.from({ length: 1 + rng.int(300) }, () => rng.int(256)))],
  ['control characters in strings', (rng, v) => Buffer.from(JSON.stringify(v).replace(/"([^"]*)"/, (_m, s: string) => `"${s}\\u0000\\u001f\\ud83d\\u2028${rng.pick(['\\\\', '\\"', '\\/'])}"`))],
];

function mutateBody(rng: Rng, r: FuzzRequest): FuzzRequest {
  let [what, fn] = rng.pick(BODY_MUTATIONS);
  let body = fn(rng, r.template.bodies.length ? (structuredClone(rng.pick(r.template.bodies)) as Json) : {});
  // A third of the time, a second mutation on top of the first (when the first still parses and
  // is small: a 100,000-level body would overflow the fuzzer's own JSON.stringify).
  if (rng.chance(0.33) && body.length < 64 * 1024) {
    let parsed: Json | undefined;
    try {
      parsed = JSON.parse(body.toString('utf8')) as Json;
    } catch {
      parsed = undefined;
    }
    if (parsed !== undefined) {
      const [then, fn2] = rng.pick(BODY_MUTATIONS);
      what = `${what}, then ${then}`;
      body = fn2(rng, parsed);
    }
  }
  return { ...r, kind: 'body', what: `body: ${what}`, headers: { 'content-type': 'application/json', ...r.headers }, body };
}

// --- framing (raw sockets) ---------------------------------------------------------------------

/** The request as bytes; `head` edits the header lines before they are joined. */
function serialise(r: FuzzRequest, opts: { eol?: string; version?: string; target?: string; lines?: (lines: string[]) => string[]; body?: Buffer } = {}): Buffer {
  const eol = opts.eol ?? '\r\n';
  const body = opts.body ?? r.body ?? Buffer.alloc(0);
  let lines = [`Host: 127.0.0.1`, ...Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`)];
  if (body.length && !opts.lines) lines.push(`Content-Length: ${body.length}`);
  if (opts.lines) lines = opts.lines(body.length ? [...lines, `Content-Length: ${body.length}`] : lines);
  return Buffer.concat([Buffer.from(`${r.method} ${opts.target ?? r.path} ${opts.version ?? 'HTTP/1.1'}${eol}${lines.join(eol)}${eol}${eol}`, 'latin1'), body]);
}

const chunked = (lines: string[]) => [...lines.filter((l) => !/^content-length:/i.test(l)), 'Transfer-Encoding: chunked'];
const withoutLength = (lines: string[]) => lines.filter((l) => !/^content-length:/i.test(l));

// How a framing's exchange ends: 'end' half-closes at once (the request is incomplete or refused
// by design: the end of the stream makes the server answer now); a number waits for that many
// answers (a well-framed request: Node drops a request still being answered on a half-close).
const FRAMINGS: [string, 'end' | number, (rng: Rng, r: FuzzRequest) => Buffer][] = [
  ['Content-Length larger than the body', 'end', (rng, r) => serialise(r, { lines: (l) => [...withoutLength(l), `Content-Length: ${(r.body?.length ?? 0) + 1 + rng.int(1000)}`] })],
  ['Content-Length smaller than the body', 'end', (rng, r) => {
    const body = r.body ?? Buffer.from('{"x":1}');
    return serialise(r, { body, lines: (l) => [...withoutLength(l), `Content-Length: ${rng.int(body.length)}`] });
  }],
  ['malformed Content-Length', 'end', (rng, r) => serialise(r, { lines: (l) => [...withoutLength(l), `Content-Length: ${rng.pick(['-1', 'abc', '1e3', '+5', ' 5 5', '0x10', '99999999999999999999', ''])}`] })],
  ['two Content-Lengths', 'end', (_rng, r) => serialise(r, { body: r.body ?? Buffer.from('{}'), lines: (l) => [...l, 'Content-Length: 1'] })],
  ['chunked', 1, (_rng, r) => {
    const body = r.body ?? Buffer.from('{}');
    return serialise(r, { lines: chunked, body: Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]) });
  }],
  ['bad chunk size', 'end', (rng, r) => serialise(r, { lines: chunked, body: Buffer.from(`${rng.pick(['zz', '-1', 'fffffffffffffffff', '', '1 1', '0x2'])}\r\n{}\r\n0\r\n\r\n`) })],
  ['chunk longer than its size', 'end', (_rng, r) => serialise(r, { lines: chunked, body: Buffer.from('1\r\n{}\r\n0\r\n\r\n') })],
  ['chunked without the last chunk', 'end', (_rng, r) => serialise(r, { lines: chunked, body: Buffer.from('2\r\n{}\r\n') })],
  ['chunked and Content-Length', 'end', (_rng, r) => serialise(r, { lines: (l) => [...chunked(l), 'Content-Length: 5'], body: Buffer.from('2\r\n{}\r\n0\r\n\r\n') })],
  ['odd Transfer-Encoding', 1, (rng, r) => serialise(r, { lines: (l) => [...withoutLength(l), `Transfer-Encoding: ${rng.pick(['gzip, chunked', 'chunked, gzip', 'chunked, chunked', 'identity', 'xchunked', 'Chunked', 'chunked;x=1'])}`], body: Buffer.from('2\r\n{}\r\n0\r\n\r\n') })],
  ['space before the colon', 'end', (_rng, r) => serialise(r, { lines: (l) => [...withoutLength(l), 'Transfer-Encoding : chunked', 'Content-Length : 2'] })],
  ['obsolete line folding', 1, (_rng, r) => serialise(r, { lines: (l) => [...l, 'X-Folded: a', ' b'] })],
  ['bare LF line ends', 1, (_rng, r) => serialise(r, { eol: '\n' })],
  ['control bytes in a header', 1, (rng, r) => serialise(r, { lines: (l) => [...l, `X-Bad: a${rng.pick(['\u0000', '\u0007', '\u007f', '\r', 'é'])}b`] })],
  ['a header name that is not a token', 1, (rng, r) => serialise(r, { lines: (l) => [...l, `${rng.pick(['X Bad', 'X@Bad', '(x)', ''])}: 1`] })],
  ['no Host', 1, (_rng, r) => serialise(r, { lines: (l) => l.filter((x) => !x.startsWith('Host:')) })],
  ['two Hosts', 1, (_rng, r) => serialise(r, { lines: (l) => [...l, 'Host: other.example'] })],
  ['HTTP version', 1, (rng, r) => serialise(r, { version: rng.pick(['HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'http/1.1', 'HTTP/1.10', 'HTTP/1', '']) })],
  ['request target', 1, (rng, r) => serialise(r, { target: rng.pick(['*', 'healthz', `http://127.0.0.1${r.path}`, `//${r.path}`, `${r.path} extra`, '/\u00e9\u00e8', `${r.path}\u0000`, '']) })],
  ['request line over the limit', 1, (_rng, r) => serialise(r, { target: `${r.path}?${'q'.repeat(20_000)}` })],
  ['headers over the limit', 1, (_rng, r) => serialise(r, { lines: (l) => [...l, `X-Big: ${'h'.repeat(20_000)}`] })],
  ['Expect', 1, (rng, r) => serialise(r, { lines: (l) => [...l, `Expect: ${rng.pick(['100-continue', 'teapot', '200-ok'])}`] })],
  ['CONNECT', 1, () => Buffer.from('CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n')],
  ['upgrade', 1, (rng, r) => serialise(r, { lines: (l) => [...l, 'Connection: Upgrade', `Upgrade: ${rng.pick(['websocket', 'h2c', 'foo'])}`] })],
  ['pipelined garbage', 'end', (rng, r) => Buffer.concat([serialise(r), Buffer.from(rng.pick(['GARBAGE\r\n\r\n', '\u0000\u0001\u0002', 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{', 'x'.repeat(100)]))])],
  ['pipelined twice', 2, (_rng, r) => Buffer.concat([serialise(r), serialise(r)])],
  ['random bytes', 'end', (rng) => Buffer.from(Array.from({ length: 1 + rng.int(400) }, () => rng.int(256)))],
];

function frame(rng: Rng, r: FuzzRequest): FuzzRequest {
  const [what, until, fn] = rng.pick(FRAMINGS);
  return { ...r, kind: 'framing', what: `framing: ${what}`, raw: fn(rng, r), rawUntil: until };
}
