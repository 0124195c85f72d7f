// `gateway check`, per descriptor and per route: the semantic checks a reviewer would otherwise
// do by hand (./checks.ts runs them; its header lists them). A route is checked in steps, each a
// function: the request schema's $refs, the expressions on the request, the answer expressions
// (compiled here), the status map, the examples, the fixtures run end to end
// (engine/sandbox/fixture-run.ts), pricing, and the submit body built from the examples.
import { relative } from 'node:path';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { YamlSource } from '../config/yaml-source.ts';
import type { LoadedVendor } from '../descriptors/load-descriptors.ts';
import type { RouteSpec } from '../descriptors/types.ts';
import { TASK_STATUSES } from '../vocabulary/task-status.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { compileExpr, ExprError, type CompiledExpr } from '../util/expr.ts';
import type { RequestValidator } from '../validation/request-validator.ts';
import { declaredProperties, inlineRefs, isObject, lookupField, refsIn, requestSchemaBase, resolveRef, type SchemaRegistry } from '../validation/json-schema.ts';
import { describeValue as describe, noFixtures, runRouteFixtures } from '../sandbox/fixture-run.ts';
import { rootFieldRefs } from './expr-refs.ts';
import { escapePointer, finding, type CheckName, type Finding, type Severity } from './findings.ts';
import { unknownPlaceholders } from './fixtures.ts';
import { compileRoutePricing, PricingConfigError, type PricePlan } from './price.ts';
import { routeValidator } from './validate.ts';

/** What an upstream error-map expression sees (engine/upstream/failure.ts). */
const ERROR_FACTS = ['stage', 'http_status', 'body', 'message'];

export interface VendorCheckContext {
  ajv: Ajv2020;
  registry: SchemaRegistry;
  creditsPerUsd: number;
}

/** One vendor's findings: its own error map and sandbox expressions, its fixtures' names, then each route. */
export async function checkVendor(v: LoadedVendor, c: VendorCheckContext): Promise<Finding[]> {
  const out: Finding[] = [];
  const d = v.descriptor;
  const src: YamlSource = v.source;
  const at = (check: CheckName, pointer: string, message: string, severity: Severity = 'error') => out.push(finding(src.problem(pointer, message), check, severity));
  const compile = (pointer: string, source: string | undefined): CompiledExpr | undefined => {
    if (source === undefined) return undefined;
    try {
      return compileExpr(source);
    } catch (err) {
      const e = err as ExprError;
      at('expression', pointer, `expression does not compile: ${e.message}${e.position !== undefined ? ` (at character ${e.position})` : ''}`);
      return undefined;
    }
  };
  const factsOnly = (pointer: string, source: string | undefined) => {
    if (!compile(pointer, source)) return;
    for (const ref of rootFieldRefs(source!)) {
      if (!ERROR_FACTS.includes(ref.path[0]!)) at('expression', pointer, `reads "${ref.path.join('.')}", but an error-map expression sees only ${ERROR_FACTS.join(', ')} (write body.${ref.path.join('.')})`);
    }
  };
  (d.upstream.errors ?? []).forEach((e, j) => {
    factsOnly(`/upstream/errors/${j}/when`, e.when);
    factsOnly(`/upstream/errors/${j}/detail`, e.detail);
  });
  const sandboxPrompt = compile('/sandbox/prompt', d.sandbox?.prompt ?? 'prompt');
  (d.sandbox?.reject ?? []).forEach((x, j) => compile(`/sandbox/reject/${j}/when`, x.when));
  const fixtureDir = `${relative(process.cwd(), v.file).replace(/\.ya?ml$/, '')}/fixtures`;
  out.push(...fixtureNames(v, fixtureDir));
  for (const f of noFixtures(v, fixtureDir)) out.push(finding(v.source.problem(f.pointer, f.message), 'fixture', f.severity));
  for (const [i, r] of d.routes.entries()) {
    await checkRoute(v, r, `/routes/${i}`, { ...c, at, compile, factsOnly, sandboxPrompt, fixtureDir });
  }
  return out;
}

