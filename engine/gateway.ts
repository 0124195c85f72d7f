// Composition root: config → descriptors → stores → services → HTTP. Used by the CLI
// (`serve`) and by tests, which start real listening gateways on loopback.
import type { Server } from 'node:http';
import { createServer } from './util/node-http.ts';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/types.ts';
import { dependencyUnavailable, GatewayError } from './errors/gateway-error.ts';
import { compileVendors, type AsyncRoutePlan, type VendorPlan } from './descriptors/compile.ts';
import { loadVendorDir } from './descriptors/load-descriptors.ts';
import { fixtureProblems } from './sandbox/fixture-run.ts';
import { LoadError } from './config/yaml-source.ts';
import { EventBus } from './events/bus.ts';
import { buildApp } from './http/app.ts';
import { answerRefusals } from './http/client-error.ts';
import { DataPlane } from './http/data-plane.ts';
import { FrontDoor } from './http/front-door.ts';
import { listenForMetrics } from './http/metrics-endpoint.ts';
import { setScrapeSources, setTenantLabel } from './metrics/metrics.ts';
import type { JobScheduler } from './jobs/scheduler.ts';
import { accessLogger, createLogger } from './log/logger.ts';
import { throttled } from './log/throttle.ts';
import { createResultBackend, createStores, ledgerBackend, type Role, type Stores } from './stores.ts';
import { services } from './services.ts';
import { ResultService } from './results/service.ts';
import { ProxyHandler } from './http/proxy-handler.ts';
import { ProxyService } from './proxy/requests.ts';
import type { ProxyBilling } from './proxy/ports.ts';
import { Admission, type RequestLimits } from './tenants/admission.ts';
import { SandboxSimulator } from './sandbox/simulator.ts';
import { creditsToMilli } from './util/money.ts';
import { BilledTaskAccounting } from './billing/task-accounting.ts';
import { BillingService } from './billing/service.ts';
import { RequestCharges } from './billing/request-charges.ts';
import { tenantBillingRouter } from './http/billing-routes.ts';
import { LimitsService } from './limits/service.ts';
import { requireApiKey } from './http/auth.ts';
import { consoleSessionRouter } from './http/console-session-routes.ts';
import { tenantConsoleRouter } from './http/tenant-console-routes.ts';
import { consolePagesRouter } from './http/console-pages.ts';
import { LedgerReports } from './billing/reports.ts';
import { TaskConsole } from './tasks/console.ts';
import { KeySelfService } from './tenants/self-service.ts';
import { ConsoleSessions } from './tenants/sessions.ts';
import { webhookRouter } from './http/webhook-routes.ts';
import type { Webhooks } from './webhooks/service.ts';
import { activeByVendor } from './tasks/active.ts';
import { TaskLifecycle } from './tasks/lifecycle.ts';
import type { TaskStore } from './tasks/store.ts';
import { hashKey, TenantService } from './tenants/service.ts';
import { createUpstreamAgent } from './upstream/client.ts';
import { createAjv } from './validation/ajv.ts';
import { systemClock, type Clock } from './util/clock.ts';
import { within } from './util/within.ts';
import type { TracingSdk } from './tracing/sdk.ts';
import { withTraceIds } from './tracing/tracing.ts';

/** The sandbox demo tenant: a fixed id, so its tasks survive restarts in Redis mode. */
export const DEMO_TENANT_ID = '00000000-0000-4000-8000-00000000de00';

/** /readyz waits this long at most for the store's PING (probes usually time out at 1 s). */
const READY_PING_MS = 500;
/** Shutdown: how long work cut at the end of the grace period gets to wind down. */
const CUT_WAIT_MS = 500;

export interface GatewayOptions {
  clock?: Clock;
  logger?: Logger;
  /** `all` (default): serve HTTP and run jobs; `api`: HTTP only; `worker`: jobs only (redis store). */
  role?: Role;
  /** /readyz's check beyond this process: the other workers of `serve --workers` (engine/cluster). */
  siblingsReady?: () => Promise<GatewayError | undefined>;
  /** Benchmarks only (bench/chat-gateway.ts): stand-ins for the chat path's limits and billing, given the real ones. */
  chatPorts?: (real: ChatPorts) => ChatPorts;
}

/** What the chat path asks of limits and billing (its hold is its funds check). */
export interface ChatPorts {
  limits: RequestLimits;
  billing: ProxyBilling;
}

