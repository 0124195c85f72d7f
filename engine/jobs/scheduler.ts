// The job-scheduling port: "run this named job with this payload after a delay". Upstream
// submits and polls, safety-net timeouts and webhook attempts all go through it, so that in
// Redis mode they are durable jobs (BullMQ) that survive a crash, and in memory mode plain timers.
// Its adapters sit beside their stores: engine/store/memory/job-scheduler.ts and
// engine/store/redis/job-scheduler.ts.

export interface JobScheduler {
  /**
   * Run the handler of `queue` with `payload` after `delayMs`. `jobId` makes scheduling
   * idempotent: while a job with that id is waiting, scheduling it again is a no-op.
   */
  schedule(queue: string, jobId: string, payload: Record<string, unknown>, delayMs: number): Promise<void>;
  /** Register the one handler of a queue. A handler that throws is logged, never retried silently. */
  handle(queue: string, handler: JobHandler): void;
  /** Jobs waiting per queue, for the metrics (read at scrape time). */
  stats(): Promise<QueueStats[]>;
  /** Whether the queue's connections are up (readiness); always true in memory. */
  connected(): Promise<boolean>;
  /** Take no new job; wait up to `graceMs` for running ones, then stop regardless. */
  close(graceMs?: number): Promise<void>;
}

export interface QueueStats {
  queue: string;
  /** Due and waiting for a worker. */
  due: number;
  /** Not due yet. */
  delayed: number;
  /** How long the oldest due job has waited past its due time, in seconds (0 when none). */
  lagSeconds: number;
}

export type JobHandler = (payload: Record<string, unknown>) => Promise<void>;

export type JobErrorReporter = (queue: string, jobId: string, err: unknown) => void;

/**
 * A chain of one job per slot of `intervalMs` (`<queue>.<slot>` ids), shared by every worker: a
 * slot runs once however many processes schedule it, and each run schedules the next slot (even
 * when it failed). For sweeps that every worker starts (results, the ledger archive).
 */
export function recurring(scheduler: JobScheduler, queue: string, intervalMs: number, now: () => number, run: () => Promise<unknown>): Promise<void> {
  const every = Math.max(1, intervalMs);
  const schedule = async (n = 0): Promise<void> => {
    const t = now();
    const slot = Math.max(n, Math.floor(t / every) + 1);
    await scheduler.schedule(queue, `${queue.replace('.', '-')}.${slot}`, { n: slot }, slot * every - t);
  };
  scheduler.handle(queue, async (p) => {
    try {
      await run();
    } finally {
      await schedule(Number(p.n ?? 0) + 1);
    }
  });
  return schedule();
}
