// An upstream's error answer on a proxied route, as the gateway's error. The rule, for
// OpenAI-compatible clients:
//  - its own error object ({message, type, param, code}) is kept, sanitised, as the `error`
//    member of the problem body (a gateway-made one otherwise);
//  - the service code is the engine's one mapping (descriptor rules, then 429/5xx → 3001,
//    504 → 3004, other 4xx → 3002, nothing usable → 3003);
//  - a refusal of the request as it is (400, 404, 409, 413, 415, 422 with an error object,
//    mapped to 3002) keeps the upstream's HTTP status, so clients raise BadRequest/NotFound
//    and do not retry; everything else answers with the code's status (500).
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { mapUpstreamError } from '../upstream/failure.ts';
import { sanitiseErrorObject, type ClientErrorObject } from './error-object.ts';

/** Upstream statuses that mean "this request was refused as it is" and keep their status. */
const CLIENT_STATUSES = new Set([400, 404, 409, 413, 415, 422]);

export async function proxiedUpstreamError(route: ProxyRoutePlan, status: number, text: Buffer): Promise<{ error: GatewayError; own?: ClientErrorObject }> {
  let parsed: unknown;
  try {
    parsed = text.length ? JSON.parse(text.toString('utf8')) : undefined;
  } catch {
    parsed = undefined;
  }
  const own = route.errorObject ? sanitiseErrorObject(route.errorObject(parsed)) : undefined;
  const mapped = await mapUpstreamError(route.errorRules, { stage: 'submit', http_status: status, body: parsed, message: own?.message });
  const keep = own !== undefined && mapped.errorName === 'upstreamRequestFailed' && CLIENT_STATUSES.has(status);
  // The engine's default wording names async stages; a descriptor rule's own detail is kept.
  const detail = mapped.detail.startsWith('The provider answered the submit request')
    ? `The provider answered HTTP ${status}${own ? `: ${own.message}` : '.'}`
    : mapped.detail;
  return { error: new GatewayError(mapped.errorName, detail, keep ? { status } : {}), own };
}
