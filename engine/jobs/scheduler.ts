// The job-scheduling port: "run this named job with this payload after a delay". Upstream
// submits and polls, safety-net timeouts and webhook attempts all go through it, so that in
// Redis mode they are durable jobs (BullMQ) that survive a crash, and in memory mode plain timers.
import { within } from '../util/within.ts';

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

/** In-process scheduler for the embedded (memory) mode. Jobs die with the process. */
export class MemoryJobScheduler implements JobScheduler {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly pending = new Map<string, { timer: NodeJS.Timeout; queue: string; dueAt: number }>();
  private readonly running = new Set<Promise<void>>();
  private closed = false;
  private readonly onError: JobErrorReporter;

  constructor(onError: JobErrorReporter = () => {}) {
    this.onError = onError;
  }

  handle(queue: string, handler: JobHandler): void {
    this.handlers.set(queue, handler);
  }

  async schedule(queue: string, jobId: string, payload: Record<string, unknown>, delayMs: number): Promise<void> {
    if (this.closed) return;
    const key = `${queue}:${jobId}`;
    if (this.pending.has(key)) return;
    const timer = setTimeout(() => {
      this.pending.delete(key);
      const handler = this.handlers.get(queue);
      if (!handler) return this.onError(queue, jobId, new Error(`no handler for queue ${queue}`));
      const run = handler(payload)
        .catch((err) => this.onError(queue, jobId, err))
        .finally(() => this.running.delete(run));
      this.running.add(run);
    }, Math.max(0, delayMs));
    this.pending.set(key, { timer, queue, dueAt: Date.now() + Math.max(0, delayMs) });
  }

  /** A timer runs its job when due, so a job is "due" here only while the event loop is late. */
  async stats(): Promise<QueueStats[]> {
    const now = Date.now();
    const byQueue = new Map<string, QueueStats>();
    for (const { queue, dueAt } of this.pending.values()) {
      const q = byQueue.get(queue) ?? { queue, due: 0, delayed: 0, lagSeconds: 0 };
      if (dueAt <= now) {
        q.due++;
        q.lagSeconds = Math.max(q.lagSeconds, (now - dueAt) / 1000);
      } else q.delayed++;
      byQueue.set(queue, q);
    }
    return [...byQueue.values()];
  }

  async connected(): Promise<boolean> {
    return true;
  }

  async close(graceMs = 5000): Promise<void> {
    this.closed = true;
    for (const p of this.pending.values()) clearTimeout(p.timer);
    this.pending.clear();
    await within(Promise.allSettled([...this.running]), graceMs);
  }
}
