// Requests refused before any route sees them. Node answers these itself with a bare status line;
// these answers keep the promise every other answer keeps: an RFC 9457 body and a Traceparent.
//  - The HTTP parser's refusals ('clientError'): bad chunked encoding, a body cut short, a
//    request line or headers over the limit, a malformed request line, a client too slow to send
//    its headers (server.headers_timeout_ms) or its whole request (server.request_timeout_ms).
//    The parser leaves no request or response object: the answer is written to the socket itself
//    (as Node's documentation for 'clientError' prescribes), only while nothing of a response has
//    been written on it, and the connection is closed: after a framing error nothing more on it
//    can be trusted.
//  - CONNECT ('connect'): the gateway is not a proxy.
//  - An `Expect` other than 100-continue ('checkExpectation'): 417.
//  - An HTTP/1.1 request without Host (RFC 9112 §3.2): 400, see refuseWithoutHost.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { STATUS_CODES } from '../util/node-http.ts';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { ErrorName } from '../errors/catalogue.ts';
import { httpRequests, statusClass } from '../metrics/metrics.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { problemBody, writeProblem } from './answer.ts';
import { continueTrace } from './traceparent.ts';

type ParserError = Error & { code?: string; reason?: string };
const refuse = (name: ErrorName, detail: string, headers?: Record<string, string>) => new GatewayError(name, detail, { headers });

/** The error a parser failure answers with; undefined when the client is gone (nothing to answer). */
export function clientErrorFor(err: ParserError): GatewayError | undefined {
  const code = err.code ?? '';
  switch (code) {
    case 'ECONNRESET':
    case 'EPIPE':
    case 'ETIMEDOUT':
      return undefined;
    case 'HPE_HEADER_OVERFLOW':
      return refuse('headersTooLarge', 'The request line and headers are larger than this server accepts.');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return refuse('payloadTooLarge', 'The chunk extensions of the request body are larger than this server accepts.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return refuse('requestTimeout', 'The request was not received in time; the connection is closed.');
    default: {
      // The parser's own reason ("Invalid method encountered") says what to fix; nothing of the
      // request is echoed.
      const why = code.startsWith('HPE_') && err.reason ? `: ${err.reason.replace(/[^\x20-\x7e]/g, '')}` : '';
      return refuse('badRequest', `The request is not valid HTTP/1.1${why} (${code || 'unknown error'}).`);
    }
  }
}

/** Answers the server's refusals (see the top of this file) with problem bodies. */
export function answerRefusals(server: Server, logger: Logger): void {
  server.on('clientError', (err: ParserError, socket: Duplex) => {
    // The response of a request already being answered on this socket: Node's default handler
    // checks the same (undocumented but long-standing) field before writing.
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    const problem = clientErrorFor(err);
    if (!problem || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    answerOnSocket(socket, problem, logger, err.code);
  });
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    answerOnSocket(socket, refuse('badRequest', 'CONNECT is not served: the gateway is not a proxy.'), logger, 'CONNECT', req.headers.traceparent as string | undefined);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    answerOnResponse(req, res, refuse('expectationFailed', 'The only expectation this server meets is Expect: 100-continue.'), logger);
  });
}

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400 (the server is created with
 * requireHostHeader off, so that this answer, not Node's bare one, is sent). True when refused.
 */
export function refuseWithoutHost(req: IncomingMessage, res: ServerResponse, logger: Logger): boolean {
  if (req.headers.host !== undefined || req.httpVersionMajor !== 1 || req.httpVersionMinor !== 1) return false;
  req.resume();
  answerOnResponse(req, res, refuse('badRequest', 'An HTTP/1.1 request must carry a Host header.', { connection: 'close' }), logger);
  return true;
}

function answerOnResponse(req: IncomingMessage, res: ServerResponse, problem: GatewayError, logger: Logger): void {
  const trace = continueTrace(req.headers.traceparent as string | undefined);
  res.setHeader('Traceparent', trace.traceparent);
  writeProblem(res, problem, (req.url ?? '').split('?')[0]!, trace.traceId);
  logger.info({ trace_id: trace.traceId, method: req.method, status: problem.status, reason: problem.title }, 'request refused before routing');
  countRefusal(req.method ?? 'none', problem);
}

/** `traceparent`: the caller's, when its headers could be parsed (else a fresh trace). */
function answerOnSocket(socket: Duplex, problem: GatewayError, logger: Logger, reason: string | undefined, traceparent?: string): void {
  const trace = continueTrace(traceparent);
  const body = JSON.stringify(problemBody(problem, undefined, trace.traceId));
  const head = [
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}`,
    'Content-Type: application/problem+json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Traceparent: ${trace.traceparent}`,
    'Connection: close',
  ].join('\r\n');
  logger.info({ trace_id: trace.traceId, status: problem.status, reason }, 'request refused before routing');
  countRefusal(reason === 'CONNECT' ? 'CONNECT' : 'none', problem);
  socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy());
  // A client that reads nothing cannot hold the socket open past a second.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** Refusals before routing count as requests of no route (their method is "none" when it did not parse). */
function countRefusal(method: string, problem: GatewayError): void {
  httpRequests.inc({ route: 'none', method, status_class: statusClass(problem.status), code: String(problem.code) });
}
