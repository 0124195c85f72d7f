// What a proxied completion used, in billing terms: the token counts the upstream reported (or
// an estimate when it reported none), and the charge they make at the route's token prices.
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import type { ModelPrice, TokenUsage } from '../descriptors/token-prices.ts';
import type { Milli } from '../util/money.ts';
import { inlineBytes } from './body.ts';

/** The usage an answer (a JSON body, or a stream's usage event) reports; undefined when it reports none. */
export function reportedUsage(route: ProxyRoutePlan, answer: unknown): TokenUsage | undefined {
  const u = route.usage;
  if (!u || answer === undefined) return undefined;
  const input = u.input(answer);
  const output = u.output(answer);
  if (typeof input !== 'number' || typeof output !== 'number') return undefined;
  const cached = u.cachedInput?.(answer);
  return { input: count(input), output: count(output), cachedInput: typeof cached === 'number' ? count(cached) : 0, estimated: false };
}

/** The upstream's completion id (`id`), for the charge's note. */
export function completionIdOf(answer: unknown): string | undefined {
  const id = (answer as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * No usage reported (a stream cut short, an upstream that does not report it): input ≈ a
 * quarter of the request's text characters (inline media left out), output ≈ `outputTokens`
 * (one per relayed stream event, or a quarter of a JSON answer's bytes).
 */
export function estimatedUsage(request: unknown, outputTokens: number): TokenUsage {
  return { input: Math.ceil(textChars(request) / 4), output: outputTokens, cachedInput: 0, estimated: true };
}

/**
 * A string of at most this many characters cannot hold more than 1024 bytes of Base64
 * (4 characters per 3 bytes), so it is text without looking inside: every priced chat walks
 * its request for the hold's estimate.
 */
const SHORT_TEXT = Math.floor((1024 * 4) / 3);

/** The characters of the strings in `v`, inline media (over 1024 bytes of Base64) left out. */
function textChars(v: unknown): number {
  if (typeof v === 'string') return v.length <= SHORT_TEXT || inlineBytes(v) <= 1024 ? v.length : 0;
  if (v === null || typeof v !== 'object') return 0;
  let chars = 0;
  if (Array.isArray(v)) for (const item of v) chars += textChars(item);
  else for (const k in v) chars += textChars((v as Record<string, unknown>)[k]);
  return chars;
}

export interface UsageCharge {
  milli: Milli;
  note: string;
}

/** The ref of a request's hold and charge: its route and its trace and span ids (once per request). */
export function chargeRef(route: ProxyRoutePlan, traceparent: string): string {
  return `${route.key}:${traceparent.slice(3, 52)}`;
}

/** The charge of one completion, settled against its hold (ProxyBilling.close takes it, with the hold's ref). */
export function usageCharge(route: ProxyRoutePlan, price: ModelPrice, model: string | undefined, u: TokenUsage, completionId: string | undefined): UsageCharge {
  return {
    milli: route.pricer!.cost(price, u),
    note: `${model} ${u.input} in (${u.cachedInput} cached) ${u.output} out${u.estimated ? ' (estimated)' : ''}${completionId ? ` ${completionId}` : ''}`,
  };
}

const count = (n: number): number => (Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);
