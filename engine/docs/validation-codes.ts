// The 400 codes a route's request can be refused with, read from its schema and rules under the
// engine's error policy, for the OpenAPI document's error lists.
import type { ErrorObject } from 'ajv';
import type { RouteSpec } from '../descriptors/types.ts';
import { codeForAjvError, ruleCode } from '../validation/error-policy.ts';
import { isObject, SCHEMA_MAPS } from '../validation/json-schema.ts';

/**
 * The 400 codes a request schema can produce under the engine's error policy
 * (engine/validation/error-policy.ts), plus its rules' codes. 2001 is always possible (malformed JSON).
 */
const SCHEMA_ONE = new Set(['items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'additionalProperties', 'unevaluatedProperties']);
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const ASSERTIONS = new Set([
  'type', 'enum', 'const', 'required', 'dependentRequired', 'additionalProperties', 'unevaluatedProperties', 'minimum', 'maximum',
  'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties',
  'pattern', 'format', 'multipleOf', 'uniqueItems', 'not', 'anyOf', 'oneOf', 'contains', 'propertyNames',
]);

export function validationCodesOf(r: RouteSpec, schema: unknown, resolve: (ref: string) => unknown): number[] {
  const codes = new Set<number>([2001]);
  const seen = new Set<unknown>();
  const walk = (node: unknown, depth: number) => {
    if (!isObject(node) || seen.has(node) || depth > 32) return;
    seen.add(node);
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') walk(resolve(v), depth + 1);
      else if (SCHEMA_MAPS.has(k) && isObject(v)) for (const s of Object.values(v)) walk(s, depth + 1);
      else if (SCHEMA_ONE.has(k)) walk(v, depth + 1);
      else if (SCHEMA_LISTS.has(k) && Array.isArray(v)) for (const s of v) walk(s, depth + 1);
      const closed = (k !== 'additionalProperties' && k !== 'unevaluatedProperties') || v === false;
      if (ASSERTIONS.has(k) && closed) codes.add(codeForAjvError({ keyword: k, parentSchema: node } as unknown as ErrorObject));
    }
  };
  walk(schema, 0);
  for (const rule of r.request?.rules ?? []) {
    const code = ruleCode(rule);
    if (code !== undefined) codes.add(code);
  }
  for (const m of r.request?.media ?? []) for (const c of m.kind === 'image' ? [2101, 2102, 2103] : [2102]) codes.add(c);
  return [...codes].sort((a, b) => a - b);
}