export interface Gateway {
  readonly url: string;
  /** The metrics listener's GET /metrics URL; undefined when metrics have no listener. */
  readonly metricsUrl?: string;
  readonly server: Server;
  readonly config: GatewayConfig;
  readonly logger: Logger;
  readonly vendors: readonly VendorPlan[];
  readonly tenants: TenantService;
  readonly tasks: TaskStore;
  readonly lifecycle: TaskLifecycle;
  readonly bus: EventBus;
  readonly scheduler: JobScheduler;
  readonly billing: BillingService;
  readonly webhooks: Webhooks;
  readonly limits: LimitsService;
  readonly proxy: ProxyHandler;
  /** The per-request access log (both planes). */
  readonly accessLog: Logger;
  readonly sandbox?: SandboxSimulator;
  /** This process's own readiness (what /readyz checks, without the other workers). */
  ready(): Promise<GatewayError | undefined>;
  /** The result store (undefined when results.store is off). */
  readonly results?: ResultService;
  /**
   * Stop accepting (/readyz answers 503), let in-flight requests, jobs and submissions finish
   * for up to server.shutdown_grace_ms, then cut what is left (upstream calls included) and stop.
   */
  close(): Promise<void>;
}

export async function startGateway(config: GatewayConfig, opts: GatewayOptions = {}): Promise<Gateway> {
  const clock = opts.clock ?? systemClock;
  const baseLogger = opts.logger ?? createLogger(config.log.level);
  // Traced: lines written inside a span carry its ids (engine/tracing/); untraced, no formatter runs.
  const logger = config.tracing.enabled ? withTraceIds(baseLogger) : baseLogger;
  const role = opts.role ?? 'all';
  const { ajv, sandbox, dispatcher, vendors, stores, routes } = await startFoundation(config, role, clock, logger);
  const { scheduler, tasks } = stores;
  const resultBackend = await createResultBackend(config);
  const { tenants, bus, limits, webhooks, wallets, billing, idempotency, ledgerArchive } = services(config, stores, clock, logger, ledgerBackend(config, resultBackend));
  // The result host: results.base_url, else server.public_base_url, else this process's address once it listens.
  let listening = '';
  const resultHost = (config.results.base_url ?? config.server.public_base_url)?.replace(/\/+$/, '');
  const results = resultBackend && new ResultService({ backend: resultBackend, tasks, config: config.results, clock, logger, scheduler, timeScale: config.timing.scale,
    baseUrl: () => resultHost ?? (listening || `http://${config.server.host}:${config.server.port}`), trustedOrigins: sandbox ? [new URL(sandbox.urlFor('x')).origin] : [] });
  const accounting = new BilledTaskAccounting(billing, limits, { tasks, clock, tenantIds: async () => (await tenants.listTenants()).map((t) => t.id) });
  const lifecycle = new TaskLifecycle({ store: tasks, scheduler, bus, clock, accounting, logger, routes, sharedMedia: stores.media, results, ...lifecycleTimings(config) });
  // Workers run jobs (polls, deliveries, sweeps, purges); api processes only add them.
  if (role !== 'api') {
    lifecycle.startWorkers();
    await lifecycle.scheduleSweep();
    await webhooks.dispatcher.startPurgeSchedule();
    await Promise.all([results?.startWorkers(), ledgerArchive?.startWorkers()]);
  }

  await bootstrapDemoTenant(config, tenants, billing, logger);

  // The console (docs/console-api.md): sessions, and the tenant self-service API behind them.
  const sessions = new ConsoleSessions({ store: stores.sessions, tenants, clock, ttlSeconds: config.console?.session_ttl_seconds ?? 3600, adminToken: config.admin.token });
  const consoleAuth = requireApiKey(tenants, sessions);
  const reports = new LedgerReports(ledgerArchive ?? wallets);
  const billingRoutes = { billing, limits, tenants, ajv, reports, auth: consoleAuth };
  const taskConsole = new TaskConsole(tasks, async (tenantId, id) => (await webhooks.deliveries.listForEvent(tenantId, id, { limit: 100 })).data);
  // Proxied routes (chat completions, model lists), served by the data plane.
  // Benchmarks may stand in for what the chat path asks of limits and billing (opts.chatPorts).
  const requestCharges = new RequestCharges(billing, logger);
  const ports = opts.chatPorts?.({ limits, billing: requestCharges }) ?? { limits, billing: requestCharges };
  const admission = new Admission({ tenants, limits: ports.limits });
  const accessLog = accessLogger(logger);
  const proxy = new ProxyHandler({ service: new ProxyService(vendors, { admission, billing: ports.billing, logger }), logger, accessLog });
  const state = { draining: false };
  const { ready, readiness } = readinessOf(config, stores, state, opts.siblingsReady);
  const app = buildApp({
    logger, vendors, readiness,
    metricsToken: config.metrics.enabled ? config.metrics.token : null,
    trustProxy: config.server.trust_proxy,
    admin: {
      token: config.admin.token, tenants, ajv, sessions, billing: billingRoutes, webhooks,
    },
    tenantRouters: [
      tenantBillingRouter(billingRoutes), webhookRouter(webhooks, { auth: consoleAuth }),
      consoleSessionRouter(sessions),
      tenantConsoleRouter({ keys: new KeySelfService(tenants, () => clock.now()), tasks: taskConsole, reports, sessions, auth: consoleAuth, ajv, clock, storage: results && ((id) => results.storageUse(id)) }),
      // The pages last: their /console/:a… patterns would otherwise label the /console/v1 API routes.
      // Thumbnails come from the result host (an http one of its own needs naming) or, with the store off, the sandbox.
      consolePagesRouter({ imgOrigins: [...(sandbox ? [new URL(sandbox.urlFor('x')).origin] : []), ...(results && resultHost ? [new URL(resultHost).origin] : [])] }),
    ],
  });
  // Every request enters here: descriptor routes to the data plane, the rest to express.
  const dataPlane = new DataPlane(vendors, { admission, lifecycle, tasks, idempotency, proxy, results });
  const door = new FrontDoor({ logger, accessLog, dataPlane, controlPlane: app });
  const server = createHttpServer(config, door, logger);
  const url = role === 'worker' ? '' : await listen(server, config);
  listening = url;
  // Metrics: the figures read at scrape time come from this gateway's stores.
  setTenantLabel(config.metrics.tenant_label_max || undefined);
  const unscrape = scrapeFrom(stores, config, lifecycle);
  const metrics = await startMetrics(config, async () => {
    unscrape();
    server.close();
    await Promise.all([stores.close(0), webhooks.close(), sandbox?.close(), dispatcher.close(), results?.close()]);
  });
  // Last, once nothing can fail: the SDK is loaded only when tracing is on.
  const tracingSdk: TracingSdk | undefined = config.tracing.enabled ? (await import('./tracing/sdk.ts')).startTracing(config.tracing, logger) : undefined;
  logger.info({ url, metrics_url: metrics?.url, role, vendors: vendors.map((v) => v.vendor), sandbox: Boolean(sandbox), store: config.store.kind }, role === 'worker' ? 'gateway worker running' : 'gateway listening');
  if (!config.admin.token) logger.warn('admin API disabled: set GATEWAY_ADMIN_TOKEN to enable it');

  const close = shutdownOf({ config, logger, state, server, door, lifecycle, scheduler, dispatcher, unscrape, metrics, requestCharges, limits, stores, webhooks, results, sandbox, tracingSdk });
  return { url, metricsUrl: metrics?.url, server, config, logger, vendors, tenants, tasks, lifecycle, bus, scheduler, billing, limits, webhooks, proxy, accessLog, sandbox, results, ready, close };
}

