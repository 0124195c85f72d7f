// The one door every HTTP request enters. It continues (or starts) the trace, then hands the
// request to the data plane (the descriptor routes, ./data-plane.ts) or, for any other path, to
// the control plane (express: admin API, webhook management, billing views, docs, health;
// ./app.ts). 404 and 405 come from the two planes' route tables (./route-table.ts) before any
// route runs. It writes every request's access line (./access-log.ts) and renders the data
// plane's errors as problems (./answer.ts; express's error handler uses the same functions).
// Parser-level refusals never reach here (./client-error.ts answers them on the server).
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express } from 'express';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { GatewayError } from '../errors/gateway-error.ts';
import { accessLine, logRequest } from './access-log.ts';
import { problemCodeOf, toGatewayError, writeProblem, writeTaskInfoValidationError } from './answer.ts';
import { refuseWithoutHost } from './client-error.ts';
import type { DataPlane, Match } from './data-plane.ts';
import { controlRouteTable, type RouteTable } from './route-table.ts';
import { continueTrace, endServerTrace, startServerTrace, type Trace } from './traceparent.ts';
import { runInSpan, tracing } from '../tracing/tracing.ts';
import { httpInFlight } from '../metrics/metrics.ts';
import { Visit } from './visit.ts';

/** What express's handlers find on res.locals: the trace, and the caller once authenticated. */
interface ExpressLocals {
  trace: Trace;
  auth?: { tenantId: string };
}

export interface FrontDoorDeps {
  logger: Logger;
  /** The access log (engine/log/logger.ts accessLogger), shared with the proxy's wire. */
  accessLog: Logger;
  dataPlane: DataPlane;
  /** The express app of the control plane; it finds the trace on res.locals.trace. */
  controlPlane: Express;
}

export class FrontDoor {
  private readonly logger: Logger;
  private readonly accessLog: Logger;
  private readonly dataPlane: DataPlane;
  private readonly controlPlane: FrontDoorDeps['controlPlane'];
  private readonly controlRoutes: RouteTable<string>;
  /** server.trust_proxy, as the control plane's express app has it. */
  private readonly trustProxy: boolean;
  /**
   * Data-plane requests whose handler still runs. Their answer may be out and the connection
   * closed (so the server counts them done) while the chat charge and the access line still
   * follow: shutdown waits for these before it closes the store.
   */
  private serving = 0;
  /** Resolves idle() once `serving` is back to 0. */
  private onIdle: (() => void) | undefined;

  constructor(deps: FrontDoorDeps) {
    this.logger = deps.logger;
    this.accessLog = deps.accessLog;
    this.dataPlane = deps.dataPlane;
    this.controlPlane = deps.controlPlane;
    this.controlRoutes = controlRouteTable(deps.controlPlane);
    this.trustProxy = deps.controlPlane.get('trust proxy') === true;
  }

  /** The server's request listener. */
  readonly listener: RequestListener = (req, res) => {
    const t0 = performance.now();
    if (refuseWithoutHost(req, res, this.logger)) return;
    const trace = tracing ? startServerTrace(req) : continueTrace(req.headers.traceparent as string | undefined);
    res.setHeader('Traceparent', trace.traceparent);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    httpInFlight.inc();
    // on, not once: a response closes once, and once() wraps and later removes the listener.
    res.on('close', leave);
    const match = this.dataPlane.match(method, path) ?? this.controlRoutes.find(method, path);
    if (!('error' in match) && !('entry' in match)) {
      const locals: ExpressLocals = { trace };
      (res as ServerResponse & { locals?: ExpressLocals }).locals = locals;
      // The route label: the control table's pattern (a path that is not valid percent-encoding has none).
      const route = 'store' in match ? match.store : undefined;
      res.once('finish', () => this.log(req, res, { trace, t0, path, route, tenantId: locals.auth?.tenantId, logged: false }));
      const span = trace.span;
      if (span) {
        res.once('close', () => endServerTrace(span, method, res.statusCode, route, undefined, problemCodeOf(res)));
        runInSpan(span, () => this.controlPlane(req, res));
      } else this.controlPlane(req, res);
      return;
    }
    // A push callback's or a result file's token is its credential: the access log shows the path without it.
    const kind = 'entry' in match ? match.entry.route.kind : undefined;
    const shown = kind === 'callback' ? path.replace(/[^/]*$/, '***') : kind === 'result' ? path.replace(/^(\/[^/]*\/[^/]*\/)[^/]*/, '$1***') : path;
    const visit = new Visit(req, trace, t0, shown, 'entry' in match ? match.entry.body : undefined, this.trustProxy);
    // Counted, not kept as a set of promises: a .finally() per request cost two promises.
    this.serving++;
    if (trace.span) void runInSpan(trace.span, () => this.serve(req, res, visit, match));
    else void this.serve(req, res, visit, match);
  };

