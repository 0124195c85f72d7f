// One JSON log line per request: trace id, method, route, status, latency, tenant. Never the
// Authorization header or bodies (pino's redaction covers anything that slips into a field).
// The front door writes it for both planes; the proxy adds its own fields. The request's HTTP
// metrics are taken here too, from the same facts, so the two never disagree.
import type { Logger } from 'pino';
import { observeRequest } from '../metrics/metrics.ts';

/**
 * The access line itself, for both planes (the front door's data plane, express's middleware
 * above). `extra` adds a route's own fields after the common ones (the proxy's tokens, model).
 */
export function logRequest(logger: Logger, r: { traceId?: string; method?: string; route?: string; path: string; status: number; latencyMs: number; tenantId?: string; code?: number }, extra?: Record<string, unknown>): void {
  observeRequest(r.route ?? 'none', r.method ?? 'GET', r.status, r.code, r.latencyMs / 1000, r.tenantId);
  logger.info({
    trace_id: r.traceId,
    method: r.method,
    route: r.route,
    path: r.path,
    status: r.status,
    latency_ms: Math.round(r.latencyMs * 1000) / 1000,
    tenant_id: r.tenantId,
    ...extra,
  }, 'request');
}
