// Compares two versions of a request JSON Schema from the client's side: the gateway validates
// what clients send, so anything that refuses a request the old schema accepted is BREAKING
// (a new required field, a narrowed enum or range, a removed field, a type change, a new
// pattern), and anything that only accepts more is COMPATIBLE. Where a change cannot be proven
// compatible (a rewritten `not`, `if`, ...), it is called breaking, and says so.
import { isDeepStrictEqual } from 'node:util';
import { isObject, type JsonObject } from '../validation/json-schema.ts';

export type SchemaChangeClass = 'breaking' | 'compatible' | 'docs';

export interface SchemaChange {
  class: SchemaChangeClass;
  /** The field, as a client reads it: `prompt`, `input.size`, `reference_images[]`, or `(body)`. */
  field: string;
  message: string;
}

const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties', 'minContains'];
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties', 'maxContains'];
const CONSTRAINTS = ['pattern', 'format', 'multipleOf', 'contentEncoding', 'contentMediaType'];
const DOCS = ['description', 'title', 'examples', 'x-examples', '$comment', 'x-error-reason', 'deprecated', 'readOnly', 'writeOnly', '$id', '$schema', '$anchor'];
const HANDLED = new Set([
  'type', 'enum', 'const', 'required', 'properties', 'additionalProperties', 'items', 'prefixItems', 'anyOf', 'oneOf', 'allOf',
  'default', 'uniqueItems', 'x-error-code', ...LOWER_BOUNDS, ...UPPER_BOUNDS, ...CONSTRAINTS, ...DOCS,
]);

export function diffSchemas(before: unknown, after: unknown, field = ''): SchemaChange[] {
  const out: SchemaChange[] = [];
  compare(before, after, field, out);
  return out;
}

const show = (v: unknown) => JSON.stringify(v);
const name = (field: string) => (field === '' ? '(body)' : field);
const child = (field: string, prop: string) => (field === '' ? prop : `${field}.${prop}`);

type Add = (cls: SchemaChangeClass, message: string, f?: string) => void;

function compare(a: unknown, b: unknown, field: string, out: SchemaChange[]): void {
  if (isDeepStrictEqual(a, b)) return;
  const add = (cls: SchemaChangeClass, message: string, f = field): void => {
    out.push({ class: cls, field: name(f), message });
  };
  // Boolean schemas (and an absent schema, which accepts anything).
  const A = a === undefined || a === true ? {} : a;
  const B = b === undefined || b === true ? {} : b;
  if (A === false || B === false) {
    if (A === false && B !== false) add('compatible', 'is accepted now (it was always refused)');
    else if (B === false) add('breaking', 'is refused now');
    return;
  }
  if (!isObject(A) || !isObject(B)) {
    add('breaking', 'schema changed (cannot prove compatible)');
    return;
  }
  compareValues(A, B, add);
  compareObjects(A, B, field, out, add);
  compareItems(A, B, field, out, add);
  compareOthers(A, B, add);
}

/** What a value may be: its type, enum or const, ranges and other constraints, its default, its error code. */
function compareValues(A: JsonObject, B: JsonObject, add: Add): void {
  // type
  const ta = types(A);
  const tb = types(B);
  if (!sameSet(ta, tb)) {
    const lost = [...(ta ?? ALL)].filter((t) => !accepts(tb, t));
    const gained = [...(tb ?? ALL)].filter((t) => !accepts(ta, t));
    if (lost.length) add('breaking', `type changed from ${fmtTypes(ta)} to ${fmtTypes(tb)}: ${lost.join(', ')} no longer accepted`);
    else if (gained.length) add('compatible', `type widened from ${fmtTypes(ta)} to ${fmtTypes(tb)}`);
  }

  // enum / const
  const ea = values(A);
  const eb = values(B);
  if (!isDeepStrictEqual(ea, eb)) {
    if (ea === undefined && eb !== undefined) add('breaking', `now restricted to ${eb.map(show).join(', ')}`);
    else if (ea !== undefined && eb === undefined) add('compatible', `no longer restricted to ${ea.map(show).join(', ')}`);
    else if (ea && eb) {
      const removed = ea.filter((v) => !eb.some((w) => isDeepStrictEqual(v, w)));
      const added = eb.filter((v) => !ea.some((w) => isDeepStrictEqual(v, w)));
      if (removed.length) add('breaking', `enum narrowed: ${removed.map(show).join(', ')} no longer accepted`);
      if (added.length) add('compatible', `enum widened: ${added.map(show).join(', ')} now accepted`);
    }
  }

  // ranges
  for (const k of LOWER_BOUNDS) bound(k, A[k], B[k], 'lower', add);
  for (const k of UPPER_BOUNDS) bound(k, A[k], B[k], 'upper', add);
  for (const k of CONSTRAINTS) {
    if (isDeepStrictEqual(A[k], B[k])) continue;
    if (A[k] === undefined) add('breaking', `${k} ${show(B[k])} added`);
    else if (B[k] === undefined) add('compatible', `${k} ${show(A[k])} removed`);
    else add('breaking', `${k} changed from ${show(A[k])} to ${show(B[k])}`);
  }
  if (!A.uniqueItems && B.uniqueItems) add('breaking', 'items must now be unique');
  else if (A.uniqueItems && !B.uniqueItems) add('compatible', 'items no longer need to be unique');

  // defaults: a client that omits the field gets something else.
  if (!isDeepStrictEqual(A.default, B.default)) {
    if (A.default === undefined) add('compatible', `default ${show(B.default)} added`);
    else add('breaking', `default changed from ${show(A.default)} to ${B.default === undefined ? '(none)' : show(B.default)}: clients that omit it get another behaviour`);
  }
  if (!isDeepStrictEqual(A['x-error-code'], B['x-error-code'])) {
    add('breaking', `error code on failure changed from ${show(A['x-error-code'] ?? 'the default policy')} to ${show(B['x-error-code'] ?? 'the default policy')}`);
  }

}

