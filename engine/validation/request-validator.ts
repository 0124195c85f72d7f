// Compiles a route's request checks, once, into a validator. A request goes through, in order:
//   1. normalise  named string normalisers at JSON pointers (`lowercase` makes an enum case-insensitive)
//   2. schema     the route's JSON Schema (Ajv, defaults filled in)
//   3. rules      cross-field rules (JSONata; `each` repeats a rule per array item)
//   4. media      media checks (engine/media/checks.ts) on the values `request.media` names
// A failed validation throws one GatewayError whose `errors` list every broken rule as a JSON
// pointer with its own code; the service codes come from the policy in error-policy.ts. Schema
// failures stop before rules and media (those read a body of the right shape); rule and media
// failures are reported together.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject } from 'ajv';
import { errorNamed } from '../errors/catalogue.ts';
import { GatewayError, type FieldError } from '../errors/gateway-error.ts';
import { compileExpr, type CompiledExpr } from '../util/expr.ts';
import { applyRewrite, checkMedia, type MediaRule, type MediaVerdict } from '../media/checks.ts';
import { isMediaToken, mediaBlobs } from '../media/blobs.ts';
import { parsePointer, resolvePointer } from '../media/pointers.ts';
import { codeForAjvError, codeOf, overridesWithoutReason, primaryCode, VIOLATION_CODES, type Violation } from './error-policy.ts';

/**
 * A descriptor's cross-field rule (a route's `request.rules` entry): `when` true refuses the
 * request; `violation` names the failure, the policy its code.
 */
export interface RequestRuleSpec {
  when: string;
  violation?: Violation;
  /** Explicit code overriding the policy; with a violation it needs a reason. */
  code?: number;
  pointer?: string;
  message: string;
  /** Repeat the rule for each item of this array ($item, $i bound; {i} in pointer and message). */
  each?: string;
  reason?: string;
}

export type Normaliser = 'lowercase' | 'uppercase' | 'trim';

export interface RequestChecks {
  schema: object;
  rules?: readonly RequestRuleSpec[];
  normalise?: Readonly<Record<string, Normaliser>>;
  media?: readonly MediaRule[];
}

export type RequestValidator = (body: unknown) => Promise<Record<string, unknown>>;

const NORMALISERS: Record<Normaliser, (s: string) => string> = {
  lowercase: (s) => s.toLowerCase(),
  uppercase: (s) => s.toUpperCase(),
  trim: (s) => s.trim(),
};

/** Kept for callers that only have a schema and rules. */
export function compileRequestValidator(ajv: Ajv2020, schemaId: string, schema: object, rules: readonly RequestRuleSpec[] = []): RequestValidator {
  return compileRouteValidator(ajv, schemaId, { schema, rules });
}

export function compileRouteValidator(ajv: Ajv2020, schemaId: string, checks: RequestChecks): RequestValidator {
  const unexplained = overridesWithoutReason(checks.schema);
  if (unexplained.length) throw new Error(`x-error-code without x-error-reason at ${unexplained.join(', ')}`);
  const validate = ajv.compile({ ...checks.schema, $id: schemaId });
  const rules = (checks.rules ?? []).map((r) => {
    if (r.code === undefined && r.violation === undefined) throw new Error(`rule "${r.message}" names neither a violation nor a code`);
    if (r.violation !== undefined && !(r.violation in VIOLATION_CODES)) throw new Error(`rule "${r.message}": unknown violation ${r.violation}`);
    return { ...r, code: r.code ?? codeOf(r.violation!), expr: compileExpr(r.when) as CompiledExpr, eachExpr: r.each ? compileExpr(r.each) : undefined };
  });
  const normalise = Object.entries(checks.normalise ?? {}).map(([at, name]) => {
    const fn = NORMALISERS[name];
    if (!fn) throw new Error(`unknown normaliser ${name}`);
    return { segments: parsePointer(at), fn };
  });
  const media = (checks.media ?? []).map((rule) => ({ rule, segments: parsePointer(rule.at) }));

  return async (body) => {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new GatewayError('parameterValidationFailed', 'The request body must be a JSON object.', { errors: [{ pointer: '', detail: 'must be a JSON object', code: 2001 }] });
    }
    for (const n of normalise) {
      for (const hit of resolvePointer(body, n.segments)) if (typeof hit.value === 'string') hit.set(n.fn(hit.value));
    }
    if (!validate(body)) throw validationError(fieldErrors(validate.errors ?? []));
    const broken: FieldError[] = [];
    for (const rule of rules) {
      if (!rule.eachExpr) {
        if (await rule.expr.evaluate(body)) broken.push({ pointer: rule.pointer ?? '', detail: rule.message, code: rule.code });
        continue;
      }
      const items = await rule.eachExpr.evaluate(body);
      const list = Array.isArray(items) ? items : items === undefined || items === null ? [] : [items];
      for (let i = 0; i < list.length; i++) {
        if (await rule.expr.evaluate(body, { item: list[i], i })) {
          broken.push({ pointer: (rule.pointer ?? '').replaceAll('{i}', String(i)), detail: rule.message.replaceAll('{i}', String(i)), code: rule.code });
        }
      }
    }
    for (const { rule, segments } of media) {
      for (const hit of resolvePointer(body, segments)) {
        let verdict: MediaVerdict;
        if (isMediaToken(hit.value)) {
          // Checked in the media pool when the body was parsed; the bytes are already in final form.
          verdict = mediaBlobs.verdict(hit.value) ?? { ok: false, violation: 'file_content', detail: 'could not be read' };
        } else {
          verdict = checkMedia(hit.value, rule);
          if (verdict.ok && verdict.rewrite && typeof hit.value === 'string') hit.set(applyRewrite(hit.value, verdict));
        }
        if (!verdict.ok) {
          const violation = verdict.violation ?? 'file_content';
          broken.push({ pointer: hit.pointer, detail: `${fieldName(hit.pointer)} ${verdict.detail ?? 'is not acceptable'}`, code: codeOf(violation) });
        }
      }
    }
    if (broken.length) throw validationError(broken);
    return body as Record<string, unknown>;
  };
}