/** Fixtures of routes the descriptor does not have, and placeholders the sandbox does not fill. */
function fixtureNames(v: LoadedVendor, fixtureDir: string): Finding[] {
  const out: Finding[] = [];
  for (const routeId of v.fixtures.keys()) {
    if (!v.descriptor.routes.some((r) => r.id === routeId)) {
      out.push(finding({ file: `${fixtureDir}/${routeId}`, line: 1, col: 1, pointer: '', message: `fixtures for route "${routeId}", which this descriptor does not have` }, 'fixture', 'warning'));
    }
    for (const [name, fx] of v.fixtures.get(routeId)!) {
      const unknown = unknownPlaceholders(fx, name);
      if (unknown.length) out.push(finding({ file: `${fixtureDir}/${routeId}/${name}.json`, line: 1, col: 1, pointer: '', message: `placeholders the sandbox does not fill: ${unknown.map((u) => `{{${u}}}`).join(', ')}` }, 'fixture', 'warning'));
    }
  }
  return out;
}

export interface RouteCheckContext extends VendorCheckContext {
  at(check: CheckName, pointer: string, message: string, severity?: Severity): void;
  compile(pointer: string, source: string | undefined): CompiledExpr | undefined;
  factsOnly(pointer: string, source: string | undefined): void;
  sandboxPrompt: CompiledExpr | undefined;
  fixtureDir: string;
}

/** One route under check: the context, and its request schema with $refs inlined (undefined when one is broken). */
export interface RouteUnderCheck {
  v: LoadedVendor;
  r: RouteSpec;
  /** The route's JSON pointer in its descriptor. */
  p: string;
  c: RouteCheckContext;
  refsOk: boolean;
  schema: unknown;
}

/** An example the route's own validation accepted, with defaults applied. */
export interface ValidExample {
  pointer: string;
  value: Record<string, unknown>;
}

/** The succeeded fixture's final answer and the result the route reads from it (pricing settles on them). */
interface Succeeded {
  fixture: unknown;
  result: Record<string, unknown>;
}

async function checkRoute(v: LoadedVendor, r: RouteSpec, p: string, c: RouteCheckContext): Promise<void> {
  const route = withSchema(v, r, p, c);
  checkRequestExpressions(route);
  const submitBody = compileAnswerExpressions(route);
  checkStatusMap(route);
  const valid = await checkExamples(route);
  const succeeded = r.kind === 'async' ? await checkFixtures(route, valid) : undefined;
  await checkPricing(route, valid, succeeded);
  await checkSubmitBody(route, submitBody, valid);
}

/** $refs in the request schema: each must resolve; the schema is then inlined for the field checks. */
function withSchema(v: LoadedVendor, r: RouteSpec, p: string, c: RouteCheckContext): RouteUnderCheck {
  const base = requestSchemaBase(v.descriptor.vendor, r.id);
  const req = r.request;
  let refsOk = true;
  if (req) {
    for (const { pointer, ref } of refsIn(req.schema, `${p}/request/schema`)) {
      const res = resolveRef(ref, base, req.schema, c.registry);
      if (typeof res === 'string') {
        refsOk = false;
        c.at('ref', pointer, res);
      }
    }
  }
  return { v, r, p, c, refsOk, schema: req && refsOk ? inlineRefs(req.schema, base, c.registry) : undefined };
}

/** Expressions on the request: they compile, and read only fields the schema declares. */
function checkRequestExpressions(route: RouteUnderCheck): void {
  const { r, p, c, schema } = route;
  const unknownField = (pointer: string, path: readonly string[], what: (field: string) => string) => {
    const found = lookupField(schema, path);
    if (found.unknownAt === undefined) return;
    const field = path.slice(0, found.unknownAt + 1).join('.');
    const declared = found.unknownAt === 0 ? declaredProperties(schema) : [];
    const msg = `${what(field)}${declared.length && what(field).startsWith('reads') ? ` (it declares: ${declared.join(', ')})` : ''}`;
    c.at('expression', pointer, found.open ? `${msg}; the schema lets it through unchecked` : msg, found.open ? 'warning' : 'error');
  };
  const onRequest = (pointer: string, source: string | undefined) => {
    if (!c.compile(pointer, source) || !schema) return;
    for (const ref of rootFieldRefs(source!)) {
      // `undefined` is JSONata's idiom for "no value" (a field no input has), not a field.
      if (ref.path.length === 1 && ref.path[0] === 'undefined') continue;
      unknownField(pointer, ref.path, (field) => `reads "${field}", which the request schema does not declare`);
    }
  };
  (r.request?.rules ?? []).forEach((rule, j) => {
    onRequest(`${p}/request/rules/${j}/when`, rule.when);
    onRequest(`${p}/request/rules/${j}/each`, rule.each);
  });
  // Proxy routes read these request fields by dotted path.
  const px = r.proxy;
  if (px && schema) {
    for (const [k, path] of [['model', px.model ?? (r.method === 'POST' ? 'model' : undefined)], ['stream/flag', px.stream?.flag], ['stream/usage_option', px.stream?.usage_option]] as const) {
      if (path) unknownField(`${p}/proxy/${k}`, path.split('.'), () => `names "${path}", which the request schema does not declare`);
    }
  }
  const up = r.upstream ?? {};
  onRequest(`${p}/upstream/submit/body`, up.submit?.body);
  onRequest(`${p}/upstream/cancel/body`, typeof up.cancel === 'object' ? up.cancel.body : undefined);
  const pricing = isObject(r.pricing) ? r.pricing : undefined;
  if (pricing) {
    const unitPrice = pricing.unit_price;
    if (isObject(unitPrice) && typeof unitPrice.by === 'string') onRequest(`${p}/pricing/unit_price/by`, unitPrice.by);
    for (const k of ['quantity', 'settle_quantity']) if (typeof pricing[k] === 'string') onRequest(`${p}/pricing/${k}`, pricing[k] as string);
  }
  (up.errors ?? []).forEach((e, j) => {
    c.factsOnly(`${p}/upstream/errors/${j}/when`, e.when);
    c.factsOnly(`${p}/upstream/errors/${j}/detail`, e.detail);
  });
}

