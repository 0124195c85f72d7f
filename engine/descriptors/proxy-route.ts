// Compiles `kind: sync` and `kind: stream` routes: requests validated, passed to the upstream
// and answered at once (JSON) or relayed as server-sent events (chat completions, model lists).
// Everything the hot path needs is decided here, once: the validator, the upstream origin and
// path, the fixed headers, getters for model and usage, token prices, list filters.
import type { Dispatcher } from 'undici';
import { ExprError } from '../util/expr.ts';
import { compileGetter, compileItemsWalker, globMatcher, topKey, type Getter } from './json-path.ts';
import { compileTokenPrices, type TokenPricer } from './token-prices.ts';
import type { AuthPlugin } from '../upstream/auth-schemes.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { CompiledErrorRule } from '../upstream/failure.ts';
import { SCHEMA_BASE } from '../validation/ajv.ts';
import { compileRequestValidator, type RequestValidator } from '../validation/request-validator.ts';
import type { VendorCompileContext } from './compile-context.ts';
import type { RouteSpec } from './types.ts';

export interface ProxyRoutePlan {
  readonly kind: 'sync' | 'stream';
  readonly key: string;
  readonly id: string;
  readonly vendor: string;
  readonly method: 'GET' | 'POST';
  /** Client path, e.g. /vendors/provider_c/v1/chat/completions */
  readonly path: string;
  /** Extra absolute client paths (e.g. /v1/chat/completions). */
  readonly aliases: readonly string[];
  readonly validate?: RequestValidator;
  readonly maxBodyBytes: number;
  readonly upstream: {
    readonly origin: string;
    /** Path on the upstream origin (base URL path + proxy.path). */
    readonly path: string;
    /** proxy.path: the path under the base URL (for UpstreamClient calls). */
    readonly relPath: string;
    readonly timeoutMs: number;
    /** Sent on every call, before the auth plug-in's headers and the traceparent. */
    readonly headers: Readonly<Record<string, string>>;
    readonly auth: AuthPlugin;
    readonly dispatcher: Dispatcher;
    readonly client: UpstreamClient;
    /** The vendor's pool, and where each of its members is reached for this route (the first is the fields above). */
    readonly pool: UpstreamPool;
    readonly targets: ReadonlyMap<string, ProxyTarget>;
  };
  readonly model?: Getter;
  readonly stream?: { readonly flag: Getter; readonly usageOption?: string; readonly usageOptionValue?: Getter };
  readonly usage?: { readonly key: string; readonly input: Getter; readonly output: Getter; readonly cachedInput?: Getter };
  readonly pricer?: TokenPricer;
  /** With a pricer: what sizes the credit hold written before the upstream call (engine/proxy/hold.ts). */
  readonly hold?: { readonly maxTokens: readonly Getter[]; readonly choices: Getter; readonly defaultOutputTokens: number };
  readonly dropMedia?: {
    readonly walk: ReturnType<typeof compileItemsWalker>;
    readonly url: Getter;
    readonly maxBytes: number;
    /** A body shorter than this cannot hold an item over maxBytes (Base64 is 4/3 larger). */
    readonly minBodyBytes: number;
  };
  readonly errorObject?: Getter;
  readonly passHeaders: readonly string[];
  readonly list?: { readonly itemsPath: string; readonly items: Getter; readonly id: Getter; readonly keep: (id: string) => boolean };
  readonly cacheMs: number;
  readonly errorRules: readonly CompiledErrorRule[];
}

const DEFAULT_MAX_BODY = 1024 * 1024;
/** Output tokens held for a priced request that names no bound (descriptor proxy.hold.default_output_tokens). */
export const DEFAULT_HOLD_OUTPUT_TOKENS = 4096;

/** One pool member as a proxied route reaches it. */
export interface ProxyTarget {
  readonly origin: string;
  readonly path: string;
  readonly timeoutMs: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly auth: AuthPlugin;
  readonly dispatcher: Dispatcher;
}

