// HTTP handlers for `kind: sync` and `kind: stream` routes (chat completions, model lists).
// The gateway answers their exact paths before express (engine/proxy/proxy-gateway.ts, the
// lean hot path); these express routes serve the same handler for what only express matches
// (a trailing slash, another letter case, HEAD) and record the paths for 405 answers.
import type { Express, Request, Response } from 'express';
import type { VendorPlan } from '../descriptors/compile.ts';
import type { ProxyGateway } from '../proxy/proxy-gateway.ts';
import type { TaskRouteDeps } from './task-routes.ts';
import { traceOf } from './traceparent.ts';

export interface ProxyRouteDeps extends TaskRouteDeps {
  /** The proxy service the server's fast path uses too. */
  proxy: ProxyGateway;
}

export function mountProxyRoutes(app: Express, vendors: readonly VendorPlan[], deps: ProxyRouteDeps, methods: Map<string, Set<string>>): void {
  if (!vendors.some((v) => v.routes.some((r) => r.kind === 'sync' || r.kind === 'stream'))) return;
  const proxy = deps.proxy;
  for (const { method, path, route } of proxy.paths()) {
    const handler = (req: Request, res: Response) => proxy.handle(req, res, route, traceOf(res));
    if (method === 'GET') app.get(path, handler);
    else app.post(path, handler);
    methods.set(path, (methods.get(path) ?? new Set()).add(method));
  }
}