/**
 * What every other part stands on: the enabled descriptors (refused as `check` refuses them),
 * the sandbox when it is on, the upstream agent, the compiled vendors and the stores.
 */
async function startFoundation(config: GatewayConfig, role: Role, clock: Clock, logger: Logger) {
  const ajv = createAjv({ useDefaults: true });
  const loaded = loadVendorDir(config.vendors.dir, ajv, config.vendors.enabled);
  // What `gateway check` refuses in an enabled descriptor's fixtures, serve refuses too: a task
  // the sandbox would play is one the gateway can run.
  const fixtureRefusals = await fixtureProblems(loaded);
  if (fixtureRefusals.length) throw new LoadError(fixtureRefusals);

  let sandbox: SandboxSimulator | undefined;
  if (config.sandbox.enabled) {
    sandbox = new SandboxSimulator(loaded, { clock, queuedMs: config.sandbox.queued_ms * config.timing.scale, runningMs: config.sandbox.running_ms * config.timing.scale });
    await sandbox.start();
  }
  const dispatcher = createUpstreamAgent();
  let vendors: VendorPlan[];
  let stores: Stores;
  try {
    vendors = compileVendors(loaded, {
      ajv,
      config,
      clock,
      dispatcher,
      baseUrlFor: (vendor, member) => sandbox?.urlFor(vendor, member?.index ?? 0) ?? member?.base_url ?? config.upstreams[vendor]?.base_url,
    });
    // Once a second at most per kind of failure, with a count: when the store refuses writes,
    // every job fails the same way (engine/log/throttle.ts).
    const failures = throttled(logger);
    const longestTaskMs = Math.max(0, ...vendors.flatMap((v) => v.routes.map((r) => (r.kind === 'async' ? r.maxExecutionMs : 0))));
    stores = await createStores(config, role, (queue, jobId, err) => failures.error({ err, queue, job_id: jobId }, 'job failed'), (err) => failures.warn({ err }, 'redis connection trouble; reconnecting'), longestTaskMs);
  } catch (err) {
    // Nothing half-started stays behind a failed start.
    await sandbox?.close();
    await dispatcher.close();
    throw err;
  }
  const routes = new Map<string, AsyncRoutePlan>();
  for (const v of vendors) for (const r of v.routes) if (r.kind === 'async') routes.set(r.key, r);
  // Shared breakers are read at most once a second per member (scaled with the test clock).
  const breakerCacheMs = config.store.kind === 'redis' ? Math.max(1, Math.min(1000, Math.round(1000 * config.timing.scale))) : 0;
  for (const v of vendors) v.pool.attach(stores.breakers, breakerCacheMs);
  return { ajv, sandbox, dispatcher, vendors, stores, routes };
}

