// GET /metrics (Prometheus text format): on its own listener (metrics.host:port, loopback by
// default, so scrapes never share the tenant-facing port or its access log), and on the main
// port only behind metrics.token. One handler serves both.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from '../util/node-http.ts';
import type { AddressInfo } from 'node:net';
import { sameSecret } from '../util/secrets.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { metricsText, registry } from '../metrics/metrics.ts';
import { writeProblem } from './answer.ts';
import { notFound } from './route-table.ts';
import { continueTrace } from './traceparent.ts';

/** Answers GET/HEAD /metrics; a problem for anything else, or without the token when one is set. */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, token: string | null, traceId: string): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  try {
    if (path !== '/metrics') throw notFound(req.method ?? 'GET', path);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new GatewayError('methodNotAllowed', `${req.method} is not allowed here; use GET, HEAD.`, { headers: { Allow: 'GET, HEAD' } });
    }
    if (token !== null && !bearerMatches(req.headers.authorization, token)) {
      throw new GatewayError('authenticationFailed', 'GET /metrics needs Authorization: Bearer <metrics.token>.', { headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' } });
    }
    const text = await metricsText();
    res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(text) }).end(text);
  } catch (err) {
    writeProblem(res, err instanceof GatewayError ? err : new GatewayError('internalOperationFailed', 'The metrics could not be collected.'), path, traceId);
  }
  req.resume();
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  return sameSecret(m?.[1]?.trim() ?? '', token);
}

/** The metrics listener; resolves with its URL once it listens (a port in use fails the start). */
export async function listenForMetrics(host: string, port: number, token: string | null): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const trace = continueTrace(req.headers.traceparent as string | undefined);
    res.setHeader('Traceparent', trace.traceparent);
    void serveMetrics(req, res, token, trace.traceId);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? new Error(`metrics.port ${port} on ${host} is in use: set another metrics.port (0: any free port) or metrics.port: null`) : err);
    });
    server.listen(port, host, resolve);
  });
  const addr = server.address() as AddressInfo;
  const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return { server, url: `http://${h}:${addr.port}/metrics` };
}
