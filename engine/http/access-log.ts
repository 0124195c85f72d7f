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
      logger.info({
        trace_id: (res.locals.trace as { traceId: string } | undefined)?.traceId,
        method: req.method,
        route: (res.locals.routeKey as string | undefined) ?? req.route?.path,
        path: req.originalUrl.split('?')[0],
        status: res.statusCode,
        latency_ms: Math.round(latencyMs * 1000) / 1000,
        tenant_id: (res.locals.auth as { tenantId?: string } | undefined)?.tenantId,
      }, 'request');
    });
    next();
  };
}
