// `gateway check`: everything that can be known about a config and its descriptors without
// starting a server. First each file against the meta-schema (positioned), then the semantic
// checks a reviewer would otherwise do by hand:
//   route-collision  two routes (any vendors, aliases included) answering the same method + path
//   ref              a `$ref` that resolves to nothing
//   expression       an expression that does not compile, reads a field the request schema does
//                    not declare, or fails on the route's examples
//   status-map       a poll status_map that leaves a task state unreachable
//   example          a request example the route's own validation refuses
//   pricing          a pricing block that does not compile or cannot price an example
//   fixture          fixtures the mappings cannot read (no task id, unmapped status, empty result)
//   engine           whatever else the engine's own compiler refuses
import { basename, dirname, relative, resolve } from 'node:path';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { LoadError, type Problem, type YamlSource } from '../config/yaml-source.ts';
import type { GatewayConfig } from '../config/types.ts';
import { compileVendors } from '../descriptors/compile.ts';
import { compileExpr, ExprError, type CompiledExpr } from '../util/expr.ts';
import { loadVendorFile, type LoadedVendor } from '../descriptors/load-descriptors.ts';
import { TASK_STATUSES, type RouteSpec } from '../descriptors/types.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { createUpstreamAgent } from '../upstream/client.ts';
import { systemClock } from '../util/clock.ts';
import { createAjv } from '../validation/ajv.ts';
import type { RequestValidator } from '../validation/request-validator.ts';
import { adminTokenFindings } from './admin-token.ts';
import { checkTargets, fallbackConfig, type TargetOptions } from './check-sources.ts';
import { rootFieldRefs } from './expr-refs.ts';
import { escapePointer, finding, sortFindings, type CheckName, type Finding, type Severity } from './findings.ts';
import { unknownPlaceholders } from './fixtures.ts';
import { describeValue as describe, runRouteFixtures } from '../sandbox/fixture-run.ts';
import { declaredProperties, inlineRefs, isObject, lookupField, refsIn, registryFromDir, requestSchemaBase, resolveRef, type SchemaRegistry } from '../validation/json-schema.ts';
import { compileRoutePricing, PricingConfigError, type PricePlan } from './price.ts';
import { routeValidator } from './validate.ts';

export interface CheckReport {
  ok: boolean;
  errors: number;
  warnings: number;
  /** Descriptor files read (whether or not they passed the meta-schema). */
  vendors: number;
  /** Of those, served under the config (`vendors.enabled`; every one without a config), and not. */
  enabled: number;
  disabled: number;
  /** Routes of the descriptors that loaded. */
  routes: number;
  files: string[];
  findings: Finding[];
}

/** Paths the gateway serves itself; an alias must not take them. */
export const RESERVED_PATHS = ['/healthz', '/readyz', '/openapi.json', '/docs', '/admin/'];

/** What an upstream error-map expression sees (engine/upstream/failure.ts). */
const ERROR_FACTS = ['stage', 'http_status', 'body', 'message'];

