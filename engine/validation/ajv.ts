// One Ajv (JSON Schema 2020-12) instance per gateway, loaded with every schema in schemas/ so
// that descriptors can `$ref: /schemas/<file>#/$defs/...`. Schemas compile once, at start-up.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { YamlSource, Problem } from '../config/yaml-source.ts';

export const SCHEMA_BASE = 'https://model-gateway.dev';
export const SCHEMAS_DIR = new URL('../../schemas/', import.meta.url).pathname;

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export interface AjvOptions {
  /** Fill in `default`s (request validation does; descriptor validation does not). */
  useDefaults?: boolean;
  coerceTypes?: boolean;
}

export function createAjv(opts: AjvOptions = {}): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    verbose: true,
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
    useDefaults: opts.useDefaults ?? false,
    coerceTypes: opts.coerceTypes ?? false,
  });
  addFormats(ajv);
  // Annotations descriptors may put on any schema node: the service code a failure there
  // yields (number, or {keyword: code}), and why it differs from the engine's policy
  // (engine/validation/error-policy.ts).
  ajv.addKeyword({ keyword: 'x-error-code', schemaType: ['number', 'object'] });
  ajv.addKeyword({ keyword: 'x-error-reason', schemaType: 'string' });
  // The detail a failure at this node reports instead of Ajv's message ("must be 2 to 30, or -1"):
  // a string (every value keyword of the node) or {keyword: detail}.
  ajv.addKeyword({ keyword: 'x-error-detail', schemaType: ['string', 'object'] });
  ajv.addKeyword({ keyword: 'x-examples', schemaType: 'array' });
  for (const file of readdirSync(SCHEMAS_DIR).filter((f) => f.endsWith('.json')).sort()) {
    const schema = JSON.parse(readFileSync(join(SCHEMAS_DIR, file), 'utf8')) as { $id?: string };
    ajv.addSchema(schema, schema.$id ?? `${SCHEMA_BASE}/schemas/${file}`);
  }
  return ajv;
}

/** Ajv errors as positioned problems, with messages a person reads without knowing Ajv. */
export function ajvProblems(source: YamlSource, errors: readonly ErrorObject[] | null | undefined): Problem[] {
  const out: Problem[] = [];
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    let pointer = e.instancePath;
    let message = `${e.message ?? 'is invalid'}`;
    if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties') {
      const prop = (e.params as { additionalProperty?: string; unevaluatedProperty?: string });
      const name = prop.additionalProperty ?? prop.unevaluatedProperty ?? '?';
      pointer = `${pointer}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      message = `unknown field "${name}"`;
    } else if (e.keyword === 'required') {
      message = `missing required field "${(e.params as { missingProperty: string }).missingProperty}"`;
    } else if (e.keyword === 'enum') {
      message = `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
    } else if (e.keyword === 'if' || e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      continue; // the errors of the branches say what is wrong
    }
    const key = `${pointer}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(source.problem(pointer, message));
  }
  return out;
}
