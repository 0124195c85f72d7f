// Reading JSON Schemas the way the tools and the OpenAPI generator need to: resolve a `$ref`
// (local, or into the shared schemas/ registry), inline references for comparison, and answer
// "does this schema know a field at this path?" across properties, items and the branches of
// allOf/anyOf/oneOf/if.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMA_BASE, SCHEMAS_DIR } from './ajv.ts';

export type JsonObject = Record<string, unknown>;
/** URI (no fragment) → schema document. */
export type SchemaRegistry = ReadonlyMap<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Schemas of a schemas/ folder, keyed as engine/validation/ajv.ts registers them. */
export function registryFromDir(dir: string = SCHEMAS_DIR): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!existsSync(dir)) return out;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    out.set(...registryEntry(file, readFileSync(join(dir, file), 'utf8')));
  }
  return out;
}

export function registryEntry(file: string, text: string): [string, unknown] {
  const schema = JSON.parse(text) as { $id?: string };
  const fallback = `${SCHEMA_BASE}/schemas/${file}`;
  // A relative $id ("pricing.schema.json") is relative to where the file is registered.
  return [schema.$id ? new URL(schema.$id, fallback).href : fallback, schema];
}

/** The $id a route's request schema gets (relative `$ref: /schemas/...` resolve against it). */
export function requestSchemaBase(vendor: string, routeId: string): string {
  return `${SCHEMA_BASE}/request/${vendor}/${routeId}.json`;
}

export interface Resolved {
  schema: unknown;
  /** Base URI the resolved schema's own relative refs resolve against. */
  base: string;
  /** The document that holds it (for its local `#/...` refs). */
  root: unknown;
}

/** Resolve one `$ref` seen in `root` (whose URI is `base`); a string when it does not resolve. */
export function resolveRef(ref: string, base: string, root: unknown, registry: SchemaRegistry): Resolved | string {
  let url: URL;
  try {
    url = new URL(ref, base);
  } catch {
    return `"${ref}" is not a valid URI reference`;
  }
  const fragment = decodeURIComponent(url.hash.replace(/^#/, ''));
  url.hash = '';
  const docUri = url.href;
  const doc = docUri === stripHash(base) ? root : registry.get(docUri);
  if (doc === undefined) {
    const known = [...registry.keys()].map((k) => k.replace(`${SCHEMA_BASE}`, '')).join(', ');
    return `$ref "${ref}" names ${docUri}, which is not a schema the gateway has (known: ${known || 'none'})`;
  }
  if (fragment === '') return { schema: doc, base: docUri, root: doc };
  if (!fragment.startsWith('/')) {
    const anchored = findAnchor(doc, fragment);
    return anchored === undefined ? `$ref "${ref}": no $anchor "${fragment}" in ${docUri}` : { schema: anchored, base: docUri, root: doc };
  }
  let cur: unknown = doc;
  for (const seg of fragment.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (isObject(cur)) cur = cur[seg];
    else cur = undefined;
    if (cur === undefined) return `$ref "${ref}": ${docUri} has nothing at #${fragment}`;
  }
  return { schema: cur, base: docUri, root: doc };
}

function stripHash(u: string): string {
  const i = u.indexOf('#');
  return i === -1 ? u : u.slice(0, i);
}

function findAnchor(node: unknown, name: string): unknown {
  if (Array.isArray(node)) {
    for (const n of node) {
      const f = findAnchor(n, name);
      if (f !== undefined) return f;
    }
  } else if (isObject(node)) {
    if (node.$anchor === name) return node;
    for (const v of Object.values(node)) {
      const f = findAnchor(v, name);
      if (f !== undefined) return f;
    }
  }
  return undefined;
}

/** Keywords whose value maps names to schemas: their keys are names, never keywords. */
export const SCHEMA_MAPS: ReadonlySet<string> = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is data, not schemas. */
export const DATA_KEYWORDS: ReadonlySet<string> = new Set(['const', 'enum', 'default', 'examples', 'x-examples']);

const esc = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

/** Every `$ref` in a schema, with its JSON pointer (relative to the schema). */
export function refsIn(schema: unknown, pointer = ''): { pointer: string; ref: string }[] {
  const out: { pointer: string; ref: string }[] = [];
  const walk = (node: unknown, p: string) => {
    if (Array.isArray(node)) node.forEach((n, i) => walk(n, `${p}/${i}`));
    else if (isObject(node)) {
      for (const [k, v] of Object.entries(node)) {
        if (k === '$ref' && typeof v === 'string') out.push({ pointer: `${p}/$ref`, ref: v });
        else if (SCHEMA_MAPS.has(k) && isObject(v)) for (const [name, sub] of Object.entries(v)) walk(sub, `${p}/${k}/${esc(name)}`);
        else if (!DATA_KEYWORDS.has(k)) walk(v, `${p}/${esc(k)}`);
      }
    }
  };
  walk(schema, pointer);
  return out;
}

/**
 * The schema with every resolvable `$ref` inlined (merged with its sibling keywords), to
 * compare two versions structurally. Recursion is cut at `depth` levels of references.
 */
export function inlineRefs(schema: unknown, base: string, registry: SchemaRegistry, root: unknown = schema, depth = 0): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inlineRefs(s, base, registry, root, depth));
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(schema)) {
    if (DATA_KEYWORDS.has(k)) out[k] = v;
    else if (k === '$ref' && typeof v === 'string' && depth < 16) {
      const r = resolveRef(v, base, root, registry);
      if (typeof r === 'string') out[k] = v;
      else {
        const target = inlineRefs(r.schema, r.base, registry, r.root, depth + 1);
        if (isObject(target)) for (const [tk, tv] of Object.entries(target)) if (tk !== '$id' && tk !== '$schema' && tk !== '$defs' && !(tk in out)) out[tk] = tv;
      }
    } else if (k === '$defs' || k === 'definitions') continue;
    else if (SCHEMA_MAPS.has(k) && isObject(v)) out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, inlineRefs(sub, base, registry, root, depth)]));
    else out[k] = inlineRefs(v, base, registry, root, depth);
  }
  return out;
}

