// The job-scheduling port on Redis (BullMQ), for the webhook deliveries (the task timers run on
// ./due-jobs.ts; engine/stores.ts routes the queues): delayed jobs survive a crash, and a job whose
// worker died mid-run is "stalled" and run again by another worker (or this one on restart).
// Handlers are idempotent (tasks move by compare-and-set, deliveries by series/attempt), so a
// job that runs twice does no harm. Processes of the `api` role only add jobs; `worker` and
// `all` also run them.
//
// Redis away: jobs are added on the request path's fail-fast connection (given by the store
// factory), so an add is refused at once (4003) instead of waiting to run once Redis is back,
// after its request was answered. The workers' own connections wait for Redis instead: a job
// that failed because Redis went away mid-run is retried once it is back (attempts below), and
// the workers resume on their own.
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { dependencyUnavailable } from '../../errors/gateway-error.ts';
import { within } from '../../util/within.ts';
import type { JobErrorReporter, JobHandler, JobScheduler, QueueStats } from '../../jobs/scheduler.ts';

export interface BullJobSchedulerOptions {
  /** Redis URL (config store.redis_url), for the workers' connections. */
  url: string;
  /**
   * On a Redis Cluster: the cluster the workers' connections copy (instead of `url`); it must
   * wait for Redis (maxRetriesPerRequest null). Never connected itself; owned by the caller.
   */
  workerCluster?: Cluster;
  /** The connection jobs are added on: fail-fast (engine/store/redis/client.ts), owned by the caller. */
  producer: Redis | Cluster;
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
  private readonly queues = new Map<string, Promise<Queue>>();
  private readonly workers: Worker[] = [];
  private readonly opts: Required<Omit<BullJobSchedulerOptions, 'onError' | 'workerCluster'>> & { onError: JobErrorReporter };
  private readonly connection: ConnectionOptions;

  constructor(opts: BullJobSchedulerOptions) {
    this.opts = { concurrency: 64, lockMs: 30_000, onError: () => {}, ...opts };
    const u = new URL(opts.url);
    // BullMQ gives each worker its own copies of a client it is handed, and closes them.
    this.connection = opts.workerCluster ?? {
      host: u.hostname,
      port: Number(u.port || 6379),
      username: u.username || undefined,
      password: u.password ? decodeURIComponent(u.password) : undefined,
      db: u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0,
      tls: u.protocol === 'rediss:' ? {} : undefined,
      maxRetriesPerRequest: null,
      // Back within 2 s of Redis (BullMQ's own default backs off to 20 s).
      retryStrategy: (attempt: number) => Math.min(250 * attempt, 2000),
    };
  }

  /**
   * A queue's first use waits for BullMQ to set it up on the producer connection: only while
   * that connection is up, and a queue whose set-up failed is dropped (BullMQ would keep the
   * failed set-up for good), so the next use starts afresh.
   */
  private queue(name: string): Promise<Queue> {
    let q = this.queues.get(name);
    if (!q) {
      if (this.opts.producer.status !== 'ready') return Promise.reject(dependencyUnavailable('job queue'));
      const queue = new Queue(name, { connection: this.opts.producer, prefix: `{${this.opts.prefix}:jobs}` });
      // Connection trouble is reported by the producer connection's own listener (store factory).
      queue.on('error', () => {});
      q = queue.waitUntilReady().then(
        () => queue,
        (err: unknown) => {
          this.queues.delete(name);
          void queue.close().catch(() => {});
          throw dependencyUnavailable('job queue', err);
        },
      );
      this.queues.set(name, q);
    }
    return q;
  }

  async schedule(queue: string, jobId: string, payload: Record<string, unknown>, delayMs: number): Promise<void> {
    await (await this.queue(queue)).add(queue, payload, {
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
      // An idle worker waits this long (s) per blocking read: a job added or coming due wakes it
      // at once through BullMQ's marker, so the wait only sets the idle cost (5 s: 1.6 commands/s).
      drainDelay: 30,
    });
    worker.on('failed', (job, err) => this.opts.onError(queue, job?.id ?? '?', err));
    worker.on('error', (err) => this.opts.onError(queue, '-', err));
    this.workers.push(worker);
  }

  /** The queues this process has used or works: BullMQ's counts, and the oldest due job's wait. */
  async stats(): Promise<QueueStats[]> {
    const names = new Set([...this.queues.keys(), ...this.workers.map((w) => w.name)]);
    const now = Date.now();
    return Promise.all([...names].map(async (name) => {
      const queue = await this.queue(name);
      const counts = await queue.getJobCounts('wait', 'prioritized', 'delayed');
      const [oldest] = await queue.getJobs(['wait'], 0, 0, true);
      const dueAt = oldest ? oldest.timestamp + (oldest.delay ?? 0) : now;
      return { queue: name, due: (counts.wait ?? 0) + (counts.prioritized ?? 0), delayed: counts.delayed ?? 0, lagSeconds: Math.max(0, (now - dueAt) / 1000) };
    }));
  }

  /** True while the producer connection and every worker's connections are up. */
  async connected(): Promise<boolean> {
    if (this.opts.producer.status !== 'ready') return false;
    for (const w of this.workers) {
      const b = w.getBackend();
      const clients = [b.client, b.blockingClient].filter((c) => c !== undefined);
      // The clients are set up once (at start); a worker whose set-up failed is not connected.
      for (const c of await Promise.allSettled(clients)) if (c.status === 'rejected' || c.value.status !== 'ready') return false;
    }
    return true;
  }

  /**
   * Workers take no new job at once; running ones get `graceMs` to finish, then are abandoned: a
   * worker whose connection was lost and re-established (a Redis restart) can wait on it for
   * good, and abandoning its jobs is safe (they are durable and idempotent; another worker, or
   * this one after a restart, runs what was cut short). Adding jobs keeps working until the
   * producer connection is closed (requests still draining schedule polls and deliveries).
   */
  async close(graceMs = 5000): Promise<void> {
    await Promise.all(this.workers.map(async (w) => (await within(w.close(), graceMs)) === 'done' || within(w.close(true), 500)));
    await Promise.all([...this.queues.values()].map((q) => within(q.then((queue) => queue.close()), 500)));
  }
}
