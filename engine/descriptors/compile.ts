// Compiles loaded descriptors, once, into frozen route plans: request validators (Ajv),
// expressions (JSONata), the upstream client of each vendor. Nothing reads a descriptor per
// request afterwards. Every problem found here is positioned in its descriptor file.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { Dispatcher } from 'undici';
import { LoadError, type Problem } from '../config/yaml-source.ts';
import type { GatewayConfig } from '../config/types.ts';
import { compileRequestValidator, type RequestValidator } from '../validation/request-validator.ts';
import { createAuth, MissingCredentialError } from '../upstream/auth-schemes.ts';
import { UpstreamClient } from '../upstream/client.ts';
import type { CompiledErrorRule } from '../upstream/failure.ts';
import { SCHEMA_BASE } from '../validation/ajv.ts';
import type { Clock } from '../util/clock.ts';
import { compileExpr, ExprError, type CompiledExpr } from './expr.ts';
import type { LoadedVendor } from './load-descriptors.ts';
import type { ErrorMapEntry, RouteSpec, TaskStatus } from './types.ts';

export interface VendorPlan {
  readonly vendor: string;
  readonly title: string;
  readonly client: UpstreamClient;
  readonly sandboxPrompt: CompiledExpr;
  readonly routes: readonly RoutePlan[];
  readonly loaded: LoadedVendor;
}

export type RoutePlan = AsyncRoutePlan | StatusRoutePlan;

export interface AsyncRoutePlan {
  readonly kind: 'async';
  /** `<vendor>/<route id>`: how tasks remember their route. */
  readonly key: string;
  readonly id: string;
  readonly vendor: string;
  readonly modelName: string;
  readonly method: 'POST';
  /** Client path of creation, e.g. /vendors/provider_b/v1/tob/diffusion */
  readonly path: string;
  readonly successStatus: number;
  readonly validate: RequestValidator;
  readonly validationShape: 'problem' | 'task_info';
  readonly maxBodyBytes: number;
  readonly submit: {
    readonly method: string;
    readonly path: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly body: CompiledExpr;
    readonly taskId: CompiledExpr;
    readonly accept?: CompiledExpr;
    readonly errorMessage?: CompiledExpr;
  };
  readonly poll: {
    readonly method: string;
    readonly path: string;
    readonly intervalMs: number;
    readonly status: CompiledExpr;
    readonly statusMap: Readonly<Record<string, TaskStatus>>;
    readonly errorMessage?: CompiledExpr;
    readonly errorCode?: CompiledExpr;
  };
  readonly result: ReadonlyArray<readonly [string, CompiledExpr]>;
  readonly errorRules: readonly CompiledErrorRule[];
  readonly maxExecutionMs: number;
  readonly pricing: Readonly<Record<string, unknown>>;
  readonly spec: RouteSpec;
  readonly client: UpstreamClient;
}

export interface StatusRoutePlan {
  readonly kind: 'status';
  readonly key: string;
  readonly id: string;
  readonly vendor: string;
  readonly path: string;
  /** Keys of the async routes whose tasks this GET may read. */
  readonly tasksOf: ReadonlySet<string>;
}

export interface CompileContext {
  ajv: Ajv2020;
  config: GatewayConfig;
  clock: Clock;
  dispatcher: Dispatcher;
  /** Base URL of each vendor's upstream: config, or the sandbox simulator when it is on. */
  baseUrlFor(vendor: string): string | undefined;
}

const DEFAULT_MAX_BODY = 1024 * 1024;

export function compileVendors(loaded: readonly LoadedVendor[], ctx: CompileContext): VendorPlan[] {
  const problems: Problem[] = [];
  const plans = loaded.map((v) => compileVendor(v, ctx, problems));
  problems.push(...routeCollisions(plans));
  if (problems.length) throw new LoadError(problems);
  return plans;
}