/** Branches whose properties also describe the object: allOf, anyOf, oneOf, then, else. */
function branches(s: JsonObject): JsonObject[] {
  const out: JsonObject[] = [];
  for (const k of ['allOf', 'anyOf', 'oneOf']) if (Array.isArray(s[k])) out.push(...(s[k] as unknown[]).filter(isObject));
  for (const k of ['then', 'else']) if (isObject(s[k])) out.push(s[k] as JsonObject);
  return out;
}

export interface FieldLookup {
  /** The field's schema when the path is declared. */
  schema?: unknown;
  /** Index of the first path segment the schema does not declare. */
  unknownAt?: number;
  /** Whether the object at the unknown segment accepts undeclared properties anyway. */
  open?: boolean;
}

/**
 * Walk `path` (field names; arrays are stepped through as JSONata does) through an inlined
 * schema. Stops, declaring the path known, where the schema no longer says what is there.
 */
export function lookupField(schema: unknown, path: readonly string[]): FieldLookup {
  let cur: unknown[] = [schema];
  for (let i = 0; i < path.length; i++) {
    const seg = path[i]!;
    const candidates = expand(cur);
    const withProps = candidates.filter((s) => isObject(s.properties) || isObject(s.patternProperties) || s.additionalProperties !== undefined || s.unevaluatedProperties !== undefined);
    if (withProps.length === 0) return { schema: undefined };
    const found: unknown[] = [];
    for (const s of withProps) {
      const props = (s.properties ?? {}) as JsonObject;
      if (Object.prototype.hasOwnProperty.call(props, seg)) found.push(props[seg]);
      for (const [pat, sub] of Object.entries((s.patternProperties ?? {}) as JsonObject)) if (safeRegex(pat)?.test(seg)) found.push(sub);
    }
    if (found.length === 0) {
      const open = withProps.every((s) => s.additionalProperties !== false && s.unevaluatedProperties !== false);
      if (open && withProps.some((s) => isObject(s.additionalProperties))) {
        found.push(...withProps.map((s) => s.additionalProperties).filter(isObject));
      } else return { unknownAt: i, open };
    }
    cur = found;
  }
  return { schema: cur[0] };
}

/** A schema and the branches describing the same value, stepping into `items` for arrays. */
function expand(schemas: readonly unknown[]): JsonObject[] {
  const out: JsonObject[] = [];
  const visit = (s: unknown, depth: number) => {
    if (!isObject(s) || depth > 8) return;
    out.push(s);
    for (const b of branches(s)) visit(b, depth + 1);
    if (isObject(s.items)) visit(s.items, depth + 1);
    if (Array.isArray(s.prefixItems)) for (const p of s.prefixItems) visit(p, depth + 1);
  };
  for (const s of schemas) visit(s, 0);
  return out;
}

function safeRegex(p: string): RegExp | undefined {
  try {
    return new RegExp(p, 'u');
  } catch {
    return undefined;
  }
}

/** Names of the top-level properties a schema declares (all branches). */
export function declaredProperties(schema: unknown): string[] {
  const names = new Set<string>();
  for (const s of expand([schema])) if (isObject(s.properties)) for (const k of Object.keys(s.properties)) names.add(k);
  return [...names];
}