/** Expressions on upstream answers: compiled here, run on the fixtures by checkFixtures. Returns the submit body's, when it compiles. */
function compileAnswerExpressions(route: RouteUnderCheck): CompiledExpr | undefined {
  const { r, p, c } = route;
  const up = r.upstream ?? {};
  c.compile(`${p}/upstream/submit/task_id`, up.submit?.task_id);
  c.compile(`${p}/upstream/submit/accept`, up.submit?.accept);
  c.compile(`${p}/upstream/submit/error_message`, up.submit?.error_message);
  for (const [name, source] of Object.entries(up.submit?.urls ?? {})) c.compile(`${p}/upstream/submit/urls/${escapePointer(name)}`, source);
  c.compile(`${p}/upstream/poll/status`, up.poll?.status);
  c.compile(`${p}/upstream/poll/error_message`, up.poll?.error_message);
  c.compile(`${p}/upstream/poll/error_code`, up.poll?.error_code);
  for (const [name, f] of Object.entries(r.result ?? {})) c.compile(`${p}/result/${escapePointer(name)}${typeof f === 'string' ? '' : '/from'}`, typeof f === 'string' ? f : f.from);
  return up.submit?.body === undefined ? undefined : safeCompile(up.submit.body);
}

/** Fixtures: run end to end as the gateway and the sandbox would play them (serve refuses the same errors). */
async function checkFixtures(route: RouteUnderCheck, valid: readonly ValidExample[]): Promise<Succeeded | undefined> {
  const { r, p, c } = route;
  const run = await runRouteFixtures(r, p, route.v.fixtures.get(r.id), `${c.fixtureDir}/${r.id}`, valid[0]?.value ?? {});
  for (const f of run.findings) c.at('fixture', f.pointer, f.message, f.severity);
  return run.result ? { fixture: run.final, result: run.result } : undefined;
}

/** Status map: every task state reachable. */
function checkStatusMap(route: RouteUnderCheck): void {
  const poll = route.r.upstream?.poll;
  if (!poll?.status_map) return;
  const mapped = new Set(Object.values(poll.status_map));
  for (const s of TASK_STATUSES) {
    if (mapped.has(s)) continue;
    const fatal = s === 'completed' || s === 'failed';
    route.c.at('status-map', `${route.p}/upstream/poll/status_map`, fatal
      ? `no upstream status maps onto "${s}": tasks can never ${s === 'completed' ? 'complete' : 'fail'} (only the safety net would end them)`
      : `no upstream status maps onto "${s}": tasks will skip that state`, fatal ? 'error' : 'warning');
  }
}

