// The primary of `serve --workers N`: it serves no request itself. It forks N gateway processes
// (node:cluster; they share the listen port, which the primary hands out connection by
// connection, round-robin), restarts one that exits unasked with back-off, serves the one metrics
// endpoint (every worker summed: ./metrics.ts), answers a worker's /readyz about the others, and
// on SIGTERM or SIGINT asks every worker to drain (each has server.shutdown_grace_ms) and exits
// once they have.
import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
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
export function runPrimary(config: GatewayConfig, count: number): Promise<number> {
  return new Supervisor(config, count).run();
}

class Supervisor {
  private readonly logger: Logger;
  private readonly slots: Slot[];
  private readonly metrics = new ClusterMetrics();
  private stopping = false;
  /** Every worker has started once: from then on, one that exits is restarted. */
  private running = false;
  private failed = false;
  private settle!: (code: number) => void;
  private readonly finished = new Promise<number>((resolve) => (this.settle = resolve));
  private startup!: () => void;
  private readonly allStarted = new Promise<void>((resolve) => (this.startup = resolve));

  private readonly config: GatewayConfig;
  private readonly count: number;

  constructor(config: GatewayConfig, count: number) {
    this.config = config;
    this.count = count;
    this.logger = createLogger(config.log.level).child({ worker: 'primary', pid: process.pid });
    this.slots = Array.from({ length: count }, (_, i): Slot => ({ n: i + 1, started: false, forkedAt: 0, quickExits: 0 }));
  }

  async run(): Promise<number> {
    const { config, logger } = this;
    // `on`, not `once`: a second signal must not kill the primary (its workers would then stop undrained).
    process.on('SIGTERM', () => void this.shutdown('SIGTERM'));
    process.on('SIGINT', () => void this.shutdown('SIGINT'));
    this.gauge();
    for (const s of this.slots) this.fork(s);
    await Promise.race([this.allStarted, this.finished]);
    let metricsServer: { server: Server; url: string } | undefined;
    if (!this.stopping && config.metrics.enabled && config.metrics.port !== null) {
      setMetricsText(() => this.metrics.text(this.live()));
      try {
        metricsServer = await listenForMetrics(config.metrics.host, config.metrics.port, config.metrics.token);
      } catch (err) {
        logger.error({ err }, 'the metrics listener could not start');
        void this.shutdown('metrics listener', 1);
      }
    }
    if (!this.stopping) logger.info({ workers: this.count, metrics_url: metricsServer?.url }, 'gateway cluster running');
    const code = await this.finished;
    metricsServer?.server.close();
    metricsServer?.server.closeAllConnections();
    logger.info({ code }, 'gateway cluster stopped');
    return code;
  }

  /** The workers that can be asked now, by slot. */
  private live(): Map<number, Channel> {
    return new Map(this.slots.flatMap((s) => (s.worker?.isConnected() ? [[s.n, s.worker as Channel] as const] : [])));
  }

  private gauge(): void {
    clusterWorkers.set({ state: 'configured' }, this.count);
    clusterWorkers.set({ state: 'ready' }, this.slots.filter((s) => s.started).length);
  }

  /** /readyz of worker `asker`: every other worker runs and says it is ready. */
  private async siblingsReady(asker: number): Promise<Answer> {
    const problems = await Promise.all(this.slots.filter((s) => s.n !== asker).map(async (s) => {
      if (!s.started || !s.worker?.isConnected()) return `worker ${s.n} of ${this.count} is not running`;
      const a = await ask(s.worker, { gw: 'ready' }, READY_ASK_MS).catch(() => ({ problem: 'no answer in time' }));
      return a.problem === undefined ? undefined : `worker ${s.n} of ${this.count}: ${a.problem}`;
    }));
    return { problem: problems.find((p) => p !== undefined) };
  }

  private fork(slot: Slot): void {
    slot.restartTimer = undefined;
    slot.forkedAt = Date.now();
    const worker = cluster.fork(slotEnv(slot.n));
    slot.worker = worker;
    answer(worker, {
      'siblings-ready': () => this.siblingsReady(slot.n),
      'cluster-metrics': async () => ({ text: await this.metrics.text(this.live()) }),
    });
    worker.on('message', (m: { gw?: string }) => {
      if (m?.gw !== 'started' || slot.worker !== worker) return;
      slot.started = true;
      this.gauge();
      this.logger.info({ slot: slot.n, worker_pid: worker.process.pid }, 'worker started');
      if (this.slots.every((s) => s.started)) {
        this.running = true;
        this.startup();
      }
    });
    worker.on('exit', (code, signal) => this.exited(slot, worker, code, signal));
  }

  private exited(slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
    if (slot.worker !== worker) return;
    slot.worker = undefined;
    slot.started = false;
    this.gauge();
    void this.metrics.retire(slot.n);
    const about = { slot: slot.n, worker_pid: worker.process.pid, code, signal };
    if (this.stopping) {
      if (code !== 0) this.failed = true;
      this.logger.info(about, 'worker stopped');
      if (this.slots.every((s) => !s.worker)) this.settle(this.failed ? 1 : 0);
      return;
    }
    if (!this.running) {
      // At start-up, a worker that cannot start (a port in use, Redis refusing) would fail again:
      // stop, and say so, instead of restarting for ever.
      this.logger.error(about, 'a worker exited before it started; stopping (its log above says why)');
      void this.shutdown('start-up failed', 1);
      return;
    }
    slot.quickExits = Date.now() - slot.forkedAt >= STABLE_MS ? 0 : slot.quickExits + 1;
    const delay = Math.min(MAX_RESTART_MS, FIRST_RESTART_MS * 2 ** Math.max(0, slot.quickExits - 1));
    clusterRestarts.inc({ worker: String(slot.n) });
    this.logger.error({ ...about, restart_in_ms: delay }, 'worker exited; restarting it');
    slot.restartTimer = setTimeout(() => this.fork(slot), delay);
  }

  private async shutdown(reason: string, code = 0): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (code) this.failed = true;
    this.logger.info({ reason }, 'shutting down: draining every worker');
    for (const s of this.slots) clearTimeout(s.restartTimer);
    for (const s of this.slots) s.worker?.process.kill('SIGTERM');
    if (this.slots.every((s) => !s.worker)) this.settle(this.failed ? 1 : 0);
    const graceMs = this.config.server.shutdown_grace_ms;
    const overrun = setTimeout(() => {
      this.logger.error({ grace_ms: graceMs }, 'workers overran the grace period; killing them');
      for (const s of this.slots) s.worker?.process.kill('SIGKILL');
      this.settle(1);
    }, graceMs + SHUTDOWN_OVERRUN_MS);
    overrun.unref();
    await this.finished;
    clearTimeout(overrun);
  }
}
