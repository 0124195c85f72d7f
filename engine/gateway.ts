// Composition root: config → descriptors → stores → services → HTTP. Used by the CLI
// (`serve`) and by tests, which start real listening gateways on loopback.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/types.ts';
import { compileVendors, type AsyncRoutePlan, type VendorPlan } from './descriptors/compile.ts';
import { loadVendorDir } from './descriptors/load-descriptors.ts';
import { EventBus } from './events/bus.ts';
import { buildApp } from './http/app.ts';
import { MemoryJobScheduler, type JobScheduler } from './jobs/scheduler.ts';
import { createLogger } from './log/logger.ts';
import { SandboxSimulator } from './sandbox/simulator.ts';
import { MemoryTaskStore } from './store/memory/tasks.ts';
import { MemoryTenantStore } from './store/memory/tenants.ts';
import { noAccounting, type TaskAccounting } from './tasks/accounting.ts';
import { TaskLifecycle } from './tasks/lifecycle.ts';
import type { TaskStore } from './tasks/store.ts';
import { hashKey, TenantService } from './tenants/service.ts';
import { createUpstreamAgent } from './upstream/client.ts';
import { createAjv } from './validation/ajv.ts';
import { systemClock, type Clock } from './util/clock.ts';

/** The sandbox demo tenant: a fixed id, so its tasks survive restarts in Redis mode. */
export const DEMO_TENANT_ID = '00000000-0000-4000-8000-00000000de00';

export interface GatewayOptions {
  clock?: Clock;
  logger?: Logger;
}

export interface Gateway {
  readonly url: string;
  readonly server: Server;
  readonly config: GatewayConfig;
  readonly logger: Logger;
  readonly vendors: readonly VendorPlan[];
  readonly tenants: TenantService;
  readonly tasks: TaskStore;
  readonly lifecycle: TaskLifecycle;
  readonly bus: EventBus;
  readonly scheduler: JobScheduler;
  readonly sandbox?: SandboxSimulator;
  /** Stop accepting, let in-flight requests finish (up to the grace period), stop workers. */
  close(): Promise<void>;
}

export async function startGateway(config: GatewayConfig, opts: GatewayOptions = {}): Promise<Gateway> {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.log.level);
  const ajv = createAjv({ useDefaults: true });
  const loaded = loadVendorDir(config.vendors.dir, ajv, config.vendors.disabled);

  let sandbox: SandboxSimulator | undefined;
  if (config.sandbox.enabled) {
    sandbox = new SandboxSimulator(loaded, { clock, queuedMs: config.sandbox.queued_ms * config.timing.scale, runningMs: config.sandbox.running_ms * config.timing.scale });
    await sandbox.start();
  }
  const dispatcher = createUpstreamAgent();
  const vendors = compileVendors(loaded, {
    ajv,
    config,
    clock,
    dispatcher,
    baseUrlFor: (vendor) => sandbox?.urlFor(vendor) ?? config.upstreams[vendor]?.base_url,
  });
  const routes = new Map<string, AsyncRoutePlan>();
  for (const v of vendors) for (const r of v.routes) if (r.kind === 'async') routes.set(r.key, r);

  const scheduler = new MemoryJobScheduler((queue, jobId, err) => logger.error({ err, queue, job_id: jobId }, 'job failed'));
  const tasks = new MemoryTaskStore();
  const tenants = new TenantService(new MemoryTenantStore(), clock);
  const bus = new EventBus(clock);
  const accounting: TaskAccounting = noAccounting;
  const lifecycle = new TaskLifecycle({ store: tasks, scheduler, bus, clock, accounting, logger, routes, pollErrorLimit: config.timing.poll_error_limit });
  lifecycle.startWorkers();

  await bootstrapDemoTenant(config, tenants, logger);

  const app = buildApp({ logger, vendors, tenants, lifecycle, tasks, trustProxy: config.server.trust_proxy, admin: { token: config.admin.token, tenants, ajv } });
  const server = createServer(app);
  server.keepAliveTimeout = 65_000; // longer than common load balancers' idle timeout
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.server.port, config.server.host, resolve);
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address === '::' ? '::1' : addr.address}]` : addr.address === '0.0.0.0' ? '127.0.0.1' : addr.address;
  const url = `http://${host}:${addr.port}`;
  logger.info({ url, vendors: vendors.map((v) => v.vendor), sandbox: Boolean(sandbox), store: config.store.kind }, 'gateway listening');
  if (!config.admin.token) logger.warn('admin API disabled: set GATEWAY_ADMIN_TOKEN to enable it');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive sockets become idle as their last response ends: close them as they do.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      server.closeIdleConnections();
      const grace = setTimeout(() => server.closeAllConnections(), config.server.shutdown_grace_ms);
      await drained;
      clearInterval(sweep);
      clearTimeout(grace);
      await scheduler.close();
      await sandbox?.close();
      await dispatcher.close();
      logger.info('gateway stopped');
    })());

  return { url, server, config, logger, vendors, tenants, tasks, lifecycle, bus, scheduler, sandbox, close };
}

/** The demo tenant exists only while the sandbox is on; when it is off, it is disabled. */
async function bootstrapDemoTenant(config: GatewayConfig, tenants: TenantService, logger: Logger): Promise<void> {
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
  logger.info({ tenant_id: DEMO_TENANT_ID }, 'sandbox demo tenant ready (API key from GATEWAY_DEMO_API_KEY)');
}