  /** Resolves once no data-plane handler runs (shutdown: after the server stopped taking requests). */
  idle(): Promise<void> {
    if (this.serving === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const before = this.onIdle;
      this.onIdle = () => {
        before?.();
        resolve();
      };
    });
  }

  /**
   * A data-plane request or a 404/405 of either table, answered (a problem when its handler
   * throws) and logged. Never rejects: anything thrown after the answer (the access line, the
   * span) is logged here, and the request leaves the `serving` count whatever happened.
   */
  private async serve(req: IncomingMessage, res: ServerResponse, visit: Visit, match: Match): Promise<void> {
    try {
      try {
        if ('error' in match) {
          req.resume();
          throw match.error;
        }
        await this.dataPlane.serve(req, res, visit, match.entry, match.params);
      } catch (err) {
        this.refuse(res, visit, err);
      }
      this.log(req, res, visit);
      if (visit.trace.span) endServerTrace(visit.trace.span, req.method ?? 'GET', res.statusCode, routeTemplate(match, visit.path), 'entry' in match ? match.entry.route.key : undefined, problemCodeOf(res));
    } catch (err) {
      this.logger.error({ err, trace_id: visit.trace.traceId }, 'request handling failed after its answer');
    } finally {
      if (--this.serving === 0 && this.onIdle) {
        const idle = this.onIdle;
        this.onIdle = undefined;
        idle();
      }
    }
  }

  private refuse(res: ServerResponse, visit: Visit, err: unknown): void {
    const e = toGatewayError(err, this.logger);
    if (res.headersSent) res.destroy();
    else if (res.destroyed) return;
    else if (visit.taskInfoErrors && e.status === 400 && err instanceof GatewayError) writeTaskInfoValidationError(res, e, visit.trace.traceId);
    else writeProblem(res, e, visit.path, visit.trace.traceId);
  }

  private log(req: IncomingMessage, res: ServerResponse, visit: Pick<Visit, 'trace' | 't0' | 'path' | 'route' | 'tenantId' | 'logged'>): void {
    if (visit.logged) return;
    const latencyMs = performance.now() - visit.t0;
    logRequest(this.accessLog, accessLine(visit.trace.traceId, req.method, visit.route, visit.path, res.statusCode, latencyMs, visit.tenantId), latencyMs, problemCodeOf(res));
  }
}

/** The span's http.route: the descriptor route's path (a task read's with its :task_id, a cancel's with /cancel after it). */
function routeTemplate(match: Match, path: string): string | undefined {
  if (!('entry' in match)) return undefined;
  const { route } = match.entry;
  if (route.kind === 'callback' || route.kind === 'result') return route.path; // never the token
  if (route.kind === 'async' || route.kind === 'status') {
    if (!('tasksOf' in match.entry)) return route.path;
    return 'action' in match.entry ? `${route.path}/:task_id/${match.entry.action}` : `${route.path}/:task_id`;
  }
  return path; // a proxy route or one of its aliases: no parameters
}

function leave(): void {
  httpInFlight.dec();
}