export async function runChecks(opts: TargetOptions = {}): Promise<CheckReport> {
  const targets = checkTargets(opts);
  const findings: Finding[] = [];
  findings.push(...targets.configProblems.map((p) => finding(p, 'config')));
  findings.push(...targets.configWarnings.map((p) => finding(p, 'config', 'warning')));
  findings.push(...targets.problems.map((p) => finding(p, 'config')));
  if (targets.config && targets.configFile) findings.push(...adminTokenFindings(targets.config, relative(process.cwd(), targets.configFile) || targets.configFile));

  const ajv = createAjv({ useDefaults: true });
  const loaded: LoadedVendor[] = [];
  for (const file of targets.files) {
    try {
      loaded.push(loadVendorFile(file, ajv));
    } catch (err) {
      if (!(err instanceof LoadError)) throw err;
      for (const p of err.problems) findings.push(finding(p, p.file.endsWith('.json') ? 'fixture' : 'meta-schema'));
    }
  }
  const served = (v: LoadedVendor) => isEnabled(v.file, targets.config);
  const enabledFiles = targets.files.filter((f) => isEnabled(f, targets.config)).length;
  const enabled = loaded.filter(served);
  const creditsPerUsd = Number((targets.config?.billing as { credits_per_usd?: number } | undefined)?.credits_per_usd ?? 100);
  const registry = registryFromDir();

  // Collisions among all descriptors read: an operator may enable any of them together.
  findings.push(...routeCollisions(loaded));
  for (const v of loaded) findings.push(...(await checkVendor(v, { ajv, registry, creditsPerUsd })));
  findings.push(...engineCompile(enabled, targets.config, findings));
  // A disabled descriptor (the catalogue) is compiled as the sandbox would serve it, so it is
  // known good before an operator enables it, without upstreams of its own in this config.
  findings.push(...engineCompile(loaded.filter((v) => !served(v)), undefined, findings));

  sortFindings(findings);
  const errors = findings.filter((f) => f.severity === 'error').length;
  return {
    ok: errors === 0,
    errors,
    warnings: findings.length - errors,
    vendors: targets.files.length,
    enabled: enabledFiles,
    disabled: targets.files.length - enabledFiles,
    routes: loaded.reduce((n, v) => n + v.descriptor.routes.length, 0),
    files: targets.files.map((f) => relative(process.cwd(), f) || f),
    findings,
  };
}

/**
 * Served under this config: listed in `vendors.enabled` when the descriptor is in the config's
 * vendors folder; a descriptor checked from elsewhere (a path on the command line) counts as enabled.
 */
function isEnabled(file: string, config: GatewayConfig | undefined): boolean {
  if (!config || resolve(dirname(file)) !== resolve(config.vendors.dir)) return true;
  // A descriptor's vendor is its file name (the loader refuses another).
  return config.vendors.enabled.includes(basename(file).replace(/\.ya?ml$/, ''));
}

// ---------------------------------------------------------------------------------------------

/** Aliases the engine serves: those of proxied (sync, stream) routes. */
export function servedAliases(r: RouteSpec): string[] {
  return r.kind === 'sync' || r.kind === 'stream' ? [...(r.aliases ?? [])] : [];
}

/** The client-facing method + path pairs a route answers. */
export function routeSignatures(vendor: string, r: RouteSpec): string[] {
  const base = `/vendors/${vendor}${r.path}`;
  if (r.kind === 'status') return [`GET ${base}/{task_id}`];
  if (r.kind === 'async') return [`POST ${base}`, `GET ${base}/{task_id}`];
  return [`${r.method} ${base}`, ...servedAliases(r).map((a) => `${r.method} ${a}`)];
}

