// One job-scheduling port over two adapters, chosen by queue: Redis mode runs the task timers on
// a due-time sorted set (engine/store/redis/due-jobs.ts) and keeps BullMQ for the webhook
// deliveries (engine/store/redis/job-scheduler.ts), whose attempts and back-off it handles well.
import type { JobHandler, JobScheduler, QueueStats } from './scheduler.ts';

export class RoutedJobScheduler implements JobScheduler {
  private readonly pick: (queue: string) => JobScheduler;
  private readonly all: readonly JobScheduler[];

  /** `pick` names the adapter of a queue; `all` lists every adapter once. */
  constructor(pick: (queue: string) => JobScheduler, all: readonly JobScheduler[]) {
    this.pick = pick;
    this.all = all;
  }

  schedule(queue: string, jobId: string, payload: Record<string, unknown>, delayMs: number): Promise<void> {
    return this.pick(queue).schedule(queue, jobId, payload, delayMs);
  }

  handle(queue: string, handler: JobHandler): void {
    this.pick(queue).handle(queue, handler);
  }

  async stats(): Promise<QueueStats[]> {
    return (await Promise.all(this.all.map((s) => s.stats()))).flat();
  }

  async connected(): Promise<boolean> {
    return (await Promise.all(this.all.map((s) => s.connected()))).every(Boolean);
  }

  async close(graceMs?: number): Promise<void> {
    await Promise.all(this.all.map((s) => s.close(graceMs)));
  }
}
