// The one error-code policy for request validation, applied to every route: which JSON Schema
// failure yields which service code. A descriptor may override it on any schema node with
// `x-error-code` (a number, or {keyword: code}) and says why in `x-error-reason`.
//
//   2002  a required field is missing (required, dependentRequired)
//   2001  wrong type or shape: type, enum, const, pattern, format, anyOf/oneOf, malformed JSON
//   2004  a field this route does not support (additionalProperties), or fields that exclude
//         each other (not)
//   2003  well-formed but out of range: minimum/maximum, lengths, item counts, multipleOf
//
// When one request breaks several rules, the answer's error_code is the first in the order
// 2002, 2001, 2004, 2003, 2101, 2102, 2103; every broken rule is listed in `errors`.
import type { ErrorObject } from 'ajv';

const KEYWORD_CODES: Record<string, number> = {
  required: 2002,
  dependentRequired: 2002,
  type: 2001,
  enum: 2001,
  const: 2001,
  pattern: 2001,
  format: 2001,
  anyOf: 2001,
  oneOf: 2001,
  propertyNames: 2001,
  additionalProperties: 2004,
  unevaluatedProperties: 2004,
  not: 2004,
  minimum: 2003,
  maximum: 2003,
  exclusiveMinimum: 2003,
  exclusiveMaximum: 2003,
  minLength: 2003,
  maxLength: 2003,
  minItems: 2003,
  maxItems: 2003,
  minProperties: 2003,
  maxProperties: 2003,
  multipleOf: 2003,
  uniqueItems: 2003,
  contains: 2003,
};

export const CODE_PRIORITY = [2002, 2001, 2004, 2003, 2101, 2102, 2103, 2100, 2000];

export function codeForAjvError(e: ErrorObject): number {
  const override = (e.parentSchema as Record<string, unknown> | undefined)?.['x-error-code'];
  if (typeof override === 'number') return override;
  if (override && typeof override === 'object') {
    const byKeyword = (override as Record<string, unknown>)[e.keyword];
    if (typeof byKeyword === 'number') return byKeyword;
  }
  return KEYWORD_CODES[e.keyword] ?? 2001;
}

export function primaryCode(codes: readonly number[]): number {
  let best = codes[0] ?? 2000;
  for (const c of codes) {
    const rank = CODE_PRIORITY.indexOf(c);
    const bestRank = CODE_PRIORITY.indexOf(best);
    if (rank !== -1 && (bestRank === -1 || rank < bestRank)) best = c;
  }
  return best;
}
