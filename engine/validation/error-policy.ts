// The one error-code policy for request validation, applied to every route. Every way a request
// can be refused is first named as a VIOLATION; the violation alone decides the service code:
//
//   required               2002  a required field is missing, including fields required only in
//                                some combinations (descriptor rules: "prompt is required when...")
//   malformed              2001  wrong type, shape or syntax: type, const, pattern, format,
//                                anyOf/oneOf, a string outside a plain enum, a value of a type no
//                                enum entry has (1 where strings are listed), a malformed `size`
//                                or `resolution` string, a malformed URL or data URI, malformed JSON
//   unsupported_parameter  2004  a field this route does not support (additionalProperties)
//   conflict               2004  fields that exclude each other (`not`, descriptor rules)
//   out_of_range           2003  well-formed but outside its range: minimum/maximum, lengths, item
//                                counts, pixel counts, durations that do not add up
//   unsupported_value      2003  well-formed but not offered: a number outside its enum (duration
//                                7 where 5/10/15 are offered), or a string enum guarded by a
//                                `pattern` that the value does match (`2160p`, `1280*720`, `21:9`)
//   file_size              2101  decoded media over the route's size limit
//   file_format            2102  media of a type outside the allow-list (data URI type, sniffed
//                                content, URL extension)
//   file_content           2103  undecodable or corrupted media (Base64 that does not decode,
//                                bytes that are no image at all)
//
// A JSON Schema keyword maps onto a violation (KEYWORD_VIOLATIONS); descriptor rules and media
// checks name their violation directly. A descriptor may override the code of one schema node
// with `x-error-code` (a number, or {keyword: code}) and must say why in `x-error-reason`; a rule
// may carry an explicit `code` (with `reason` when it also names a violation).
//
// When one request breaks several rules, the answer's error_code is the first present in the
// order 2002, 2001, 2004, 2003, 2101, 2102, 2103; every broken rule is listed in `errors`.
//
// Where the spec shows two answers (video model A mixing keyframe and reference fields: 2001 in
// an example, 2004 in the code table), the table wins: mixing is a `conflict`, 2004.
import type { ErrorObject } from 'ajv';

export const VIOLATION_CODES = {
  required: 2002,
  malformed: 2001,
  unsupported_parameter: 2004,
  conflict: 2004,
  out_of_range: 2003,
  unsupported_value: 2003,
  file_size: 2101,
  file_format: 2102,
  file_content: 2103,
} as const;

export type Violation = keyof typeof VIOLATION_CODES;

export const KEYWORD_VIOLATIONS: Readonly<Record<string, Violation>> = {
  required: 'required',
  dependentRequired: 'required',
  type: 'malformed',
  enum: 'malformed', // refined by enumViolation()
  const: 'malformed',
  pattern: 'malformed',
  format: 'malformed',
  anyOf: 'malformed',
  oneOf: 'malformed',
  propertyNames: 'malformed',
  additionalProperties: 'unsupported_parameter',
  unevaluatedProperties: 'unsupported_parameter',
  not: 'conflict',
  minimum: 'out_of_range',
  maximum: 'out_of_range',
  exclusiveMinimum: 'out_of_range',
  exclusiveMaximum: 'out_of_range',
  minLength: 'out_of_range',
  maxLength: 'out_of_range',
  minItems: 'out_of_range',
  maxItems: 'out_of_range',
  minProperties: 'out_of_range',
  maxProperties: 'out_of_range',
  multipleOf: 'out_of_range',
  uniqueItems: 'out_of_range',
  contains: 'out_of_range',
};

export const CODE_PRIORITY = [2002, 2001, 2004, 2003, 2101, 2102, 2103, 2100, 2000];

export function codeOf(v: Violation): number {
  return VIOLATION_CODES[v];
}

/** The service code a descriptor rule answers with: its own `code`, else its violation's. */
export function ruleCode(rule: { code?: number; violation?: string }): number | undefined {
  if (rule.code !== undefined) return rule.code;
  return rule.violation !== undefined && Object.hasOwn(VIOLATION_CODES, rule.violation) ? codeOf(rule.violation as Violation) : undefined;
}

/** The violation a failed JSON Schema keyword stands for (before any x-error-code override). */
export function violationForAjvError(e: ErrorObject): Violation {
  if (e.keyword === 'enum') return enumViolation(e);
  return KEYWORD_VIOLATIONS[e.keyword] ?? 'malformed';
}

/**
 * A value whose JSON type none of the listed values has is a type mismatch (malformed), whether
 * or not the node also says `type`: many schemas (OpenAI's among them) write a list of strings as
 * a bare `enum`, and `service_tier: 1` there is the wrong type, not an unoffered tier. A number
 * outside a list of numbers is well-formed: unsupported_value. A string enum whose node also has
 * a `pattern` uses the pattern for well-formedness: a value matching the pattern but not listed
 * is unsupported_value, anything else malformed.
 */
function enumViolation(e: ErrorObject): Violation {
  const listed = (e.params as { allowedValues?: unknown } | undefined)?.allowedValues;
  if (Array.isArray(listed) && !listed.some((v) => jsonType(v) === jsonType(e.data))) return 'malformed';
  if (typeof e.data === 'number') return 'unsupported_value';
  const pattern = (e.parentSchema as Record<string, unknown> | undefined)?.pattern;
  if (typeof e.data === 'string' && typeof pattern === 'string' && new RegExp(pattern, 'u').test(e.data)) return 'unsupported_value';
  return 'malformed';
}

/** JSON's own types (integer and number are one: 1 and 1.5 are both numbers to a client). */
function jsonType(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

export function codeForAjvError(e: ErrorObject): number {
  const override = (e.parentSchema as Record<string, unknown> | undefined)?.['x-error-code'];
  if (typeof override === 'number') return override;
  if (override && typeof override === 'object') {
    const byKeyword = (override as Record<string, unknown>)[e.keyword];
    if (typeof byKeyword === 'number') return byKeyword;
  }
  return codeOf(violationForAjvError(e));
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

/**
 * Every `x-error-code` in a request schema must come with an `x-error-reason`: an override of
 * the policy is a decision a reviewer must be able to read. Returns the JSON pointers that lack one.
 */
export function overridesWithoutReason(schema: unknown, pointer = ''): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const out: string[] = [];
  if (Array.isArray(schema)) {
    schema.forEach((s, i) => out.push(...overridesWithoutReason(s, `${pointer}/${i}`)));
    return out;
  }
  const node = schema as Record<string, unknown>;
  if ('x-error-code' in node && typeof node['x-error-reason'] !== 'string') out.push(pointer || '/');
  for (const [k, v] of Object.entries(node)) {
    if (k === 'x-error-code' || k === 'enum' || k === 'const' || k === 'default' || k === 'examples') continue;
    out.push(...overridesWithoutReason(v, `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`));
  }
  return out;
}
