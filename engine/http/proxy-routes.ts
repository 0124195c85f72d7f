// HTTP handlers for `kind: sync` and `kind: stream` routes (chat completions, model lists):
// the request is proxied to the upstream and its answer passed through.
import type { Express } from 'express';
import type { VendorPlan } from '../descriptors/compile.ts';
import type { TaskRouteDeps } from './task-routes.ts';

export function mountProxyRoutes(_app: Express, _vendors: readonly VendorPlan[], _deps: TaskRouteDeps, _methods: Map<string, Set<string>>): void {
  // Not yet: proxy routes are refused when descriptors compile (descriptors/proxy-route.ts).
}