function routeCollisions(vendors: readonly LoadedVendor[]): Finding[] {
  const out: Finding[] = [];
  const seen = new Map<string, string>();
  const vendorFiles = new Map<string, string>();
  for (const v of vendors) {
    const d = v.descriptor;
    const other = vendorFiles.get(d.vendor);
    if (other) out.push(finding(v.source.problem('/vendor', `vendor "${d.vendor}" is also described by ${other}`), 'route-collision'));
    vendorFiles.set(d.vendor, v.source.file);
    const ids = new Set<string>();
    d.routes.forEach((r, i) => {
      if (ids.has(r.id)) out.push(finding(v.source.problem(`/routes/${i}/id`, `route id "${r.id}" is used twice in this descriptor`), 'route-collision'));
      ids.add(r.id);
      if ((r.aliases ?? []).length && !servedAliases(r).length) {
        out.push(finding(v.source.problem(`/routes/${i}/aliases`, `aliases are served for sync and stream routes only: this ${r.kind} route's aliases are ignored`), 'engine', 'warning'));
      }
      servedAliases(r).forEach((a, j) => {
        const reserved = RESERVED_PATHS.find((p) => (p.endsWith('/') ? a.startsWith(p) : a === p || a.startsWith(`${p}/`)));
        if (reserved) out.push(finding(v.source.problem(`/routes/${i}/aliases/${j}`, `alias ${a} takes ${reserved}, which the gateway serves itself`), 'route-collision'));
      });
      for (const sig of routeSignatures(d.vendor, r)) {
        const prev = seen.get(sig);
        const here = `${d.vendor}/${r.id} (${v.source.file})`;
        const isAlias = (r.aliases ?? []).some((a) => sig.endsWith(` ${a}`) || sig.endsWith(` ${a}/{task_id}`));
        if (prev) out.push(finding(v.source.problem(`/routes/${i}/${isAlias ? 'aliases' : 'path'}`, `${sig} is already served by ${prev}`), 'route-collision'));
        else seen.set(sig, here);
      }
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

interface VendorCheckContext {
  ajv: Ajv2020;
  registry: SchemaRegistry;
  creditsPerUsd: number;
}

async function checkVendor(v: LoadedVendor, c: VendorCheckContext): Promise<Finding[]> {
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
  for (const routeId of v.fixtures.keys()) {
    if (!d.routes.some((r) => r.id === routeId)) {
      out.push(finding({ file: `${fixtureDir}/${routeId}`, line: 1, col: 1, pointer: '', message: `fixtures for route "${routeId}", which this descriptor does not have` }, 'fixture', 'warning'));
    }
    for (const [name, fx] of v.fixtures.get(routeId)!) {
      const unknown = unknownPlaceholders(fx, name);
      if (unknown.length) out.push(finding({ file: `${fixtureDir}/${routeId}/${name}.json`, line: 1, col: 1, pointer: '', message: `placeholders the sandbox does not fill: ${unknown.map((u) => `{{${u}}}`).join(', ')}` }, 'fixture', 'warning'));
    }
  }

  for (const [i, r] of d.routes.entries()) {
    await checkRoute(v, r, `/routes/${i}`, { ...c, at, compile, factsOnly, sandboxPrompt, fixtureDir });
  }
  return out;
}

interface RouteCheckContext extends VendorCheckContext {
  at(check: CheckName, pointer: string, message: string, severity?: Severity): void;
  compile(pointer: string, source: string | undefined): CompiledExpr | undefined;
  factsOnly(pointer: string, source: string | undefined): void;
  sandboxPrompt: CompiledExpr | undefined;
  fixtureDir: string;
}

async function checkRoute(v: LoadedVendor, r: RouteSpec, p: string, c: RouteCheckContext): Promise<void> {
  const vendor = v.descriptor.vendor;
  const { at, compile } = c;
  const base = requestSchemaBase(vendor, r.id);
  const req = r.request;

  // $refs in the request schema.
  let refsOk = true;
  if (req) {
    for (const { pointer, ref } of refsIn(req.schema, `${p}/request/schema`)) {
      const res = resolveRef(ref, base, req.schema, c.registry);
      if (typeof res === 'string') {
        refsOk = false;
        at('ref', pointer, res);
      }
    }
  }
  const schema = req && refsOk ? inlineRefs(req.schema, base, c.registry) : undefined;

  // Expressions on the request: compile, and read only fields the schema declares.
  const onRequest = (pointer: string, source: string | undefined) => {
    if (!compile(pointer, source) || !schema) return;
    for (const ref of rootFieldRefs(source!)) {
      // `undefined` is JSONata's idiom for "no value" (a field no input has), not a field.
      if (ref.path.length === 1 && ref.path[0] === 'undefined') continue;
      const found = lookupField(schema, ref.path);
      if (found.unknownAt === undefined) continue;
      const field = ref.path.slice(0, found.unknownAt + 1).join('.');
      const declared = found.unknownAt === 0 ? declaredProperties(schema) : [];
      const msg = `reads "${field}", which the request schema does not declare${declared.length ? ` (it declares: ${declared.join(', ')})` : ''}`;
      at('expression', pointer, found.open ? `${msg}; the schema lets it through unchecked` : msg, found.open ? 'warning' : 'error');
    }
  };
  (req?.rules ?? []).forEach((rule, j) => {
    onRequest(`${p}/request/rules/${j}/when`, rule.when);
    onRequest(`${p}/request/rules/${j}/each`, rule.each);
  });
  // Proxy routes read these request fields by dotted path.
  const px = r.proxy;
  if (px) {
    for (const [k, path] of [['model', px.model ?? (r.method === 'POST' ? 'model' : undefined)], ['stream/flag', px.stream?.flag], ['stream/usage_option', px.stream?.usage_option]] as const) {
      if (path && schema) checkDotted(`${p}/proxy/${k}`, path);
    }
  }
  function checkDotted(pointer: string, path: string): void {
    const found = lookupField(schema, path.split('.'));
    if (found.unknownAt === undefined) return;
    const msg = `names "${path}", which the request schema does not declare`;
    at('expression', pointer, found.open ? `${msg}; the schema lets it through unchecked` : msg, found.open ? 'warning' : 'error');
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
  // Expressions on upstream answers: compiled here, tried on the fixtures below.
  compile(`${p}/upstream/submit/task_id`, up.submit?.task_id);
  compile(`${p}/upstream/submit/accept`, up.submit?.accept);
  compile(`${p}/upstream/submit/error_message`, up.submit?.error_message);
  for (const [name, source] of Object.entries(up.submit?.urls ?? {})) compile(`${p}/upstream/submit/urls/${escapePointer(name)}`, source);
  compile(`${p}/upstream/poll/status`, up.poll?.status);
  compile(`${p}/upstream/poll/error_message`, up.poll?.error_message);
  compile(`${p}/upstream/poll/error_code`, up.poll?.error_code);
  for (const [name, f] of Object.entries(r.result ?? {})) compile(`${p}/result/${escapePointer(name)}${typeof f === 'string' ? '' : '/from'}`, typeof f === 'string' ? f : f.from);
  const submitBody = up.submit?.body === undefined ? undefined : safeCompile(up.submit.body);

  // Status map: every task state reachable.
  if (up.poll?.status_map) {
    const mapped = new Set(Object.values(up.poll.status_map));
    for (const s of TASK_STATUSES) {
      if (mapped.has(s)) continue;
      const fatal = s === 'completed' || s === 'failed';
      at('status-map', `${p}/upstream/poll/status_map`, fatal
        ? `no upstream status maps onto "${s}": tasks can never ${s === 'completed' ? 'complete' : 'fail'} (only the safety net would end them)`
        : `no upstream status maps onto "${s}": tasks will skip that state`, fatal ? 'error' : 'warning');
    }
  }

  // Examples: the route's own validation must accept each one.
  const examples: { pointer: string; value: unknown }[] = [
    ...(req?.examples ?? []).map((value, j) => ({ pointer: `${p}/request/examples/${j}`, value })),
    ...(Array.isArray((req?.schema as { examples?: unknown })?.examples) ? ((req!.schema as { examples: unknown[] }).examples).map((value, j) => ({ pointer: `${p}/request/schema/examples/${j}`, value })) : []),
  ];
  let validate: RequestValidator | undefined;
  if (req && refsOk) {
    try {
      validate = routeValidator(c.ajv, vendor, r);
    } catch {
      validate = undefined; // reported by the ref/expression checks or the engine compiler
    }
  }
  if (req && examples.length === 0 && (r.kind === 'async' || pricing)) {
    at('example', `${p}/request`, 'no request.examples: pricing cannot be tried and the API docs show no example', 'warning');
  }
  const valid: { pointer: string; value: Record<string, unknown> }[] = [];
  if (validate) {
    for (const ex of examples) {
      try {
        valid.push({ pointer: ex.pointer, value: await validate(structuredClone(ex.value)) });
      } catch (err) {
        if (!(err instanceof GatewayError)) throw err;
        const fields = err.errors.map((e) => `${e.detail}${e.pointer ? ` (at ${e.pointer})` : ''}`).join('; ');
        at('example', ex.pointer, `the route's own validation refuses this example (${err.code}): ${fields || err.detail}`);
      }
    }
  }

  // Fixtures: run end to end as the gateway and the sandbox would play them (serve refuses the same errors).
  let succeededResult: Record<string, unknown> | undefined;
  let succeededFixture: unknown;
  if (r.kind === 'async') {
    const run = await runRouteFixtures(r, p, v.fixtures.get(r.id), `${c.fixtureDir}/${r.id}`, valid[0]?.value ?? {});
    for (const f of run.findings) at('fixture', f.pointer, f.message, f.severity);
    succeededResult = run.result;
    succeededFixture = run.final;
  }

  // Pricing: compiles, and prices every valid example (hold, and settle on the succeeded fixture).
  if (pricing) {
    let plan: PricePlan | undefined;
    try {
      plan = compileRoutePricing(pricing, { creditsPerUsd: c.creditsPerUsd, label: `${r.method} /vendors/${vendor}${r.path}` });
    } catch (err) {
      if (!(err instanceof PricingConfigError)) throw err;
      // An expression that does not parse is already reported by the expression check.
      if (!/does not parse/.test(err.message)) at('pricing', `${p}/pricing${err.pointer}`, err.message);
    }
    if (plan) {
      for (const ex of valid) {
        try {
          await plan.quoteHold(ex.value);
        } catch (err) {
          at('pricing', `${p}/pricing`, `cannot price the example at ${ex.pointer}: ${reason(err)}`);
          continue;
        }
        if (succeededResult) {
          try {
            await plan.quoteSettle(ex.value, succeededResult, succeededFixture);
          } catch (err) {
            at('pricing', `${p}/pricing/settle_quantity`, `cannot settle the example at ${ex.pointer} with the succeeded fixture's result: ${reason(err)}`);
          }
        }
      }
    }
  }

  // Mappings run on the examples: the upstream body builds, and the sandbox can steer it.
  if (r.kind === 'async' && submitBody && valid.length) {
    for (const ex of valid) {
      const built = await tryEval(submitBody, ex.value);
      if (built.error) {
        at('expression', `${p}/upstream/submit/body`, `fails on the example at ${ex.pointer}: ${built.error}`);
        continue;
      }
      // The sandbox fills {{prompt}} in fixtures with what sandbox.prompt reads from the upstream body.
      const usesPrompt = [...(v.fixtures.get(r.id)?.values() ?? [])].some((f) => JSON.stringify(f)?.includes('{{prompt}}'));
      if (c.sandboxPrompt && usesPrompt) {
        const prompt = await tryEval(c.sandboxPrompt, built.value);
        if (prompt.error || typeof prompt.value !== 'string') {
          at('fixture', v.descriptor.sandbox?.prompt ? '/sandbox/prompt' : `${p}/upstream/submit/body`, `fixtures use {{prompt}}, but sandbox.prompt (\`${c.sandboxPrompt.source}\`) reads ${prompt.error ? 'nothing' : describe(prompt.value)} from the upstream body built from ${ex.pointer} (set sandbox.prompt)`, 'warning');
        }
      }
      break;
    }
  }
}

function safeCompile(source: string): CompiledExpr | undefined {
  try {
    return compileExpr(source);
  } catch {
    return undefined;
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

// ---------------------------------------------------------------------------------------------

/** The engine's own compiler, as `serve` runs it; problems the checks above already named are dropped. */
function engineCompile(vendors: readonly LoadedVendor[], config: GatewayConfig | undefined, already: readonly Finding[]): Finding[] {
  if (vendors.length === 0) return [];
  const cfg = structuredClone(config ?? fallbackConfig(dirname(vendors[0]!.file)));
  const sandbox = cfg.sandbox.enabled;
  const dispatcher = createUpstreamAgent();
  let problems: Problem[] = [];
  try {
    compileVendors(vendors, {
      ajv: createAjv({ useDefaults: true }),
      config: cfg,
      clock: systemClock,
      dispatcher,
      baseUrlFor: (v, m) => (sandbox ? `http://sandbox.invalid/${v}` : (m?.base_url ?? cfg.upstreams[v]?.base_url)),
    });
  } catch (err) {
    if (err instanceof LoadError) problems = err.problems;
    else problems = [{ file: vendors[0]!.source.file, line: 1, col: 1, pointer: '', message: `the engine failed to compile the descriptors: ${(err as Error).message}` }];
  } finally {
    void dispatcher.close();
  }
  const covered = (p: Problem) =>
    already.some((f) => f.severity === 'error' && f.file === p.file && (f.pointer === p.pointer || f.pointer.startsWith(`${p.pointer}/`)));
  return problems.filter((p) => !covered(p)).map((p) => finding(p, 'engine'));
}
