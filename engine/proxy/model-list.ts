// The answer of a model-list route (`kind: sync` with `list`): the upstream's list filtered to
// the models offered here and serialised, reused for the route's cache_ms.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { mapUpstreamError } from '../upstream/failure.ts';
import { sanitiseErrorObject } from './error-object.ts';
import { setPath } from '../descriptors/json-path.ts';

/** Concurrent misses share one upstream call; a failed refresh serves the stale list. */
export class ListCache {
  private readonly route: ProxyRoutePlan;
  private readonly logger: Logger;
  private body: Buffer | undefined;
  private at = 0;
  private pending: Promise<Buffer> | undefined;

  constructor(route: ProxyRoutePlan, logger: Logger) {
    this.route = route;
    this.logger = logger;
  }

  get(traceparent: string): Promise<Buffer> {
    if (this.body && performance.now() - this.at < this.route.cacheMs) return Promise.resolve(this.body);
    this.pending ??= this.fetch(traceparent).finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetch(traceparent: string): Promise<Buffer> {
    const route = this.route;
    try {
      const up = await route.upstream.client.call({ method: 'GET', path: route.upstream.relPath, traceparent, stage: 'submit' });
      if (up.status < 200 || up.status >= 300) {
        const own = route.errorObject ? sanitiseErrorObject(route.errorObject(up.body)) : undefined;
        throw await mapUpstreamError(route.errorRules, { stage: 'submit', http_status: up.status, body: up.body, message: own?.message });
      }
      const items = route.list!.items(up.body);
      if (!Array.isArray(items)) throw new GatewayError('upstreamResponseError', "The provider's list answer has no list.");
      const kept = items.filter((item) => {
        const id = route.list!.id(item);
        return typeof id === 'string' && route.list!.keep(id);
      });
      const answer = structuredClone(up.body) as Record<string, unknown>;
      setPath(answer, route.list!.itemsPath, kept);
      this.body = Buffer.from(JSON.stringify(answer));
      this.at = performance.now();
      return this.body;
    } catch (err) {
      // A stale list beats an error: the upstream's list rarely changes.
      if (this.body) {
        this.logger.warn({ err, route: route.key }, 'model list refresh failed; serving the cached list');
        return this.body;
      }
      throw err;
    }
  }
}