/** Examples: the route's own validation must accept each one; returns those it accepted. */
async function checkExamples(route: RouteUnderCheck): Promise<ValidExample[]> {
  const { r, p, c } = route;
  const req = r.request;
  const examples: { pointer: string; value: unknown }[] = [
    ...(req?.examples ?? []).map((value, j) => ({ pointer: `${p}/request/examples/${j}`, value })),
    ...(Array.isArray((req?.schema as { examples?: unknown })?.examples) ? ((req!.schema as { examples: unknown[] }).examples).map((value, j) => ({ pointer: `${p}/request/schema/examples/${j}`, value })) : []),
  ];
  let validate: RequestValidator | undefined;
  if (req && route.refsOk) {
    try {
      validate = routeValidator(c.ajv, route.v.descriptor.vendor, r);
    } catch {
      validate = undefined; // reported by the ref/expression checks or the engine compiler
    }
  }
  if (req && examples.length === 0 && (r.kind === 'async' || isObject(r.pricing))) {
    c.at('example', `${p}/request`, 'no request.examples: pricing cannot be tried and the API docs show no example', 'warning');
  }
  const valid: ValidExample[] = [];
  if (!validate) return valid;
  for (const ex of examples) {
    try {
      valid.push({ pointer: ex.pointer, value: await validate(structuredClone(ex.value)) });
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      const fields = err.errors.map((e) => `${e.detail}${e.pointer ? ` (at ${e.pointer})` : ''}`).join('; ');
      c.at('example', ex.pointer, `the route's own validation refuses this example (${err.code}): ${fields || err.detail}`);
    }
  }
  return valid;
}

/** Pricing: compiles, and prices every valid example (hold, and settle on the succeeded fixture). */
async function checkPricing(route: RouteUnderCheck, valid: readonly ValidExample[], succeeded: Succeeded | undefined): Promise<void> {
  const { r, p, c } = route;
  const pricing = isObject(r.pricing) ? r.pricing : undefined;
  if (!pricing) return;
  let plan: PricePlan | undefined;
  try {
    plan = compileRoutePricing(pricing, { creditsPerUsd: c.creditsPerUsd, label: `${r.method} /vendors/${route.v.descriptor.vendor}${r.path}` });
  } catch (err) {
    if (!(err instanceof PricingConfigError)) throw err;
    // An expression that does not parse is already reported by the expression check.
    if (!/does not parse/.test(err.message)) c.at('pricing', `${p}/pricing${err.pointer}`, err.message);
    return;
  }
  for (const ex of valid) {
    try {
      await plan.quoteHold(ex.value);
    } catch (err) {
      c.at('pricing', `${p}/pricing`, `cannot price the example at ${ex.pointer}: ${reason(err)}`);
      continue;
    }
    if (!succeeded) continue;
    try {
      await plan.quoteSettle(ex.value, succeeded.result, succeeded.fixture);
    } catch (err) {
      c.at('pricing', `${p}/pricing/settle_quantity`, `cannot settle the example at ${ex.pointer} with the succeeded fixture's result: ${reason(err)}`);
    }
  }
}

/** Mappings run on the examples: the upstream body builds, and the sandbox can steer it. */
async function checkSubmitBody(route: RouteUnderCheck, submitBody: CompiledExpr | undefined, valid: readonly ValidExample[]): Promise<void> {
  const { v, r, p, c } = route;
  if (r.kind !== 'async' || !submitBody) return;
  for (const ex of valid) {
    const built = await tryEval(submitBody, ex.value);
    if (built.error) {
      c.at('expression', `${p}/upstream/submit/body`, `fails on the example at ${ex.pointer}: ${built.error}`);
      continue;
    }
    // The sandbox fills {{prompt}} in fixtures with what sandbox.prompt reads from the upstream body.
    const usesPrompt = [...(v.fixtures.get(r.id)?.values() ?? [])].some((f) => JSON.stringify(f)?.includes('{{prompt}}'));
    if (c.sandboxPrompt && usesPrompt) {
      const prompt = await tryEval(c.sandboxPrompt, built.value);
      if (prompt.error || typeof prompt.value !== 'string') {
        c.at('fixture', v.descriptor.sandbox?.prompt ? '/sandbox/prompt' : `${p}/upstream/submit/body`, `fixtures use {{prompt}}, but sandbox.prompt (\`${c.sandboxPrompt.source}\`) reads ${prompt.error ? 'nothing' : describe(prompt.value)} from the upstream body built from ${ex.pointer} (set sandbox.prompt)`, 'warning');
      }
    }
    return;
  }
}

async function tryEval(expr: CompiledExpr, input: unknown, bindings: Record<string, unknown> = {}): Promise<{ value?: unknown; error?: string }> {
  try {
    return { value: await expr.evaluate(input, bindings) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function reason(err: unknown): string {
  if (err instanceof GatewayError) return err.detail;
  return (err as Error).message ?? String(err);
}

function safeCompile(source: string): CompiledExpr | undefined {
  try {
    return compileExpr(source);
  } catch {
    return undefined;
  }
}
