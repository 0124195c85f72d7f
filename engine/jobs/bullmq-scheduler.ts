// The job-scheduling port on Redis (BullMQ): delayed jobs survive a crash, and a job whose
// worker died mid-run is "stalled" and run again by another worker (or this one on restart).
// Handlers are idempotent (tasks move by compare-and-set, deliveries by series/attempt), so a
// job that runs twice does no harm. Processes of the `api` role only add jobs; `worker` and
// `all` also run them.
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { JobErrorReporter, JobHandler, JobScheduler } from './scheduler.ts';

export interface BullJobSchedulerOptions {
  /** Redis URL (config store.redis_url). */
  url: string;
  /** Key prefix; wrapped in a hash tag so a Redis Cluster keeps every job key in one slot. */
  prefix: string;
  /** Run handlers in this process (worker and all roles). */
  runWorkers: boolean;
  /** Jobs run at once per queue in this process. */
  concurrency?: number;
  /** How long a job stays locked to a worker that stopped renewing it before it is re-run. */
  lockMs?: number;
  onError?: JobErrorReporter;
}

export class BullJobScheduler implements JobScheduler {
  private readonly queues = new Map<string, Queue>();
  private readonly workers: Worker[] = [];
  private readonly opts: Required<Omit<BullJobSchedulerOptions, 'onError'>> & { onError: JobErrorReporter };
  private readonly connection: ConnectionOptions;

  constructor(opts: BullJobSchedulerOptions) {
    this.opts = { concurrency: 64, lockMs: 30_000, onError: () => {}, ...opts };
    const u = new URL(opts.url);
    this.connection = {
      host: u.hostname,
      port: Number(u.port || 6379),
      username: u.username || undefined,
      password: u.password ? decodeURIComponent(u.password) : undefined,
      db: u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0,
      tls: u.protocol === 'rediss:' ? {} : undefined,
      maxRetriesPerRequest: null,
    };
  }

  private queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.connection, prefix: `{${this.opts.prefix}:jobs}` });
      this.queues.set(name, q);
    }
    return q;
  }

  async schedule(queue: string, jobId: string, payload: Record<string, unknown>, delayMs: number): Promise<void> {
    await this.queue(queue).add(queue, payload, {
      jobId,
      delay: Math.max(0, Math.round(delayMs)),
      // A handler that throws (e.g. Redis briefly away) is retried; handlers are idempotent.
      attempts: 5,
      backoff: { type: 'exponential', delay: 500 },
      removeOnComplete: true,
      removeOnFail: { age: 7 * 24 * 3600 },
    });
  }

  handle(queue: string, handler: JobHandler): void {
    if (!this.opts.runWorkers) return;
    const worker = new Worker(queue, async (job) => handler(job.data as Record<string, unknown>), {
      connection: this.connection,
      prefix: `{${this.opts.prefix}:jobs}`,
      concurrency: this.opts.concurrency,
      lockDuration: this.opts.lockMs,
      stalledInterval: Math.max(1000, Math.round(this.opts.lockMs / 2)),
      maxStalledCount: 5,
    });
    worker.on('failed', (job, err) => this.opts.onError(queue, job?.id ?? '?', err));
    worker.on('error', (err) => this.opts.onError(queue, '-', err));
    this.workers.push(worker);
  }

  /**
   * Let running jobs finish for a while, then stop regardless: a worker whose connection was
   * lost and re-established (a Redis restart) can wait on it for good, and abandoning its jobs is
   * safe (they are durable and idempotent; another worker picks up what was running).
   */
  async close(graceMs = 5000): Promise<void> {
    await Promise.allSettled(this.workers.map((w) => within(w.close(), graceMs).catch(() => within(w.close(true), 1000))));
    await Promise.allSettled([...this.queues.values()].map((q) => within(q.close(), 1000)));
  }
}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms)))]).finally(() => clearTimeout(timer));
}
