// W3C Trace Context: continue a valid incoming `traceparent` with a new span id (ours), else
// start a new trace. The result is on every response, in every log line, and sent upstream.
// With tracing on (engine/tracing/), the request's SERVER span is that trace: its span id is
// ours, and it is what the response's Traceparent names.
import type { IncomingMessage } from 'node:http';
import {
  ATTR_CLIENT_ADDRESS, ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS, ATTR_URL_PATH, ATTR_URL_SCHEME, ATTR_USER_AGENT_ORIGINAL,
} from '../tracing/attributes.ts';
import { SpanKind, SpanStatusCode, startSpan, traceparentOf, type Span } from '../tracing/tracing.ts';
import { randomHex } from '../util/ids.ts';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

export interface Trace {
  traceId: string;
  traceparent: string;
  /** The request's SERVER span, when tracing is on. */
  span?: Span;
}

export function continueTrace(incoming: string | undefined): Trace {
  const m = incoming ? TRACEPARENT.exec(incoming.trim().toLowerCase()) : null;
  const valid = m && m[1] !== 'ff' && !(m[1] === '00' && m[5]) && !/^0+$/.test(m[2]!) && !/^0+$/.test(m[3]!);
  const traceId = valid ? m[2]! : randomHex(16);
  const flags = valid ? m[4]! : '01';
  return { traceId, traceparent: `00-${traceId}-${randomHex(8)}-${flags}` };
}

/** Tracing on: the request's SERVER span, continuing the caller's traceparent (as continueTrace does). */
export function startServerTrace(req: IncomingMessage): Trace {
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const span = startSpan(method, SpanKind.SERVER, {
    [ATTR_HTTP_REQUEST_METHOD]: method,
    [ATTR_URL_PATH]: q === -1 ? url : url.slice(0, q),
    [ATTR_URL_SCHEME]: 'http',
    [ATTR_SERVER_ADDRESS]: req.headers.host,
    [ATTR_NETWORK_PROTOCOL_VERSION]: req.httpVersion,
    [ATTR_USER_AGENT_ORIGINAL]: req.headers['user-agent'],
    [ATTR_CLIENT_ADDRESS]: req.socket.remoteAddress,
  }, req.headers.traceparent as string | undefined);
  const traceparent = traceparentOf(span);
  return { traceId: traceparent.slice(3, 35), traceparent, span };
}

/**
 * The answer is out: the SERVER span gets its route (`METHOD route` once the route is known), the
 * status, and on a problem the service error code; 5xx marks it failed (4xx is the caller's).
 */
export function endServerTrace(span: Span, method: string, status: number, route: string | undefined, routeKey: string | undefined, errorCode: number | undefined): void {
  if (route) {
    span.updateName(`${method} ${route}`);
    span.setAttribute(ATTR_HTTP_ROUTE, route);
  }
  if (routeKey) span.setAttribute('gateway.route', routeKey);
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
  if (errorCode !== undefined) span.setAttribute('gateway.error_code', errorCode);
  if (status >= 500) {
    span.setAttribute(ATTR_ERROR_TYPE, String(errorCode ?? status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
