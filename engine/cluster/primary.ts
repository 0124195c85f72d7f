// The primary of `serve --workers N`: it serves no request itself. It forks N gateway processes
// (node:cluster; they share the listen port, which the primary hands out connection by
// connection, round-robin), restarts one that exits unasked with back-off, serves the one metrics
// endpoint (every worker summed: ./metrics.ts), answers a worker's /readyz about the others, and
// on SIGTERM or SIGINT asks every worker to drain (each has server.shutdown_grace_ms) and exits
// once they have.
import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { GatewayConfig } from '../config/types.ts';
import { listenForMetrics } from '../http/metrics-endpoint.ts';
import { createLogger } from '../log/logger.ts';
import { clusterRestarts, clusterWorkers, setMetricsText } from '../metrics/metrics.ts';
import { answer, ask, type Answer, type Channel } from './ipc.ts';
import { ClusterMetrics } from './metrics.ts';
import { slotEnv } from './worker.ts';

/** The first restart of a worker waits this long; each quick one after it twice as long, up to MAX. */
const FIRST_RESTART_MS = 500;
const MAX_RESTART_MS = 30_000;
/** A worker that ran this long before exiting restarts after FIRST_RESTART_MS again. */
const STABLE_MS = 60_000;
/** How long a worker's readiness answer is waited for (its own check waits 500 ms at most). */
const READY_ASK_MS = 700;
/** After the grace period, workers get this long (their own overrun limit is 2 s) before SIGKILL. */
const SHUTDOWN_OVERRUN_MS = 3000;

interface Slot {
  readonly n: number;
  worker?: Worker;
  /** The worker has said it serves. */
  started: boolean;
  forkedAt: number;
  /** Consecutive quick exits: the back-off's exponent. */
  quickExits: number;
  restartTimer?: NodeJS.Timeout;
}

/** Runs until SIGTERM / SIGINT and the workers' drain; resolves with the exit code. */
export async function runPrimary(config: GatewayConfig, count: number): Promise<number> {
  const logger = createLogger(config.log.level).child({ worker: 'primary', pid: process.pid });
  const slots = Array.from({ length: count }, (_, i): Slot => ({ n: i + 1, started: false, forkedAt: 0, quickExits: 0 }));
  const metrics = new ClusterMetrics();
  const live = () => new Map(slots.flatMap((s) => (s.worker?.isConnected() ? [[s.n, s.worker as Channel] as const] : [])));
  const gauge = () => {
    clusterWorkers.set({ state: 'configured' }, count);
    clusterWorkers.set({ state: 'ready' }, slots.filter((s) => s.started).length);
  };
  let stopping = false;
  /** Every worker has started once: from then on, one that exits is restarted. */
  let running = false;
  let failed = false;
  let settle!: (code: number) => void;
  const finished = new Promise<number>((resolve) => (settle = resolve));
  let startup!: () => void;
  const allStarted = new Promise<void>((resolve) => (startup = resolve));

  /** /readyz of worker `asker`: every other worker runs and says it is ready. */
  const siblingsReady = async (asker: number): Promise<Answer> => {
    const problems = await Promise.all(slots.filter((s) => s.n !== asker).map(async (s) => {
      if (!s.started || !s.worker?.isConnected()) return `worker ${s.n} of ${count} is not running`;
      const a = await ask(s.worker, { gw: 'ready' }, READY_ASK_MS).catch(() => ({ problem: 'no answer in time' }));
      return a.problem === undefined ? undefined : `worker ${s.n} of ${count}: ${a.problem}`;
    }));
    return { problem: problems.find((p) => p !== undefined) };
  };

  const fork = (slot: Slot) => {
    slot.restartTimer = undefined;
    slot.forkedAt = Date.now();
    const worker = cluster.fork(slotEnv(slot.n));
    slot.worker = worker;
    answer(worker, {
      'siblings-ready': () => siblingsReady(slot.n),
      'cluster-metrics': async () => ({ text: await metrics.text(live()) }),
    });
    worker.on('message', (m: { gw?: string; url?: string }) => {
      if (m?.gw !== 'started' || slot.worker !== worker) return;
      slot.started = true;
      gauge();
      logger.info({ slot: slot.n, worker_pid: worker.process.pid }, 'worker started');
      if (slots.every((s) => s.started)) {
        running = true;
        startup();
      }
    });
    worker.on('exit', (code, signal) => exited(slot, worker, code, signal));
  };

  const exited = (slot: Slot, worker: Worker, code: number | null, signal: string | null) => {
    if (slot.worker !== worker) return;
    slot.worker = undefined;
    slot.started = false;
    gauge();
    void metrics.retire(slot.n);
    if (stopping) {
      if (code !== 0) failed = true;
      logger.info({ slot: slot.n, worker_pid: worker.process.pid, code, signal }, 'worker stopped');
      if (slots.every((s) => !s.worker)) settle(failed ? 1 : 0);
      return;
    }
    if (!running) {
      // At start-up, a worker that cannot start (a port in use, Redis refusing) would fail again:
      // stop, and say so, instead of restarting for ever.
      logger.error({ slot: slot.n, worker_pid: worker.process.pid, code, signal }, 'a worker exited before it started; stopping (its log above says why)');
      void shutdown('start-up failed', 1);
      return;
    }
    slot.quickExits = Date.now() - slot.forkedAt >= STABLE_MS ? 0 : slot.quickExits + 1;
    const delay = Math.min(MAX_RESTART_MS, FIRST_RESTART_MS * 2 ** Math.max(0, slot.quickExits - 1));
    clusterRestarts.inc({ worker: String(slot.n) });
    logger.error({ slot: slot.n, worker_pid: worker.process.pid, code, signal, restart_in_ms: delay }, 'worker exited; restarting it');
    slot.restartTimer = setTimeout(() => fork(slot), delay);
  };

  let metricsServer: { server: Server; url: string } | undefined;
  const shutdown = async (reason: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    if (code) failed = true;
    logger.info({ reason }, 'shutting down: draining every worker');
    for (const s of slots) clearTimeout(s.restartTimer);
    for (const s of slots) s.worker?.process.kill('SIGTERM');
    if (slots.every((s) => !s.worker)) settle(failed ? 1 : 0);
    const overrun = setTimeout(() => {
      logger.error({ grace_ms: config.server.shutdown_grace_ms }, 'workers overran the grace period; killing them');
      for (const s of slots) s.worker?.process.kill('SIGKILL');
      settle(1);
    }, config.server.shutdown_grace_ms + SHUTDOWN_OVERRUN_MS);
    overrun.unref();
    await finished;
    clearTimeout(overrun);
  };
  // `on`, not `once`: a second signal must not kill the primary (its workers would then stop undrained).
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  gauge();
  for (const s of slots) fork(s);
  await Promise.race([allStarted, finished]);
  if (!stopping && config.metrics.enabled && config.metrics.port !== null) {
    setMetricsText(() => metrics.text(live()));
    try {
      metricsServer = await listenForMetrics(config.metrics.host, config.metrics.port, config.metrics.token);
    } catch (err) {
      logger.error({ err }, 'the metrics listener could not start');
      void shutdown('metrics listener', 1);
    }
  }
  if (!stopping) logger.info({ workers: count, metrics_url: metricsServer?.url }, 'gateway cluster running');
  const code = await finished;
  metricsServer?.server.close();
  metricsServer?.server.closeAllConnections();
  logger.info({ code }, 'gateway cluster stopped');
  return code;
}
