// `gateway serve`: the gateway in the foreground (logs to stdout; SIGTERM or SIGINT drains and
// stops). With `--workers N` it is the primary of N gateway processes sharing the port
// (engine/cluster/); a process forked by that primary runs here as one of its workers.
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { loadConfigFile } from '../load-config.ts';
import { formatProblem, LoadError } from '../config/yaml-source.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { Gateway, GatewayOptions } from '../gateway.ts';
import { compactHeap } from '../util/heap.ts';
import { flushed } from './flushed.ts';
import { createLogger } from '../log/logger.ts';
import type { Role } from '../stores.ts';
import { runPrimary } from '../cluster/primary.ts';
import { joinCluster, siblingsReady, workerSlot } from '../cluster/worker.ts';

/** How long past server.shutdown_grace_ms a stuck shutdown is waited for before exiting. */
const SHUTDOWN_OVERRUN_MS = 2000;

export function configPath(values: { config?: string }): string {
  return resolve(values.config ?? process.env.GATEWAY_CONFIG ?? 'config.yaml');
}

export async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, role: { type: 'string', default: 'all' }, workers: { type: 'string' } } });
  if (!['all', 'api', 'worker'].includes(values.role)) {
    console.error(`--role must be all, api or worker (got ${values.role})`);
    return 2;
  }
  const workers = values.workers === 'auto' ? availableParallelism() : values.workers === undefined ? undefined : Number(values.workers);
  if (workers !== undefined && !(Number.isInteger(workers) && workers >= 1 && workers <= 1024)) {
    console.error(`--workers must be a whole number from 1 to 1024, or auto (got ${values.workers})`);
    return 2;
  }
  let config: GatewayConfig;
  try {
    config = loadConfigFile(configPath(values));
  } catch (err) {
    if (!(err instanceof LoadError)) throw err;
    for (const p of err.problems) console.error(formatProblem(p));
    console.error(`gateway: ${err.problems.length} problem(s); not started`);
    return 1;
  }
  const slot = workerSlot();
  if (slot !== undefined) return serveWorker(config, values.role as Role, slot);
  if (workers === undefined) return serveOne(config, { role: values.role as Role });
  const refusal = clusterRefusal(config);
  if (refusal) {
    console.error(`gateway: --workers ${refusal}`);
    return 2;
  }
  return runPrimary(config, workers);
}

/** Why `--workers` cannot run with this config: state that lives inside one process. */
function clusterRefusal(config: GatewayConfig): string | undefined {
  if (config.store.kind !== 'redis') return 'needs the redis store (the memory store lives inside one process): set store.kind: redis, or GATEWAY_STORE=redis and REDIS_URL';
  if (config.sandbox.enabled) return 'cannot run the sandbox (its simulated upstreams live inside one process): set sandbox.enabled: false, or serve without --workers';
  return undefined;
}

/** One worker of `serve --workers`: the primary serves the metrics, and /readyz also asks about the others. */
async function serveWorker(config: GatewayConfig, role: Role, slot: number): Promise<number> {
  config.metrics.port = null;
  const logger = createLogger(config.log.level).child({ worker: slot, pid: process.pid });
  return serveOne(config, { role, logger, siblingsReady }, (gateway) => joinCluster(gateway.ready, gateway.url, gateway.logger));
}

async function serveOne(config: GatewayConfig, opts: GatewayOptions, started?: (gateway: Gateway) => void): Promise<number> {
  let gateway: Gateway;
  try {
    // Loaded here, not at the top: the primary of --workers never runs a gateway and stays small.
    const { startGateway } = await import('../gateway.ts');
    gateway = await startGateway(config, opts);
  } catch (err) {
    if (err instanceof LoadError) {
      for (const p of err.problems) console.error(formatProblem(p));
      console.error(`gateway: ${err.problems.length} problem(s); not started`);
      return 1;
    }
    throw err;
  }
  // Start-up's garbage and grown heap are given back (util/heap.ts; 50–100 ms on a 2-vCPU VM),
  // before a worker tells the primary it is ready.
  compactHeap();
  started?.(gateway);
  await new Promise<void>((done) => {
    let stopping = false;
    const stop = (signal: string) => {
      // SIGINT at a terminal reaches every worker and the primary, which then sends SIGTERM: once is enough.
      if (stopping) return;
      stopping = true;
      gateway.logger.info({ signal }, 'shutting down');
      // close() cuts what is in flight at the end of the grace period; should anything still
      // hold it up, the process exits anyway shortly after (a supervisor's SIGKILL would follow).
      const graceMs = gateway.config.server.shutdown_grace_ms;
      setTimeout(() => {
        gateway.logger.error({ grace_ms: graceMs }, 'shutdown overran its grace period; exiting');
        void flushed().then(() => process.exit(1));
      }, graceMs + SHUTDOWN_OVERRUN_MS).unref();
      gateway.close().then(done, done);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  return 0;
}