/** The task lifecycle's settings from the config (timings scaled with the test clock). */
function lifecycleTimings(config: GatewayConfig) {
  return {
    pollErrorLimit: config.timing.poll_error_limit,
    maxCallsRunning: config.server.max_task_calls_running,
    sweepIntervalMs: Math.max(1, Math.round(config.timing.sweep_interval_ms * config.timing.scale)),
    sweepGraceMs: Math.max(1, Math.round(config.timing.sweep_grace_ms * config.timing.scale)),
    publicBaseUrl: config.server.public_base_url?.replace(/\/+$/, ''),
  };
}

/** Readiness (GET /readyz): not while draining, nor while the store or the job queue is away. */
function readinessOf(config: GatewayConfig, stores: Stores, state: { draining: boolean }, siblings?: () => Promise<GatewayError | undefined>) {
  const ready = async (): Promise<GatewayError | undefined> => {
    if (state.draining) return new GatewayError('temporarilyUnavailable', 'The gateway is shutting down; send requests to another instance.');
    const down = await stores.unavailable(Math.min(READY_PING_MS, config.store.command_timeout_ms));
    return down.length ? dependencyUnavailable(down.join(' and ')) : undefined;
  };
  const readiness = siblings ? async () => {
    const [own, others] = await Promise.all([ready(), siblings()]);
    return own ?? others;
  } : ready;
  return { ready, readiness };
}

/**
 * The HTTP server in front of the door. Slow or idle senders are closed (408) once their
 * headers, or their whole request, are late; Node refuses a headers timeout above the request
 * timeout, so it is capped there. The check runs a few times per headers timeout (at most once
 * a second) so the limits hold closely.
 */
function createHttpServer(config: GatewayConfig, door: FrontDoor, logger: Logger): Server {
  const requestTimeout = config.server.request_timeout_ms;
  const headersTimeout = requestTimeout > 0 ? Math.min(config.server.headers_timeout_ms, requestTimeout) : config.server.headers_timeout_ms;
  const server = createServer({
    headersTimeout, requestTimeout, connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.round(headersTimeout / 5))),
    requireHostHeader: false, // refuseWithoutHost answers it with a problem body
  }, door.listener);
  server.keepAliveTimeout = 65_000; // longer than common load balancers' idle timeout
  answerRefusals(server, logger);
  return server;
}

/** The metrics listener, when it has one; a failure to listen undoes the start (`undo`) and is thrown. */
async function startMetrics(config: GatewayConfig, undo: () => Promise<void>): Promise<{ server: Server; url: string } | undefined> {
  if (!config.metrics.enabled || config.metrics.port === null) return undefined;
  try {
    return await listenForMetrics(config.metrics.host, config.metrics.port, config.metrics.token);
  } catch (err) {
    await undo();
    throw err;
  }
}

interface Running {
  config: GatewayConfig; logger: Logger; state: { draining: boolean }; server: Server; door: FrontDoor;
  lifecycle: TaskLifecycle; scheduler: JobScheduler; dispatcher: ReturnType<typeof createUpstreamAgent>;
  unscrape: () => void; metrics?: { server: Server }; requestCharges: RequestCharges; limits: LimitsService;
  stores: Stores; webhooks: Webhooks; results?: ResultService; sandbox?: SandboxSimulator; tracingSdk?: TracingSdk;
}

/** Gateway.close: once, however often it is called. */
function shutdownOf(r: Running): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= shutdown(r));
}

