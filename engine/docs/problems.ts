// An error response of the OpenAPI document: the problem schema, and the codes it can carry,
// each named from the catalogue (engine/errors/catalogue.ts) with its title, so the document's
// error lists cannot drift from what the gateway throws. Used by ./openapi.ts and
// ./console-openapi.ts.
import { CATALOGUE, errorNamed, type ErrorName } from '../errors/catalogue.ts';
import type { JsonObject } from '../validation/json-schema.ts';

export const COMPONENT = '#/components/schemas/';

/** A problem response that can carry the given catalogue entries (sorted, one line each). */
export function problem(errors: readonly ErrorName[], what: string): JsonObject {
  const entries = [...new Map(errors.map((name) => [CATALOGUE[name].code, CATALOGUE[name]])).values()].sort((a, b) => a.code - b.code);
  const codes = entries.map((e) => e.code);
  return {
    description: `${what}. Codes: ${entries.map((e) => `${e.code} ${e.title}`).join(', ')}`,
    content: {
      'application/problem+json': {
        schema: { allOf: [{ $ref: `${COMPONENT}problem` }, { properties: { error_code: { enum: codes } } }] },
      },
    },
    'x-error-codes': codes,
  };
}

/** Codes that arrive as data (a schema's validation codes), as their entries. */
export function named(codes: readonly number[]): ErrorName[] {
  return codes.map(errorNamed);
}

/** "2001 Parameter Validation Failed, 2003 …": entries with their codes and titles. */
export function codeList(errors: readonly ErrorName[]): string {
  return errors.map((name) => `${CATALOGUE[name].code} ${CATALOGUE[name].title}`).join(', ');
}
