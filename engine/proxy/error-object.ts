// The error object OpenAI-compatible clients read ({message, type, param, code}): the
// upstream's own (sanitised), or one made from a GatewayError. It rides in problem bodies
// (engine/http/proxy-problem.ts) and in the error event that ends a broken stream.
import type { GatewayError } from '../errors/gateway-error.ts';

export interface ClientErrorObject {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

const MAX_MESSAGE = 1000;

/** The upstream's own error object, if it has one: only its four known fields, strings only. */
export function sanitiseErrorObject(value: unknown): ClientErrorObject | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.message !== 'string') return undefined;
  const str = (x: unknown): string | null => (typeof x === 'string' ? x.slice(0, 200) : typeof x === 'number' ? String(x) : null);
  return {
    message: v.message.length > MAX_MESSAGE ? `${v.message.slice(0, MAX_MESSAGE)}…` : v.message,
    type: str(v.type) ?? 'upstream_error',
    param: str(v.param),
    code: str(v.code),
  };
}

function errorType(code: number): string {
  if (code === 1001) return 'authentication_error';
  if (code === 1002) return 'permission_error';
  if (code === 1003) return 'insufficient_quota';
  if (code === 1004 || code === 1005) return 'rate_limit_error';
  if (code === 2005) return 'not_found_error';
  if (code >= 2000 && code < 3000) return 'invalid_request_error';
  if (code >= 3000 && code < 4000) return 'upstream_error';
  return 'server_error';
}

export function errorObjectFor(err: GatewayError): ClientErrorObject {
  const pointer = err.errors[0]?.pointer;
  return {
    message: err.detail,
    type: errorType(err.code),
    param: pointer ? pointer.slice(1).replace(/\//g, '.') : null,
    code: String(err.code),
  };
}
