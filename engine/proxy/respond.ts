// Error answers of proxied routes, on a plain node response. The body is the gateway's RFC 9457
// problem (error_code, type, instance, trace_id, errors) plus one extension member, `error`,
// in the shape OpenAI-compatible clients read ({message, type, param, code}): the official
// SDKs raise their typed errors with a readable message from it. When the upstream gave its
// own error object, that object (sanitised) is the `error` member.
import type { ServerResponse } from 'node:http';
import type { GatewayError } from '../errors/gateway-error.ts';
import { problemBody } from '../http/problem.ts';

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

export function sendProxyProblem(
  res: ServerResponse,
  err: GatewayError,
  instance: string,
  traceId: string | undefined,
  extraHeaders: Record<string, string>,
  upstreamError?: ClientErrorObject,
): void {
  const body = problemBody(err, instance, traceId);
  body.error = upstreamError ?? errorObjectFor(err);
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = { ...extraHeaders, ...err.headers, 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(text) };
  res.writeHead(err.status, headers).end(text);
}