function compileVendor(v: LoadedVendor, ctx: CompileContext, problems: Problem[]): VendorPlan {
  const d = v.descriptor;
  const at = (pointer: string, message: string) => problems.push(v.source.problem(pointer, message));
  const expr = (pointer: string, source: string | undefined): CompiledExpr | undefined => {
    if (source === undefined) return undefined;
    try {
      return compileExpr(source);
    } catch (err) {
      at(pointer, `expression does not compile: ${(err as ExprError).message}${(err as ExprError).position !== undefined ? ` (at character ${(err as ExprError).position})` : ''}`);
      return compileExpr('null');
    }
  };
  const errorRules = (pointer: string, entries: readonly ErrorMapEntry[] | undefined): CompiledErrorRule[] =>
    (entries ?? []).map((e, i) => ({ when: expr(`${pointer}/${i}/when`, e.when)!, code: e.code, detail: expr(`${pointer}/${i}/detail`, e.detail) }));

  const upstreamConfig = ctx.config.upstreams[d.vendor] ?? {};
  const baseUrl = ctx.baseUrlFor(d.vendor);
  if (!baseUrl) at('/upstream', `no base URL for ${d.vendor}: set upstreams.${d.vendor}.base_url in the config (or turn the sandbox on)`);
  let auth;
  try {
    auth = createAuth(d.upstream.auth, upstreamConfig.credentials ?? {}, ctx.clock);
  } catch (err) {
    if (!(err instanceof MissingCredentialError)) throw err;
    at('/upstream/auth', `${err.message}: set upstreams.${d.vendor}.credentials in the config`);
    auth = { headers: () => ({}) };
  }
  const client = new UpstreamClient({
    baseUrl: baseUrl ?? 'http://invalid.invalid',
    auth,
    timeoutMs: upstreamConfig.timeout_ms ?? d.upstream.timeout_ms ?? 30_000,
    headers: d.upstream.headers,
    dispatcher: ctx.dispatcher,
  });
  const vendorRules = errorRules('/upstream/errors', d.upstream.errors);
  const scale = ctx.config.timing.scale;

  const routes: RoutePlan[] = d.routes.map((r, i): RoutePlan => {
    const p = `/routes/${i}`;
    const key = `${d.vendor}/${r.id}`;
    const path = `/vendors/${d.vendor}${r.path}`;
    if (r.kind === 'status') {
      for (const [j, id] of (r.tasks_of ?? []).entries()) {
        if (!d.routes.some((o) => o.id === id && o.kind === 'async')) at(`${p}/tasks_of/${j}`, `no async route "${id}" in this descriptor`);
      }
      return Object.freeze({ kind: 'status', key, id: r.id, vendor: d.vendor, path, tasksOf: new Set((r.tasks_of ?? []).map((id) => `${d.vendor}/${id}`)) });
    }
    if (r.kind !== 'async') {
      at(`${p}/kind`, `route kind "${r.kind}" is not supported by this engine yet`);
    }
    const req = r.request!;
    let validate: RequestValidator = async () => ({});
    try {
      validate = compileRequestValidator(ctx.ajv, `${SCHEMA_BASE}/request/${d.vendor}/${r.id}.json`, req.schema, req.rules ?? []);
    } catch (err) {
      if (err instanceof ExprError) at(`${p}/request/rules`, `rule does not compile: ${err.message}`);
      else at(`${p}/request/schema`, `request schema does not compile: ${(err as Error).message}`);
    }
    (req.rules ?? []).forEach((rule, j) => expr(`${p}/request/rules/${j}/when`, rule.when));
    const up = r.upstream ?? {};
    if (!up.submit) at(`${p}/upstream`, 'an async route needs upstream.submit');
    if (!up.poll) at(`${p}/upstream`, 'an async route needs upstream.poll');
    const submit = up.submit ?? { path: '/', body: 'null', task_id: 'null' };
    const poll = up.poll ?? { path: '/', status: 'null', status_map: {} };
    if (!poll.path.includes('{upstream_task_id}')) at(`${p}/upstream/poll/path`, 'the poll path must contain {upstream_task_id}');
    return Object.freeze({
      kind: 'async',
      key,
      id: r.id,
      vendor: d.vendor,
      modelName: r.model_name ?? r.id,
      method: 'POST',
      path,
      successStatus: r.status ?? 202,
      validate,
      validationShape: req.validation_errors ?? 'problem',
      maxBodyBytes: req.max_body_bytes ?? DEFAULT_MAX_BODY,
      submit: Object.freeze({
        method: submit.method ?? 'POST',
        path: submit.path,
        headers: submit.headers ?? {},
        body: expr(`${p}/upstream/submit/body`, submit.body)!,
        taskId: expr(`${p}/upstream/submit/task_id`, submit.task_id)!,
        accept: expr(`${p}/upstream/submit/accept`, submit.accept),
        errorMessage: expr(`${p}/upstream/submit/error_message`, submit.error_message),
      }),
      poll: Object.freeze({
        method: poll.method ?? 'GET',
        path: poll.path,
        intervalMs: Math.max(1, Math.round((poll.interval_ms ?? 2000) * scale)),
        status: expr(`${p}/upstream/poll/status`, poll.status)!,
        statusMap: Object.freeze({ ...poll.status_map }),
        errorMessage: expr(`${p}/upstream/poll/error_message`, poll.error_message),
        errorCode: expr(`${p}/upstream/poll/error_code`, poll.error_code),
      }),
      result: Object.entries(r.result ?? {}).map(([name, src]) => [name, expr(`${p}/result/${name}`, src)!] as const),
      errorRules: [...errorRules(`${p}/upstream/errors`, up.errors), ...vendorRules],
      maxExecutionMs: Math.max(1, Math.round((r.max_execution_ms ?? 600_000) * scale)),
      pricing: Object.freeze({ ...(r.pricing ?? {}) }),
      spec: r,
      client,
    });
  });

  return Object.freeze({
    vendor: d.vendor,
    title: d.title ?? d.vendor,
    client,
    sandboxPrompt: expr('/sandbox/prompt', d.sandbox?.prompt ?? 'prompt')!,
    routes: Object.freeze(routes),
    loaded: v,
  });
}

/** Two routes (of any vendors) answering the same method and path. */
function routeCollisions(plans: readonly VendorPlan[]): Problem[] {
  const seen = new Map<string, string>();
  const problems: Problem[] = [];
  for (const v of plans) {
    v.routes.forEach((r, i) => {
      const sigs = r.kind === 'status' ? [`GET ${r.path}/:task_id`] : [`${r.method} ${r.path}`, `GET ${r.path}/:task_id`];
      for (const sig of sigs) {
        const other = seen.get(sig);
        if (other) problems.push(v.loaded.source.problem(`/routes/${i}/path`, `${sig} is already served by ${other}`));
        else seen.set(sig, r.key);
      }
    });
  }
  return problems;
}