export function validationError(errors: FieldError[]): GatewayError {
  const code = primaryCode(errors.map((e) => e.code ?? 2001));
  const first = errors.find((e) => e.code === code) ?? errors[0]!;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''}, see errors)` : '';
  return new GatewayError(errorNamed(code), `${first.detail}${more}`, { errors });
}

function fieldErrors(errors: readonly ErrorObject[]): FieldError[] {
  // A failed anyOf/oneOf also reports every branch's errors; keep only the anyOf itself.
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.schemaPath);
  // A value failing its pattern also fails the enum beside it; the pattern says what is wrong.
  const patternAt = new Set(errors.filter((e) => e.keyword === 'pattern').map((e) => e.instancePath));
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    if (unions.some((u) => e.schemaPath.startsWith(`${u}/`))) continue;
    if (e.keyword === 'enum' && patternAt.has(e.instancePath)) continue;
    const fe = describe(e);
    const key = `${fe.pointer}|${fe.detail}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(fe);
    }
  }
  return out;
}

const fieldName = (ptr: string) => (ptr === '' ? 'the request body' : ptr.slice(1).replace(/\//g, '.').replace(/~1/g, '/').replace(/~0/g, '~'));

function describe(e: ErrorObject): FieldError {
  const code = codeForAjvError(e);
  const p = e.params as Record<string, unknown>;
  // x-error-detail: one detail for the node's value constraints (not for its type), or one per keyword.
  const custom = (e.parentSchema as Record<string, unknown> | undefined)?.['x-error-detail'];
  const own = typeof custom === 'string' ? (['type', 'required', 'additionalProperties', 'unevaluatedProperties'].includes(e.keyword) ? undefined : custom)
    : custom && typeof custom === 'object' ? (custom as Record<string, unknown>)[e.keyword] : undefined;
  if (typeof own === 'string') return { pointer: e.instancePath, detail: `${fieldName(e.instancePath)} ${own}`, code };
  switch (e.keyword) {
    case 'required':
      return { pointer: `${e.instancePath}/${p.missingProperty}`, detail: `${fieldName(`${e.instancePath}/${p.missingProperty}`)} is required`, code };
    case 'dependentRequired':
      return { pointer: `${e.instancePath}/${p.missingProperty}`, detail: `${fieldName(`${e.instancePath}/${p.missingProperty}`)} is required when ${p.property} is given`, code };
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const prop = String(p.additionalProperty ?? p.unevaluatedProperty);
      const ptr = `${e.instancePath}/${prop.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      return { pointer: ptr, detail: `${fieldName(ptr)} is not a supported parameter`, code };
    }
    case 'enum':
      return { pointer: e.instancePath, detail: `${fieldName(e.instancePath)} must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`, code };
    case 'type':
      return { pointer: e.instancePath, detail: `${fieldName(e.instancePath)} must be ${describeType(p.type)}`, code };
    default:
      return { pointer: e.instancePath, detail: `${fieldName(e.instancePath)} ${e.message ?? 'is invalid'}`, code };
  }
}

function describeType(t: unknown): string {
  const names = (Array.isArray(t) ? t : String(t).split(',')).map((x) => String(x).trim());
  const article = (n: string) => (n === 'null' ? 'null' : `${/^[aeiou]/.test(n) ? 'an' : 'a'} ${n}`);
  return names.map(article).join(' or ');
}
