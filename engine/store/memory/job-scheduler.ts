// The job scheduler of the embedded (memory) mode: in-process timers (the port:
// engine/jobs/scheduler.ts).
import type { JobErrorReporter, JobHandler, JobScheduler, QueueStats } from '../../jobs/scheduler.ts';
import { within } from '../../util/within.ts';

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

  /**
   * A timer runs its job when due, so a job is "due" here only while the event loop is late.
   * Every queue with a handler is listed, empty ones with zeros: a queue left out would keep
   * its last depth on the gauges (gateway_job_queue_depth) after it emptied.
   */
  async stats(): Promise<QueueStats[]> {
    const now = Date.now();
    const byQueue = new Map<string, QueueStats>();
    for (const queue of this.handlers.keys()) byQueue.set(queue, { queue, due: 0, delayed: 0, lagSeconds: 0 });
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
