// The gateway's own request validation (normalisers, schema with defaults, rules, media checks),
// compiled for a tool: examples are judged exactly as a client's request would be.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { RouteSpec } from '../descriptors/types.ts';
import { compileRouteValidator, type RequestChecks, type RequestValidator } from '../validation/request-validator.ts';
import { requestSchemaBase } from '../validation/json-schema.ts';

let seq = 0;

/** Throws when the schema, a rule or a media check does not compile. Each call gets its own schema $id. */
export function routeValidator(ajv: Ajv2020, vendor: string, r: RouteSpec, schema?: object): RequestValidator | undefined {
  if (!r.request?.schema) return undefined;
  const checks = { ...r.request, schema: schema ?? r.request.schema } as unknown as RequestChecks;
  return compileRouteValidator(ajv, requestSchemaBase(vendor, `${r.id}.tool${++seq}`), checks);
}