/** Objects: required fields, properties (compared in turn), unknown fields. */
function compareObjects(A: JsonObject, B: JsonObject, field: string, out: SchemaChange[], add: Add): void {
  // objects
  const ra = new Set(stringArray(A.required));
  const rb = new Set(stringArray(B.required));
  const pa = (isObject(A.properties) ? A.properties : {}) as JsonObject;
  const pb = (isObject(B.properties) ? B.properties : {}) as JsonObject;
  for (const r of rb) if (!ra.has(r)) add('breaking', pa[r] === undefined && pb[r] !== undefined ? 'new required field' : 'is required now', child(field, r));
  for (const r of ra) if (!rb.has(r)) add('compatible', 'is optional now', child(field, r));
  const closedB = B.additionalProperties === false || B.unevaluatedProperties === false;
  for (const p of Object.keys(pa)) {
    if (p in pb) compare(pa[p], pb[p], child(field, p), out);
    else add('breaking', closedB ? 'field removed: requests that send it are now refused' : 'field removed: the gateway no longer reads it', child(field, p));
  }
  for (const p of Object.keys(pb)) if (!(p in pa) && !rb.has(p)) add('compatible', 'new optional field', child(field, p));
  const apa = A.additionalProperties;
  const apb = B.additionalProperties;
  if (!isDeepStrictEqual(apa, apb)) {
    if (apb === false) add('breaking', 'unknown fields are now refused');
    else if (apa === false) add('compatible', 'unknown fields are now accepted');
    else compare(apa, apb, child(field, '*'), out);
  }

}

/** Arrays' items and the combinators (anyOf, oneOf, allOf). */
function compareItems(A: JsonObject, B: JsonObject, field: string, out: SchemaChange[], add: Add): void {
  // arrays
  if (!isDeepStrictEqual(A.items, B.items)) compare(A.items, B.items, `${field}[]`, out);
  if (!isDeepStrictEqual(A.prefixItems, B.prefixItems)) {
    const xa = Array.isArray(A.prefixItems) ? A.prefixItems : [];
    const xb = Array.isArray(B.prefixItems) ? B.prefixItems : [];
    for (let i = 0; i < Math.max(xa.length, xb.length); i++) compare(xa[i], xb[i], `${field}[${i}]`, out);
  }

  // combinators
  for (const k of ['anyOf', 'oneOf'] as const) union(k, A[k], B[k], field, out);
  if (!isDeepStrictEqual(A.allOf, B.allOf)) {
    const xa = Array.isArray(A.allOf) ? A.allOf : [];
    const xb = Array.isArray(B.allOf) ? B.allOf : [];
    if (xa.length === xb.length) xa.forEach((s, i) => compare(s, xb[i], field, out));
    else if (xb.length > xa.length && xa.every((s) => xb.some((t) => isDeepStrictEqual(s, t)))) add('breaking', `${xb.length - xa.length} allOf constraint(s) added`);
    else if (xa.length > xb.length && xb.every((s) => xa.some((t) => isDeepStrictEqual(s, t)))) add('compatible', `${xa.length - xb.length} allOf constraint(s) removed`);
    else add('breaking', 'allOf changed (cannot prove compatible)');
  }

}

