// The control plane's express app: (route: body → auth → handler) → 404 → problems.
// Health, the admin API, docs, webhook management and billing views; the descriptor routes are
// the data plane's (./data-plane.ts). The front door (./front-door.ts) has set the trace on
// res.locals.trace before a request gets here, and writes its access line (from res.locals.auth
// and the matched route) when the answer is finished.
import express, { type Express, type Router } from 'express';
import type { Logger } from 'pino';
import { GatewayError } from '../errors/gateway-error.ts';
import { adminRouter, type AdminDeps } from './admin-routes.ts';
import { errorHandler } from './answer.ts';
import { serveMetrics } from './metrics-endpoint.ts';
import { openapiRouter } from './openapi-routes.ts';
import { notFound } from './route-table.ts';
import type { VendorPlan } from '../descriptors/compile.ts';

export interface AppDeps {
  logger: Logger;
  vendors: readonly VendorPlan[];
  admin: AdminDeps;
  trustProxy: boolean;
  /** Tenant-facing routers mounted after the provider routes (webhooks console, billing views). */
  tenantRouters?: Router[];
  /** metrics.token: when set, GET /metrics answers here too, for that bearer token. */
  metricsToken?: string | null;
  /** Why the gateway should get no traffic now (draining, a dependency away); undefined when ready. */
  readiness: () => Promise<GatewayError | undefined>;
}

export function buildApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', deps.trustProxy);

  // Liveness: the process runs and serves HTTP; nothing else is checked (a dependency outage
  // must not get a healthy process restarted).
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Readiness: whether to send traffic here (503 while draining or while the store or the job
  // queue does not answer; load balancers take the instance out of rotation).
  app.get('/readyz', async (_req, res) => {
    const notReady = await deps.readiness();
    if (notReady) throw notReady;
    res.json({ status: 'ready' });
  });
  if (deps.metricsToken) {
    const token = deps.metricsToken;
    app.get('/metrics', (req, res) => serveMetrics(req, res, token, (res.locals.trace as { traceId: string }).traceId));
  }
  app.use('/admin/v1', adminRouter(deps.admin));
  app.use(openapiRouter(deps.vendors));
  for (const r of deps.tenantRouters ?? []) app.use(r);

  // The front door answers 404 and 405 from the route tables before a request gets here; this
  // is express's own end of the line, reached only by a path the table could not read (none today).
  app.use((req) => {
    throw notFound(req.method, req.path);
  });
  app.use(errorHandler(deps.logger));
  return app;
}
