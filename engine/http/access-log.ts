// One JSON log line per request: trace id, method, route, status, latency, tenant. Never the
// Authorization header or bodies (pino's redaction covers anything that slips into a field).
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { accessLogger } from '../log/logger.ts';

export function accessLog(root: Logger) {
  const logger = accessLogger(root);
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      const latencyMs = Number(process.hrtime.bigint() - start) / 1e6;
      logRequest(logger, {
        traceId: (res.locals.trace as { traceId: string } | undefined)?.traceId,
        method: req.method,
        route: (res.locals.routeKey as string | undefined) ?? req.route?.path,
        path: req.originalUrl.split('?')[0]!,
        status: res.statusCode,
        latencyMs,
        tenantId: (res.locals.auth as { tenantId?: string } | undefined)?.tenantId,
      });
    });
    next();
  };
}

/** The access line itself (also written by the task fast lane, which answers before express). */
export function logRequest(logger: Logger, r: { traceId?: string; method?: string; route?: string; path: string; status: number; latencyMs: number; tenantId?: string }): void {
  logger.info({
    trace_id: r.traceId,
    method: r.method,
    route: r.route,
    path: r.path,
    status: r.status,
    latency_ms: Math.round(r.latencyMs * 1000) / 1000,
    tenant_id: r.tenantId,
  }, 'request');
}