/** Everything else: added constraints break, removed ones relax, rewritten ones cannot be proven; docs keywords are docs. */
function compareOthers(A: JsonObject, B: JsonObject, add: Add): void {
  // everything else: added constraints break, removed ones relax, rewritten ones cannot be proven.
  for (const k of new Set([...Object.keys(A), ...Object.keys(B)])) {
    if (HANDLED.has(k) || isDeepStrictEqual(A[k], B[k])) continue;
    if (DOCS.includes(k)) continue;
    if (k.startsWith('x-')) add('docs', `${k} changed`);
    else if (A[k] === undefined) add('breaking', `${k} added (cannot prove compatible)`);
    else if (B[k] === undefined) add('compatible', `${k} removed`);
    else add('breaking', `${k} changed (cannot prove compatible)`);
  }
  for (const k of DOCS) {
    if (k === '$id' || k === '$schema' || isDeepStrictEqual(A[k], B[k])) continue;
    if (k === 'deprecated' && B[k] === true) add('docs', 'deprecated now');
    else add('docs', `${k} changed`);
  }
}

function union(k: string, a: unknown, b: unknown, field: string, out: SchemaChange[]): void {
  if (isDeepStrictEqual(a, b)) return;
  const xa = Array.isArray(a) ? a : undefined;
  const xb = Array.isArray(b) ? b : undefined;
  const add = (cls: SchemaChangeClass, message: string): void => {
    out.push({ class: cls, field: name(field), message });
  };
  if (!xa) return add('breaking', `${k} added: only ${xb!.length} shape(s) accepted now`);
  if (!xb) return add('compatible', `${k} removed`);
  if (xa.length === xb.length) {
    xa.forEach((s, i) => compare(s, xb[i], field, out));
    return;
  }
  const removed = xa.filter((s) => !xb.some((t) => isDeepStrictEqual(s, t)));
  const added = xb.filter((s) => !xa.some((t) => isDeepStrictEqual(s, t)));
  if (removed.length) add('breaking', `${k}: ${removed.length} accepted shape(s) removed (${removed.map(describeShape).join('; ')})`);
  if (added.length) add('compatible', `${k}: ${added.length} shape(s) now also accepted (${added.map(describeShape).join('; ')})`);
}

function describeShape(s: unknown): string {
  if (!isObject(s)) return show(s);
  if (s.type !== undefined) return `type ${show(s.type)}`;
  if (Array.isArray(s.required)) return `with ${s.required.join(', ')}`;
  const t = show(s);
  return t.length > 60 ? `${t.slice(0, 57)}...` : t;
}

function bound(k: string, a: unknown, b: unknown, side: 'lower' | 'upper', add: (c: SchemaChangeClass, m: string) => void): void {
  if (a === b) return;
  const na = typeof a === 'number' ? a : undefined;
  const nb = typeof b === 'number' ? b : undefined;
  if (na === undefined && nb !== undefined) return add('breaking', `${k} ${nb} added`);
  if (na !== undefined && nb === undefined) return add('compatible', `${k} ${na} removed`);
  if (na === undefined || nb === undefined) return;
  const narrower = side === 'lower' ? nb > na : nb < na;
  add(narrower ? 'breaking' : 'compatible', `${k} ${side === 'lower' ? (narrower ? 'raised' : 'lowered') : narrower ? 'lowered' : 'raised'} from ${na} to ${nb}`);
}

const ALL = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

function types(s: JsonObject): Set<string> | undefined {
  if (typeof s.type === 'string') return new Set([s.type]);
  if (Array.isArray(s.type)) return new Set(s.type.map(String));
  return undefined;
}

function accepts(set: Set<string> | undefined, t: string): boolean {
  if (!set) return true;
  return set.has(t) || (t === 'integer' && set.has('number'));
}

function sameSet(a: Set<string> | undefined, b: Set<string> | undefined): boolean {
  if (!a || !b) return a === b;
  return a.size === b.size && [...a].every((x) => b.has(x));
}

function fmtTypes(s: Set<string> | undefined): string {
  return s ? [...s].join(' | ') : 'any';
}

function values(s: JsonObject): unknown[] | undefined {
  if (Array.isArray(s.enum)) return s.enum;
  if ('const' in s) return [s.const];
  return undefined;
}

function stringArray(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