export function compileProxyRoute(vc: VendorCompileContext, r: RouteSpec, p: string): ProxyRoutePlan {
  const px = r.proxy ?? { path: '/' };
  const creditsPerUsd = Number((vc.ctx.config.billing as { credits_per_usd?: number }).credits_per_usd ?? 100);

  const validate = checkedValidator(vc, r, px, p);
  const pricedBy = pricedByOf(vc, px, p, creditsPerUsd);
  const targets = proxyTargets(vc, px);
  const first = targets.get(vc.pool.first.id)!;
  const include = px.list?.include ? globMatcher(px.list.include) : () => true;
  const exclude = px.list?.exclude ? globMatcher(px.list.exclude) : () => false;

  return Object.freeze({
    kind: r.kind as 'sync' | 'stream',
    key: `${vc.vendor}/${r.id}`,
    id: r.id,
    vendor: vc.vendor,
    method: r.method,
    path: `/vendors/${vc.vendor}${r.path}`,
    aliases: Object.freeze([...(r.aliases ?? [])]),
    validate,
    maxBodyBytes: r.request?.max_body_bytes ?? DEFAULT_MAX_BODY,
    upstream: Object.freeze({
      ...first,
      relPath: px.path,
      client: vc.client,
      pool: vc.pool,
      targets,
    }),
    model: px.model || r.method === 'POST' ? compileGetter(px.model ?? 'model') : undefined,
    stream: px.stream
      ? Object.freeze({
          flag: compileGetter(px.stream.flag),
          usageOption: px.stream.usage_option,
          usageOptionValue: px.stream.usage_option ? compileGetter(px.stream.usage_option) : undefined,
        })
      : undefined,
    usage: px.usage
      ? Object.freeze({
          key: topKey(px.usage.input),
          input: compileGetter(px.usage.input),
          output: compileGetter(px.usage.output),
          cachedInput: px.usage.cached_input ? compileGetter(px.usage.cached_input) : undefined,
        })
      : undefined,
    pricer: px.token_prices ? compileTokenPrices(px.token_prices, creditsPerUsd) : undefined,
    hold: px.token_prices
      ? Object.freeze({
          maxTokens: Object.freeze((px.hold?.max_tokens ?? ['max_completion_tokens', 'max_tokens']).map(compileGetter)),
          choices: compileGetter(px.hold?.choices ?? 'n'),
          defaultOutputTokens: px.hold?.default_output_tokens ?? DEFAULT_HOLD_OUTPUT_TOKENS,
        })
      : undefined,
    dropMedia: px.drop_inline_media
      ? Object.freeze({
          walk: compileItemsWalker(px.drop_inline_media.items),
          url: compileGetter(px.drop_inline_media.url),
          maxBytes: px.drop_inline_media.max_bytes,
          minBodyBytes: Math.floor((px.drop_inline_media.max_bytes * 4) / 3),
        })
      : undefined,
    errorObject: px.error_object ? compileGetter(px.error_object) : undefined,
    passHeaders: Object.freeze([...(px.pass_headers ?? [])]),
    list: px.list
      ? Object.freeze({
          itemsPath: px.list.items,
          items: compileGetter(px.list.items),
          id: compileGetter(px.list.id),
          keep: (id: string) => include(id) && !exclude(id) && (pricedBy ? pricedBy.lists(id) : true),
        })
      : undefined,
    cacheMs: Math.round((px.cache_ms ?? 60_000) * vc.scale),
    errorRules: [...vc.errorRules(`${p}/upstream/errors`, r.upstream?.errors), ...vc.vendorRules],
  });
}

/** The request validator (POST routes), and the checks of the route's proxy block that the schema cannot make. */
function checkedValidator(vc: VendorCompileContext, r: RouteSpec, px: NonNullable<RouteSpec['proxy']>, p: string): RequestValidator | undefined {
  const { at } = vc;
  let validate: RequestValidator | undefined;
  if (r.request) {
    if (r.method !== 'POST') at(`${p}/request`, 'only a POST route has a request body to validate');
    try {
      validate = compileRequestValidator(vc.ctx.ajv, `${SCHEMA_BASE}/request/${vc.vendor}/${r.id}.json`, r.request.schema, r.request.rules ?? []);
    } catch (err) {
      if (!(err instanceof ExprError)) at(`${p}/request/schema`, `request schema does not compile: ${(err as Error).message}`);
    }
    (r.request.rules ?? []).forEach((rule, j) => vc.expr(`${p}/request/rules/${j}/when`, rule.when));
  } else if (r.method === 'POST') {
    at(`${p}`, 'a POST proxy route needs a request schema (request.schema)');
  }
  if (r.kind === 'stream' && !px.stream) at(`${p}/proxy`, 'a stream route needs proxy.stream (the body field that asks for SSE)');
  if (r.kind === 'sync' && px.stream) at(`${p}/proxy/stream`, 'only a kind: stream route streams');
  if (px.token_prices && !px.usage) at(`${p}/proxy`, 'token_prices need proxy.usage (where the token counts are)');
  if (px.hold && !px.token_prices) at(`${p}/proxy/hold`, 'a hold needs proxy.token_prices (what the held tokens cost)');
  if (px.list && r.method !== 'GET') at(`${p}/proxy/list`, 'a list route is a GET');
  if (!px.list && r.method === 'GET') at(`${p}/proxy`, 'a GET proxy route needs proxy.list');
  return validate;
}

/** A model list's pricing (list.priced_by): the sibling route whose token prices say which models are offered. */
function pricedByOf(vc: VendorCompileContext, px: NonNullable<RouteSpec['proxy']>, p: string, creditsPerUsd: number): TokenPricer | undefined {
  if (px.list?.priced_by === undefined) return undefined;
  const other = vc.siblings.find((s) => s.id === px.list!.priced_by);
  if (other?.proxy?.token_prices) return compileTokenPrices(other.proxy.token_prices, creditsPerUsd);
  vc.at(`${p}/proxy/list/priced_by`, `no route "${px.list.priced_by}" with proxy.token_prices in this descriptor`);
  return undefined;
}

/** Where each pool member's requests go: origin, path, timeout, fixed headers, auth, dispatcher. */
function proxyTargets(vc: VendorCompileContext, px: NonNullable<RouteSpec['proxy']>): Map<string, ProxyTarget> {
  const { at } = vc;
  const targets = new Map<string, ProxyTarget>();
  for (const m of vc.pool.members) {
    let base: URL;
    try {
      base = new URL(m.client.baseUrl);
    } catch {
      at('/upstream', `the base URL ${JSON.stringify(m.client.baseUrl)} is not a URL`);
      base = new URL('http://invalid.invalid');
    }
    targets.set(m.id, Object.freeze({
      origin: base.origin,
      path: `${base.pathname.replace(/\/+$/, '')}${px.path}`,
      timeoutMs: m.client.timeoutMs,
      headers: Object.freeze({ 'accept-encoding': 'identity', ...lowerKeys(m.client.fixedHeaders) }),
      auth: m.client.auth,
      dispatcher: m.client.dispatcher,
    }));
  }
  return targets;
}

function lowerKeys(h: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}
