// Async creates answered ahead of express, as the chat proxy is: the create is the gateway's
// hottest route, and express's routing and middleware chain cost a good part of it (the
// throughput bench: 4,750 → 5,500 creates/s). `tryHandle` takes POSTs on the exact path of a
// route without media bodies and answers them as the express route does: the same body reader,
// checks in the same order, the same answers and log line (test/http/task-fast-lane.test.ts).
// Odd path spellings and media routes stay with express.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { AsyncRoutePlan, VendorPlan } from '../descriptors/compile.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { accessLogger } from '../log/logger.ts';
import { logRequest } from './access-log.ts';
import { requireScope, type AuthContext } from './context.ts';
import { toGatewayError, writeJson, writeProblem, writeTaskInfoValidationError } from './problem.ts';
import { readJsonRequest } from './raw-body.ts';
import { runCreate, type TaskRouteDeps } from './task-routes.ts';
import { continueTrace, type Trace } from './traceparent.ts';

export class TaskFastLane {
  private readonly creates = new Map<string, AsyncRoutePlan>();
  private readonly deps: TaskRouteDeps;
  private readonly logger: Logger;
  private readonly accessLog: Logger;

  constructor(vendors: readonly VendorPlan[], deps: TaskRouteDeps & { logger: Logger }) {
    this.deps = deps;
    this.logger = deps.logger;
    this.accessLog = accessLogger(deps.logger);
    for (const v of vendors) for (const r of v.routes) if (r.kind === 'async' && !r.mediaBody) this.creates.set(r.path, r);
  }

  /** True when the request was taken (it is then answered). */
  tryHandle(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'POST') return false;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const route = this.creates.get(q === -1 ? url : url.slice(0, q));
    if (!route) return false;
    const trace = continueTrace(req.headers.traceparent as string | undefined);
    res.setHeader('Traceparent', trace.traceparent);
    void this.create(req, res, route, trace);
    return true;
  }

  private async create(req: IncomingMessage, res: ServerResponse, route: AsyncRoutePlan, trace: Trace): Promise<void> {
    const t0 = performance.now();
    let auth: AuthContext | undefined;
    let creating = false;
    try {
      // The express route's order: body, then key, scope and limits, then the create.
      const body = await readJsonRequest(req, route.maxBodyBytes);
      auth = await this.deps.tenants.authenticate(req.headers.authorization);
      requireScope(auth, route.vendor, 'create');
      await this.deps.limits.checkRequest({ tenantId: auth.tenantId, keyId: auth.keyId, model: route.key });
      const key = req.headers['idempotency-key'];
      creating = true;
      const response = await runCreate(route, this.deps, auth, body, Array.isArray(key) ? key.join(', ') : key, trace.traceparent);
      writeJson(res, response.status, response.body, response.headers);
    } catch (err) {
      const e = toGatewayError(err, this.logger);
      if (!res.headersSent && !res.destroyed) {
        // As on the express route: a refused create (not a refused body) of a route like video
        // model A answers with a task_info-shaped body.
        if (creating && route.validationShape === 'task_info' && e.status === 400 && err instanceof GatewayError) writeTaskInfoValidationError(res, e, trace.traceId);
        else writeProblem(res, e, route.path, trace.traceId);
      }
    }
    logRequest(this.accessLog, { traceId: trace.traceId, method: 'POST', route: route.key, path: route.path, status: res.statusCode, latencyMs: performance.now() - t0, tenantId: auth?.tenantId });
  }
}
