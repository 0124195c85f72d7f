// The job scheduler of the embedded (memory) mode: in-process timers (the port:
// engine/jobs/scheduler.ts).
//
// One timer for all jobs, armed at the earliest due time of a queue ordered by due time
// (tinyqueue's binary heap), rather than a Node timer per job: a create's poll waits seconds, so
// under load thousands of jobs wait at once, and each one's Timeout, closure and entry were
// copied by every scavenge until promoted. When the timer fires it starts at most RUN_BATCH due jobs, and the rest after
// the loop has served its I/O (setImmediate), so jobs that fall due together (polls scheduled in
// one burst after a stall fall due in one burst three seconds later) are spread over turns instead
// of running in one turn that every request in flight waits behind (docs/performance.md,
// "Event-loop turns during creates").
import { performance } from 'node:perf_hooks';
import TinyQueue from 'tinyqueue';
import type { JobErrorReporter, JobHandler, JobScheduler, QueueStats } from '../../jobs/scheduler.ts';
import { within } from '../../util/within.ts';

/** Due jobs started per turn at most; a poll's synchronous start costs some 30–60 µs. */
export const RUN_BATCH = 32;

interface Job {
  queue: string;
  jobId: string;
  payload: Record<string, unknown>;
  dueAt: number;
  /** Order of scheduling: jobs due at the same time run first come, first served. */
  seq: number;
}

const byDueTime = (a: Job, b: Job) => a.dueAt - b.dueAt || a.seq - b.seq;

/** In-process scheduler for the embedded (memory) mode. Jobs die with the process. */
export class MemoryJobScheduler implements JobScheduler {
  private readonly handlers = new Map<string, JobHandler>();
  /**
   * The pending jobs by queue, then job id: a `${queue}:${jobId}` key would be two more strings
   * for each waiting job (a poll waits seconds, so under load tens of thousands wait at once).
   */
  private readonly pending = new Map<string, Map<string, Job>>();
  /** The pending jobs, earliest (dueAt, seq) first. */
  private heap = new TinyQueue<Job>([], byDueTime);
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  /** A batch is queued with setImmediate: the timer is not armed meanwhile. */
  private continuing = false;
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
    let waiting = this.pending.get(queue);
    if (!waiting) this.pending.set(queue, (waiting = new Map()));
    if (waiting.has(jobId)) return;
    const job: Job = { queue, jobId, payload, dueAt: performance.now() + Math.max(0, delayMs), seq: this.seq++ };
    waiting.set(jobId, job);
    this.heap.push(job);
    this.arm();
  }

  /** The timer at the earliest due time, unless it is set for then already or a batch is queued. */
  private arm(): void {
    const first = this.heap.peek();
    if (!first || this.continuing || this.closed || (this.timer && this.timerAt <= first.dueAt)) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = first.dueAt;
    // A timer may fire a little before its time by this clock (it counts from the loop's cached
    // time): `run` then finds nothing due and arms it again.
    this.timer = setTimeout(this.run, Math.max(1, Math.ceil(first.dueAt - performance.now())));
  }

  /** Starts the due jobs, RUN_BATCH at most; more due ones go on after the loop's I/O. */
  private readonly run = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    this.continuing = false;
    const now = performance.now();
    for (let n = 0; n < RUN_BATCH && this.heap.length && this.heap.peek()!.dueAt <= now; n++) this.start(this.heap.pop()!);
    if (!this.closed && this.heap.length && this.heap.peek()!.dueAt <= now) {
      this.continuing = true;
      setImmediate(this.run);
    } else this.arm();
  };

  private start(job: Job): void {
    this.pending.get(job.queue)?.delete(job.jobId);
    const handler = this.handlers.get(job.queue);
    if (!handler) return this.onError(job.queue, job.jobId, new Error(`no handler for queue ${job.queue}`));
    const run = handler(job.payload)
      .catch((err) => this.onError(job.queue, job.jobId, err))
      .finally(() => this.running.delete(run));
    this.running.add(run);
  }

  /**
   * A job is "due" here only while the event loop is late (or a burst waits its batch). Every
   * queue with a handler is listed, empty ones with zeros: a queue left out would keep its last
   * depth on the gauges (gateway_job_queue_depth) after it emptied.
   */
  async stats(): Promise<QueueStats[]> {
    const now = performance.now();
    const byQueue = new Map<string, QueueStats>();
    for (const queue of this.handlers.keys()) byQueue.set(queue, { queue, due: 0, delayed: 0, lagSeconds: 0 });
    for (const [queue, waiting] of this.pending) {
      const q = byQueue.get(queue) ?? { queue, due: 0, delayed: 0, lagSeconds: 0 };
      for (const { dueAt } of waiting.values()) {
        if (dueAt <= now) {
          q.due++;
          q.lagSeconds = Math.max(q.lagSeconds, (now - dueAt) / 1000);
        } else q.delayed++;
      }
      byQueue.set(queue, q);
    }
    return [...byQueue.values()];
  }

  async connected(): Promise<boolean> {
    return true;
  }

  async close(graceMs = 5000): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
    this.heap = new TinyQueue<Job>([], byDueTime);
    await within(Promise.allSettled([...this.running]), graceMs);
  }
}