async function shutdown(r: Running): Promise<void> {
  const { server, lifecycle, dispatcher } = r;
  const graceMs = r.config.server.shutdown_grace_ms;
  r.state.draining = true; // /readyz answers 503 from now on
  const drained = new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  // Keep-alive sockets become idle as their last response ends: close them as they do.
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  server.closeIdleConnections();
  // What is in flight gets the grace period: requests (with what follows their answer: a
  // chat charge, the access line), running jobs (no new one is taken),
  // the submissions that followed a 202.
  const finished = Promise.all([drained.then(() => Promise.all([r.door.idle(), lifecycle.idle()])), r.scheduler.close(graceMs)]);
  if ((await within(finished, graceMs)) === 'late') {
    // Then it is cut, upstream calls included (undici), so nothing outlives the grace period.
    // What was cut is left as it was: its task stays active and is re-driven (the job is
    // run again, or the sweep re-submits it).
    r.logger.warn({ grace_ms: graceMs }, 'shutdown grace period over: cutting what is still in flight');
    lifecycle.stop();
    server.closeAllConnections();
    await dispatcher.destroy().catch(() => {});
    await within(finished, CUT_WAIT_MS);
  }
  clearInterval(sweep);
  r.unscrape();
  r.metrics?.server.close();
  r.metrics?.server.closeAllConnections();
  await Promise.all([lifecycle.flushWithdrawals(CUT_WAIT_MS), r.requestCharges.flush(CUT_WAIT_MS)]);
  await r.stores.close(0);
  await r.webhooks.close();
  await r.results?.close();
  await r.sandbox?.close();
  if (!dispatcher.destroyed) await dispatcher.close();
  // After everything that makes spans has stopped: the last batch goes out.
  await r.tracingSdk?.shutdown();
  throttled(r.logger).flushAll();
  r.logger.info('gateway stopped');
}

/** Listen on server.host:port; the URL clients reach it at (a wildcard address as loopback). */
async function listen(server: Server, config: GatewayConfig): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.server.port, config.server.host, resolve);
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address === '::' ? '::1' : addr.address}]` : addr.address === '0.0.0.0' ? '127.0.0.1' : addr.address;
  return `http://${host}:${addr.port}`;
}

/** The figures the metrics read at scrape time, from this gateway's stores; returns the undo. */
function scrapeFrom(stores: Stores, config: GatewayConfig, lifecycle: TaskLifecycle): () => void {
  return setScrapeSources({
    taskCalls: (gauge) => gauge.set(lifecycle.callsRunning),
    activeTasks: async (gauge) => {
      gauge.reset();
      for (const [vendor, n] of await activeByVendor(stores.tasks)) gauge.set({ vendor }, n);
    },
    dependencies: async (gauge) => {
      const down = await stores.unavailable(Math.min(READY_PING_MS, config.store.command_timeout_ms));
      for (const d of ['store', 'job queue']) gauge.set({ dependency: d.replace(' ', '_') }, down.includes(d) ? 0 : 1);
    },
    queues: async (depth, lag) => {
      for (const q of await stores.scheduler.stats()) {
        depth.set({ queue: q.queue, state: 'due' }, q.due);
        depth.set({ queue: q.queue, state: 'delayed' }, q.delayed);
        lag.set({ queue: q.queue }, q.lagSeconds);
      }
    },
  });
}

/** The demo tenant exists only while the sandbox is on; when it is off, it is disabled. */
async function bootstrapDemoTenant(config: GatewayConfig, tenants: TenantService, billing: BillingService, logger: Logger): Promise<void> {
  const existing = (await tenants.listTenants()).find((t) => t.id === DEMO_TENANT_ID);
  if (!config.sandbox.enabled) {
    if (existing && !existing.disabled) await tenants.setDisabled(DEMO_TENANT_ID, true);
    return;
  }
  if (!existing) await tenants.createTenant({ id: DEMO_TENANT_ID, name: 'Sandbox demo tenant' });
  else if (existing.disabled) await tenants.setDisabled(DEMO_TENANT_ID, false);
  const keys = await tenants.listKeys(DEMO_TENANT_ID);
  const demoKey = config.sandbox.demo_api_key!;
  if (!keys.some((k) => k.hash === hashKey(demoKey) && !k.revoked_at)) {
    await tenants.issueKey(DEMO_TENANT_ID, { name: 'sandbox demo key', secret: demoKey, mode: 'test' });
  }
  // Once per demo tenant (the ref makes the top-up idempotent across restarts).
  await billing.topUp(DEMO_TENANT_ID, creditsToMilli(config.sandbox.demo_credits), 'sandbox-demo-credits', 'sandbox demo credits');
  logger.info({ tenant_id: DEMO_TENANT_ID }, 'sandbox demo tenant ready (API key from GATEWAY_DEMO_API_KEY)');
}
