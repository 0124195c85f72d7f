// Error answers of proxied routes, on a plain node response. The body is the gateway's RFC 9457
// problem (error_code, type, instance, trace_id, errors) plus one extension member, `error`,
// in the shape OpenAI-compatible clients read ({message, type, param, code}): the official
// SDKs raise their typed errors with a readable message from it. When the upstream gave its
// own error object, that object (sanitised) is the `error` member.
import type { ServerResponse } from 'node:http';
import type { GatewayError } from '../errors/gateway-error.ts';
import { errorObjectFor, type ClientErrorObject } from '../proxy/error-object.ts';
import { markProblem, problemBody } from './answer.ts';

export function sendProxyProblem(
  res: ServerResponse,
  err: GatewayError,
  instance: string,
  traceId: string | undefined,
  extraHeaders: Record<string, string>,
  upstreamError?: ClientErrorObject,
): void {
  markProblem(res, err.code);
  const body = problemBody(err, instance, traceId);
  body.error = upstreamError ?? errorObjectFor(err);
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = { ...extraHeaders, ...err.headers, 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(text) };
  res.writeHead(err.status, headers).end(text);
}
