// Compiles loaded descriptors, once, into frozen route plans: request validators (Ajv),
// expressions (JSONata), the upstream client of each vendor. Nothing reads a descriptor per
// request afterwards. Every problem found here is positioned in its descriptor file.
// Each route kind has its own compiler: async-route.ts (async, status), proxy-route.ts (sync, stream).
import { LoadError, type Problem } from '../config/yaml-source.ts';
import { errorNamed } from '../errors/catalogue.ts';
import { createAuth, MissingCredentialError } from '../upstream/auth-schemes.ts';
import { UpstreamClient } from '../upstream/client.ts';
import { UpstreamPool, type PoolMember } from '../upstream/pool.ts';
import type { UpstreamMemberConfig } from '../config/types.ts';
import type { CompiledErrorRule } from '../upstream/failure.ts';
import { compileAsyncRoute, compileStatusRoute, type AsyncRoutePlan, type StatusRoutePlan } from './async-route.ts';
import type { CompileContext, VendorCompileContext } from './compile-context.ts';
import { compileExpr, ExprError, type CompiledExpr } from '../util/expr.ts';
import type { LoadedVendor } from './load-descriptors.ts';
import { compileProxyRoute, type ProxyRoutePlan } from './proxy-route.ts';
import type { ErrorMapEntry } from './types.ts';
import { scaledTimeout } from '../util/clock.ts';

export type { AsyncRoutePlan, StatusRoutePlan, ProxyRoutePlan, CompileContext };

export interface VendorPlan {
  readonly vendor: string;
  readonly title: string;
  /** The first member's client (model lists, tools); tasks and proxied calls go through `pool`. */
  readonly client: UpstreamClient;
  readonly pool: UpstreamPool;
  readonly routes: readonly RoutePlan[];
  readonly loaded: LoadedVendor;
}

export type RoutePlan = AsyncRoutePlan | StatusRoutePlan | ProxyRoutePlan;

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
    (entries ?? []).map((e, i) => ({ when: expr(`${pointer}/${i}/when`, e.when)!, error: errorNamed(e.code), detail: expr(`${pointer}/${i}/detail`, e.detail) }));

  const upstreamConfig = ctx.config.upstreams[d.vendor] ?? {};
  // The single form is a pool of one, member "default".
  const memberConfigs: UpstreamMemberConfig[] = upstreamConfig.members ?? [
    { id: 'default', base_url: upstreamConfig.base_url, credentials: upstreamConfig.credentials, weight: 1 },
  ];
  const members: PoolMember[] = memberConfigs.map((m, index) => {
    const where = upstreamConfig.members ? `upstreams.${d.vendor}.members[${index}]` : `upstreams.${d.vendor}`;
    const baseUrl = ctx.baseUrlFor(d.vendor, { index, base_url: m.base_url });
    if (!baseUrl) at('/upstream', `no base URL for ${d.vendor}: set ${where}.base_url in the config (or turn the sandbox on)`);
    let auth;
    try {
      auth = createAuth(d.upstream.auth, credentialsFor(m.credentials ?? {}, ctx.config.sandbox.enabled), ctx.clock);
    } catch (err) {
      if (!(err instanceof MissingCredentialError)) throw err;
      at('/upstream/auth', `${err.message}: set ${where}.credentials in the config`);
      auth = { headers: () => ({}) };
    }
    const client = new UpstreamClient({
      vendor: d.vendor,
      baseUrl: baseUrl ?? 'http://invalid.invalid',
      auth,
      timeoutMs: scaledTimeout(m.timeout_ms ?? upstreamConfig.timeout_ms ?? d.upstream.timeout_ms ?? 30_000, ctx.config.timing.scale),
      headers: d.upstream.headers,
      dispatcher: ctx.dispatcher,
    });
    return { id: m.id, weight: m.weight ?? 1, client };
  });
  const breaker = upstreamConfig.breaker;
  const pool = new UpstreamPool({
    vendor: d.vendor,
    members,
    breaker: { failures: breaker?.failures ?? 3, cooldownMs: scaledTimeout(breaker?.cooldown_ms ?? 30_000, ctx.config.timing.scale) },
    clock: ctx.clock,
  });
  const client = pool.first.client;
  const vendorRules = errorRules('/upstream/errors', d.upstream.errors);

  const vc: VendorCompileContext = { ctx, vendor: d.vendor, client, pool, submitIdempotencyHeader: d.upstream.submit_idempotency_header, vendorRules, expr, errorRules, at, scale: ctx.config.timing.scale, siblings: d.routes };
  const routes: RoutePlan[] = d.routes.map((r, i): RoutePlan => {
    const p = `/routes/${i}`;
    if (r.kind === 'status') return compileStatusRoute(vc, r, p);
    if (r.kind === 'async') return compileAsyncRoute(vc, r, p);
    return compileProxyRoute(vc, r, p);
  });

  expr('/sandbox/prompt', d.sandbox?.prompt); // checked here; the sandbox simulator reads it
  return Object.freeze({
    vendor: d.vendor,
    title: d.title ?? d.vendor,
    client,
    pool,
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

/** The sandbox simulator accepts any credentials: missing ones get placeholders there. */
function credentialsFor(configured: Record<string, string>, sandbox: boolean): Record<string, string> {
  if (!sandbox) return configured;
  return new Proxy({ ...configured }, { get: (t, k) => t[k as string] || `sandbox-${String(k)}` });
}
