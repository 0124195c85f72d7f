// Upstream trouble, and the one function that maps it onto the service codes 3001–3005.
// Descriptors may override the mapping with `errors:` entries (first match wins), evaluated on
// {stage, http_status, body}; what no entry matches falls to the defaults below.
import { CATALOGUE, type ErrorName } from '../errors/catalogue.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import type { CompiledExpr } from '../util/expr.ts';

/** `cancel` is the best-effort cancel request (TaskLifecycle.cancelUpstream): logged, never mapped onto a task error. */
/** `result` is upstream.result, the second request that fetches a completed task's output. */
export type UpstreamStage = 'submit' | 'poll' | 'task' | 'cancel' | 'result';

/** How a call can fail to get a usable answer at all. */
export type UpstreamFailureName = 'upstreamUnavailable' | 'upstreamResponseError' | 'upstreamTimeout';

/** A failure to get a usable answer at all: network (3001), unparseable body (3003), timeout (3004). */
export class UpstreamFailure extends Error {
  readonly error: UpstreamFailureName;
  readonly stage: UpstreamStage;
  constructor(error: UpstreamFailureName, message: string, stage: UpstreamStage) {
    super(message);
    this.name = 'UpstreamFailure';
    this.error = error;
    this.stage = stage;
  }

  /** The service code (metrics' label). */
  get code(): number {
    return CATALOGUE[this.error].code;
  }

  /** The failure as the client sees it: its own code, with `detail` (its message unless told). */
  toGatewayError(detail = this.message): GatewayError {
    return new GatewayError(this.error, detail);
  }
}

export interface CompiledErrorRule {
  when: CompiledExpr;
  error: ErrorName;
  detail?: CompiledExpr;
}


export interface UpstreamErrorFacts {
  stage: UpstreamStage;
  http_status?: number;
  body?: unknown;
  /** The upstream's own message, when a mapping found one. */
  message?: string;
}

/**
 * Defaults: an unreachable upstream, a 5xx or a 429 → 3001 (temporarily unavailable; 504 →
 * 3004 timeout); another 4xx → 3002 (the provider refused this request); an accepted task the
 * provider reports as failed → 3005.
 */
export function defaultUpstreamError(f: UpstreamErrorFacts): ErrorName {
  if (f.stage === 'task') return 'upstreamExecutionFailed';
  const s = f.http_status;
  if (s === undefined) return 'upstreamResponseError';
  if (s === 504) return 'upstreamTimeout';
  if (s >= 500 || s === 429 || s === 408) return 'upstreamUnavailable';
  if (s >= 400) return 'upstreamRequestFailed';
  return 'upstreamResponseError';
}

export async function mapUpstreamError(rules: readonly CompiledErrorRule[], f: UpstreamErrorFacts): Promise<GatewayError> {
  for (const rule of rules) {
    let matched = false;
    try {
      matched = Boolean(await rule.when.evaluate(f));
    } catch {
      matched = false; // a rule that cannot read this answer does not match it
    }
    if (matched) {
      const detail = rule.detail ? String((await rule.detail.evaluate(f).catch(() => undefined)) ?? '') : '';
      return new GatewayError(rule.error, detail || describe(f));
    }
  }
  return new GatewayError(defaultUpstreamError(f), describe(f));
}

function describe(f: UpstreamErrorFacts): string {
  const what = f.stage === 'task' ? 'The provider could not complete the task' : `The provider answered the ${f.stage} request with HTTP ${f.http_status ?? '?'}`;
  // Only the provider's short message is passed on, never its raw body.
  return f.message ? `${what}: ${truncate(f.message, 300)}` : `${what}.`;
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
