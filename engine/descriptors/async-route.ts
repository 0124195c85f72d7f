// Compiles `kind: async` routes (POST creates a task; GET <path>/{task_id} reads it) and
// `kind: status` routes (a GET that reads tasks created by other async routes).
import { compileRouteValidator, type RequestValidator } from '../validation/request-validator.ts';
import type { MediaRule } from '../media/checks.ts';
import { SCHEMA_BASE } from '../validation/ajv.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { CompiledErrorRule } from '../upstream/failure.ts';
import { placeholdersOf } from '../upstream/answer-paths.ts';
import { compilePricing, PricingConfigError, type PricingBlock, type PricePlan } from './pricing.ts';
import { ExprError, type CompiledExpr } from '../util/expr.ts';
import type { VendorCompileContext } from './compile-context.ts';
import type { TaskStatus } from '../vocabulary/task-status.ts';
import type { RouteSpec } from './types.ts';

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
  /** Media checks of the request (engine/media/checks.ts). */
  readonly media: readonly MediaRule[];
  /** The request may carry large Base64 images: its body is read after auth, large ones parsed in the media pool (engine/http/media-body.ts). */
  readonly mediaBody: boolean;
  readonly submit: {
    readonly method: string;
    readonly path: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly body: CompiledExpr;
    readonly taskId: CompiledExpr;
    readonly accept?: CompiledExpr;
    readonly errorMessage?: CompiledExpr;
    /** The provider's idempotency header (descriptor upstream.submit_idempotency_header): sent with the task id on every member tried. */
    readonly idempotencyHeader?: string;
    /** upstream.submit.urls: URLs the answer names for the task, kept as paths under the member's base URL ({url:<name>}). */
    readonly urls: ReadonlyArray<readonly [string, CompiledExpr]>;
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
  /** The upstream cancel request, when the descriptor declares one (TaskLifecycle.cancelUpstream sends it). */
  readonly cancel?: {
    readonly method: string;
    readonly path: string;
    /** On the task's request, $upstream_task_id bound. */
    readonly body?: CompiledExpr;
  };
  /** upstream.cancel as a policy: `request` (the cancel above), `local` (ours only), `none` (a client's cancel is refused, 2006). */
  readonly cancelPolicy: 'request' | 'local' | 'none';
  /** upstream.result: the second request that fetches a completed task's output. */
  readonly resultFetch?: { readonly method: string; readonly path: string };
  /** The provider's completion callback (descriptor upstream.callback): used when server.public_base_url is set. */
  readonly callback?: {
    /** The submit body's path to the callback URL, split at the dots (absent: urlQuery). */
    readonly urlField?: readonly string[];
    /** The submit request's query parameter that takes the callback URL. */
    readonly urlQuery?: string;
    /** The status in the pushed body (mapped by poll.statusMap). */
    readonly status: CompiledExpr;
  };
  /** Result fields: name, expression, optional (a missing optional field is left out). */
  readonly result: ReadonlyArray<readonly [string, CompiledExpr, boolean]>;
  /** Hosts (lower case) whose result files are downloaded with the route's upstream auth (descriptor result_download.auth_hosts). */
  readonly resultAuthHosts: ReadonlySet<string>;
  readonly errorRules: readonly CompiledErrorRule[];
  readonly maxExecutionMs: number;
  readonly pricing: PricePlan;
  readonly spec: RouteSpec;
  /** The vendor's first pool member's client; calls go through `pool`. */
  readonly client: UpstreamClient;
  readonly pool: UpstreamPool;
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

const DEFAULT_MAX_BODY = 1024 * 1024;

export function compileStatusRoute(vc: VendorCompileContext, r: RouteSpec, p: string): StatusRoutePlan {
  for (const [j, id] of (r.tasks_of ?? []).entries()) {
    if (!vc.siblings.some((o) => o.id === id && o.kind === 'async')) vc.at(`${p}/tasks_of/${j}`, `no async route "${id}" in this descriptor`);
  }
  return Object.freeze({
    kind: 'status',
    key: `${vc.vendor}/${r.id}`,
    id: r.id,
    vendor: vc.vendor,
    path: `/vendors/${vc.vendor}${r.path}`,
    tasksOf: new Set((r.tasks_of ?? []).map((id) => `${vc.vendor}/${id}`)),
  });
}

export function compileAsyncRoute(vc: VendorCompileContext, r: RouteSpec, p: string): AsyncRoutePlan {
  const { expr, at } = vc;
  const req = r.request!;
  let validate: RequestValidator = async () => ({});
  try {
    validate = compileRouteValidator(vc.ctx.ajv, `${SCHEMA_BASE}/request/${vc.vendor}/${r.id}.json`, req);
  } catch (err) {
    if (!(err instanceof ExprError)) at(`${p}/request/schema`, `request schema does not compile: ${(err as Error).message}`);
  }
  (req.rules ?? []).forEach((rule, j) => {
    expr(`${p}/request/rules/${j}/when`, rule.when);
    expr(`${p}/request/rules/${j}/each`, rule.each);
  });
  const up = r.upstream ?? {};
  if (!up.submit) at(`${p}/upstream`, 'an async route needs upstream.submit');
  if (!up.poll) at(`${p}/upstream`, 'an async route needs upstream.poll');
  const submit = up.submit ?? { path: '/', body: 'null', task_id: 'null' };
  const poll = up.poll ?? { path: '/{upstream_task_id}', status: 'null', status_map: {} };
  const cancel = typeof up.cancel === 'object' ? up.cancel : undefined;
  checkTaskPaths(at, up, submit, poll, cancel, p);
  return Object.freeze({
    kind: 'async',
    key: `${vc.vendor}/${r.id}`,
    id: r.id,
    vendor: vc.vendor,
    modelName: r.model_name ?? r.id,
    method: 'POST',
    path: `/vendors/${vc.vendor}${r.path}`,
    successStatus: r.status ?? 202,
    validate,
    validationShape: req.validation_errors ?? 'problem',
    maxBodyBytes: req.max_body_bytes ?? DEFAULT_MAX_BODY,
    media: Object.freeze([...(req.media ?? [])]),
    mediaBody: (req.media ?? []).some((m) => m.kind === 'image'),
    submit: Object.freeze({
      method: submit.method ?? 'POST',
      path: submit.path,
      headers: submit.headers ?? {},
      body: expr(`${p}/upstream/submit/body`, submit.body)!,
      taskId: expr(`${p}/upstream/submit/task_id`, submit.task_id)!,
      accept: expr(`${p}/upstream/submit/accept`, submit.accept),
      errorMessage: expr(`${p}/upstream/submit/error_message`, submit.error_message),
      idempotencyHeader: vc.submitIdempotencyHeader,
      urls: Object.entries(submit.urls ?? {}).map(([name, src]) => [name, expr(`${p}/upstream/submit/urls/${name}`, src)!] as const),
    }),
    poll: Object.freeze({
      method: poll.method ?? 'GET',
      path: poll.path,
      intervalMs: Math.max(1, Math.round((poll.interval_ms ?? 2000) * vc.scale)),
      status: expr(`${p}/upstream/poll/status`, poll.status)!,
      statusMap: Object.freeze({ ...poll.status_map }),
      errorMessage: expr(`${p}/upstream/poll/error_message`, poll.error_message),
      errorCode: expr(`${p}/upstream/poll/error_code`, poll.error_code),
    }),
    cancel: cancel && Object.freeze({ method: cancel.method ?? 'POST', path: cancel.path, body: expr(`${p}/upstream/cancel/body`, cancel.body) }),
    cancelPolicy: cancel ? 'request' : up.cancel === 'none' ? 'none' : 'local',
    resultFetch: up.result && Object.freeze({ method: up.result.method ?? 'GET', path: up.result.path }),
    callback: up.callback && Object.freeze({
      urlField: up.callback.url_field === undefined ? undefined : Object.freeze(up.callback.url_field.split('.')),
      urlQuery: up.callback.url_query,
      status: expr(`${p}/upstream/callback/status`, up.callback.status)!,
    }),
    result: Object.entries(r.result ?? {}).map(([name, f]) => {
      const spec = typeof f === 'string' ? { from: f, optional: false } : f;
      return [name, expr(`${p}/result/${name}${typeof f === 'string' ? '' : '/from'}`, spec.from)!, spec.optional ?? false] as const;
    }),
    resultAuthHosts: new Set((r.result_download?.auth_hosts ?? []).map((h) => h.toLowerCase())),
    errorRules: [...vc.errorRules(`${p}/upstream/errors`, up.errors), ...vc.vendorRules],
    maxExecutionMs: Math.max(1, Math.round((r.max_execution_ms ?? 600_000) * vc.scale)),
    pricing: pricingPlan(vc, r, p),
    spec: r,
    client: vc.client,
    pool: vc.pool,
  });
}

/** Every later call (poll, result, cancel) must name the task; `{url:<name>}` must name a URL the submit answer gives. */
function checkTaskPaths(at: VendorCompileContext['at'], up: NonNullable<RouteSpec['upstream']>, submit: { urls?: Record<string, string> }, poll: { path: string }, cancel: { path: string; body?: string } | undefined, p: string): void {
  const urlNames = Object.keys(submit.urls ?? {});
  const pathOk = (pointer: string, template: string) => {
    const names = placeholdersOf(template);
    for (const n of names) {
      if (n.startsWith('url:') && !urlNames.includes(n.slice(4))) at(pointer, `{${n}} names no URL of upstream.submit.urls (it has: ${urlNames.join(', ') || 'none'})`);
    }
    return names.length > 0;
  };
  if (!pathOk(`${p}/upstream/poll/path`, poll.path)) at(`${p}/upstream/poll/path`, 'the poll path must name the task: {upstream_task_id}, {upstream_task_id:path} or {url:<name>}');
  if (up.result && !pathOk(`${p}/upstream/result/path`, up.result.path)) at(`${p}/upstream/result/path`, 'the result path must name the task: {upstream_task_id}, {upstream_task_id:path} or {url:<name>}');
  if (cancel && !pathOk(`${p}/upstream/cancel/path`, cancel.path) && !cancel.body?.includes('$upstream_task_id')) {
    at(`${p}/upstream/cancel`, 'the cancel request must name the task: a placeholder in its path, or $upstream_task_id in its body');
  }
}

/** The route's price plan; a block that cannot compile is reported at its pointer. */
function pricingPlan(vc: VendorCompileContext, r: RouteSpec, p: string): PricePlan {
  const creditsPerUsd = Number((vc.ctx.config.billing as { credits_per_usd?: number }).credits_per_usd ?? 100);
  try {
    return compilePricing(r.pricing as unknown as PricingBlock, { creditsPerUsd, label: `POST /vendors/${vc.vendor}${r.path}` });
  } catch (err) {
    if (!(err instanceof PricingConfigError)) throw err;
    vc.at(`${p}/pricing${err.pointer}`, err.message);
    return compilePricing({ unit: 'task', unit_price: '0' }, { creditsPerUsd });
  }
}
