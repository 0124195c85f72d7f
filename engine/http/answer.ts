// The answers of every route: JSON successes (writeJson) and the one renderer of errors, RFC
// 9457 `application/problem+json` with the service code (`error_code`, and `type` ending in
// `#<code>`), the occurrence (`instance`, `trace_id`) and the JSON pointers of invalid fields.
// No stack trace or upstream body reaches a client.
import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { GatewayError } from '../errors/gateway-error.ts';
import { isoNow, systemClock } from '../util/clock.ts';
import { newUuid } from '../util/ids.ts';

export const PROBLEM_TYPE_BASE = 'https://model-gateway.dev/docs/errors';

/** The service code an error answer carried, kept on its response for the access line and metrics. */
const SERVICE_CODE = Symbol('service code');
type Marked = ServerResponse & { [SERVICE_CODE]?: number };

export function markProblem(res: ServerResponse, code: number): void {
  (res as Marked)[SERVICE_CODE] = code;
}

export function problemCodeOf(res: ServerResponse): number | undefined {
  return (res as Marked)[SERVICE_CODE];
}

/** `instance` is the request path; undefined (left out) when the request could not be parsed. */
export function problemBody(err: GatewayError, instance: string | undefined, traceId: string | undefined): Record<string, unknown> {
  // Extensions first, so none can overwrite a standard member.
  const body: Record<string, unknown> = {
    ...err.extensions,
    type: `${PROBLEM_TYPE_BASE}#${err.code}`,
    title: err.title,
    status: err.status,
    error_code: err.code,
    detail: err.detail,
    instance,
  };
  if (traceId) body.trace_id = traceId;
  if (err.errors.length) body.errors = err.errors.map((e) => ({ pointer: e.pointer, detail: e.detail, ...(e.code ? { code: e.code } : {}) }));
  return body;
}

export function sendProblem(res: Response, err: GatewayError): void {
  const trace = res.locals.trace as { traceId: string } | undefined;
  writeProblem(res, err, res.req.originalUrl.split('?')[0]!, trace?.traceId);
}

/** A problem answer on any node response (the data plane's raw one, or express's). */
export function writeProblem(res: ServerResponse, err: GatewayError, instance: string, traceId: string | undefined): void {
  markProblem(res, err.code);
  writeJson(res, err.status, problemBody(err, instance, traceId), { ...err.headers, 'content-type': 'application/problem+json' });
}

/**
 * Video model A answers a validation failure with a task_info-shaped body instead (status
 * `failed`, `error` {code, title, detail}). `id` is a fresh UUID naming this refused request, so
 * the body has the documented shape; no task exists under it (a GET of it answers 404). The
 * problem's `errors` list rides along for the pointers.
 */
export function writeTaskInfoValidationError(res: ServerResponse, err: GatewayError, traceId: string | undefined): void {
  const now = isoNow(systemClock);
  markProblem(res, err.code);
  writeJson(res, err.status, {
    task_info: { id: newUuid(), status: 'failed', created_at: now, updated_at: now, error: err.toTaskError() },
    error: { title: err.title, error_code: err.code, detail: err.detail },
    ...(err.errors.length ? { errors: err.errors } : {}),
    ...(traceId ? { trace_id: traceId } : {}),
  });
}

/** A JSON answer with its length (as express's res.json sends it, without express). */
export function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers, 'content-length': Buffer.byteLength(text) }).end(text);
}

/** A request path that is not valid percent-encoding (both routers refuse it). */
export function malformedPath(): GatewayError {
  return new GatewayError('parameterValidationFailed', 'The request path is not valid percent-encoding.', { errors: [{ pointer: '', detail: 'malformed percent-encoding in the path' }] });
}

/**
 * Errors are GatewayErrors by the time they reach a handler, but for express's router's own: a
 * path parameter that is not valid percent-encoding is a 400 there (2001 here). Anything else
 * is a bug: 4002, logged.
 */
export function toGatewayError(err: unknown, logger: Logger): GatewayError {
  if (err instanceof GatewayError) return err;
  if ((err as { status?: unknown }).status === 400 && err instanceof URIError) return malformedPath();
  logger.error({ err }, 'unhandled error');
  return new GatewayError('internalOperationFailed', 'An internal operation failed. Quote the trace id when reporting it.');
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, _req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendProblem(res, toGatewayError(err, logger));
  };
}
