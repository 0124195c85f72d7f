// Assembles the express app: trace → log → (route: body → auth → handler) → 405/404 → problems.
// Routes come from compiled descriptors; nothing here knows any provider.
import express, { type Express, type Router } from 'express';
import type { Logger } from 'pino';
import { HTTP_ONLY } from '../errors/catalogue.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { accessLog } from './access-log.ts';
import { adminRouter, type AdminDeps } from './admin-routes.ts';
import { errorHandler } from './problem.ts';
import { openapiRouter } from './openapi-routes.ts';
import type { ProxyGateway } from '../proxy/proxy-gateway.ts';
import { mountProxyRoutes } from './proxy-routes.ts';
import { mountTaskRoutes, type TaskRouteDeps } from './task-routes.ts';
import { traceMiddleware } from './traceparent.ts';
import type { VendorPlan } from '../descriptors/compile.ts';

export interface AppDeps extends TaskRouteDeps {
  /** The proxy service of sync/stream routes (the server also calls it ahead of express). */
  proxy: ProxyGateway;
  logger: Logger;
  vendors: readonly VendorPlan[];
  admin: AdminDeps;
  trustProxy: boolean;
  /** Tenant-facing routers mounted after the provider routes (webhooks console, billing views). */
  tenantRouters?: Router[];
  /** Why the gateway should get no traffic now (draining, a dependency away); undefined when ready. */
  readiness: () => Promise<GatewayError | undefined>;
}

export function buildApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', deps.trustProxy);
  app.use(traceMiddleware, accessLog(deps.logger));

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
  app.use('/admin/v1', adminRouter(deps.admin));
  app.use(openapiRouter(deps.vendors));
  const methods = new Map<string, Set<string>>();
  mountTaskRoutes(app, deps.vendors, deps, methods);
  mountProxyRoutes(app, deps.vendors, deps, methods);
  for (const r of deps.tenantRouters ?? []) app.use(r);

  // A known path with another method: 405 with Allow. Then anything else: 404.
  for (const [path, allowed] of methods) {
    const allow = [...allowed, ...(allowed.has('GET') ? ['HEAD'] : [])].join(', ');
    app.all(path, (req) => {
      const h = HTTP_ONLY.methodNotAllowed;
      throw new GatewayError(h.code, `${req.method} is not allowed here; use ${allow}.`, { status: h.status, title: h.title, headers: { Allow: allow } });
    });
  }
  app.use((req) => {
    throw new GatewayError(2005, `No route ${req.method} ${req.path}.`);
  });
  app.use(errorHandler(deps.logger));
  return app;
}
