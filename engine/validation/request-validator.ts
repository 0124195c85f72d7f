// Compiles a route's request schema and cross-field rules, once, into a validator. A failed
// validation throws one GatewayError whose `errors` list every broken rule as a JSON pointer.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject } from 'ajv';
import { GatewayError, type FieldError } from '../errors/gateway-error.ts';
import { compileExpr, type CompiledExpr } from '../descriptors/expr.ts';
import { codeForAjvError, primaryCode } from './error-policy.ts';

export interface RuleSpec {
  when: string;
  code: number;
  pointer?: string;
  message: string;
}

export type RequestValidator = (body: unknown) => Promise<Record<string, unknown>>;

export function compileRequestValidator(ajv: Ajv2020, schemaId: string, schema: object, rules: readonly RuleSpec[] = []): RequestValidator {
  const validate = ajv.compile({ ...schema, $id: schemaId });
  const compiledRules = rules.map((r) => ({ ...r, expr: compileExpr(r.when) as CompiledExpr }));
  return async (body) => {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new GatewayError(2001, 'The request body must be a JSON object.', { errors: [{ pointer: '', detail: 'must be a JSON object', code: 2001 }] });
    }
    if (!validate(body)) throw validationError(fieldErrors(validate.errors ?? []));
    const broken: FieldError[] = [];
    for (const rule of compiledRules) {
      if (await rule.expr.evaluate(body)) broken.push({ pointer: rule.pointer ?? '', detail: rule.message, code: rule.code });
    }
    if (broken.length) throw validationError(broken);
    return body as Record<string, unknown>;
  };
}

export function validationError(errors: FieldError[]): GatewayError {
  const code = primaryCode(errors.map((e) => e.code ?? 2001));
  const first = errors.find((e) => e.code === code) ?? errors[0]!;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''}, see errors)` : '';
  return new GatewayError(code, `${first.detail}${more}`, { errors });
}

function fieldErrors(errors: readonly ErrorObject[]): FieldError[] {
  // A failed anyOf/oneOf also reports every branch's errors; keep only the anyOf itself.
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.schemaPath);
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    if (unions.some((u) => e.schemaPath.startsWith(`${u}/`))) continue;
    const fe = describe(e);
    const key = `${fe.pointer}|${fe.detail}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(fe);
    }
  }
  return out;
}

function describe(e: ErrorObject): FieldError {
  const code = codeForAjvError(e);
  const p = e.params as Record<string, unknown>;
  const name = (ptr: string) => (ptr === '' ? 'the request body' : ptr.slice(1).replace(/\//g, '.'));
  switch (e.keyword) {
    case 'required':
      return { pointer: `${e.instancePath}/${p.missingProperty}`, detail: `${name(`${e.instancePath}/${p.missingProperty}`)} is required`, code };
    case 'dependentRequired':
      return { pointer: `${e.instancePath}/${p.missingProperty}`, detail: `${name(`${e.instancePath}/${p.missingProperty}`)} is required when ${p.property} is given`, code };
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const prop = String(p.additionalProperty ?? p.unevaluatedProperty);
      return { pointer: `${e.instancePath}/${prop}`, detail: `${name(`${e.instancePath}/${prop}`)} is not a supported parameter`, code };
    }
    case 'enum':
      return { pointer: e.instancePath, detail: `${name(e.instancePath)} must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`, code };
    default:
      return { pointer: e.instancePath, detail: `${name(e.instancePath)} ${e.message ?? 'is invalid'}`, code };
  }
}
