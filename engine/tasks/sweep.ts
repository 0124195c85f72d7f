// The safety sweep (worker role, every few seconds): re-drives active tasks whose timer was
// lost — a process killed between storing a task and scheduling its jobs, or a poll chain
// broken by a crash — fails those past their deadline, and finishes terminal tasks whose side
// effects were cut short. One chain of sweep jobs serves every worker (the job id names its slot).
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import type { TaskCancellation } from './cancel.ts';
import type { TaskEnding } from './ending.ts';
import { JOBS, type LifecycleDeps } from './lifecycle-deps.ts';
import { pollDelay } from './poll.ts';
import type { TaskRecord } from './task.ts';

const SWEEP_PAGE = 200;

export class TaskSweep {
  private readonly d: LifecycleDeps;
  private readonly ending: TaskEnding;
  private readonly cancellation: TaskCancellation;
  private sweeps = 0;
  private sweepAfter: string | undefined;

  constructor(deps: LifecycleDeps, ending: TaskEnding, cancellation: TaskCancellation) {
    this.d = deps;
    this.ending = ending;
    this.cancellation = cancellation;
  }

  /** Start the sweep chain; the job id names its slot, so several workers share one chain. */
  async schedule(n = Math.floor(this.d.clock.now() / this.d.sweepIntervalMs) + 1): Promise<void> {
    const slot = Math.max(n, Math.floor(this.d.clock.now() / this.d.sweepIntervalMs) + 1);
    await this.d.scheduler.schedule(JOBS.sweep, `sweep.${slot}`, { n: slot }, slot * this.d.sweepIntervalMs - this.d.clock.now());
  }

  /** One sweep: the number of tasks it touched. */
  async sweep(): Promise<number> {
    const now = this.d.clock.now();
    // Holds whose task was never stored (a process killed in between), once per ten sweeps.
    let touched = this.sweeps++ % 10 === 0 ? await this.d.accounting.releaseOrphans(this.d.sweepGraceMs) : 0;
    // A page of unsettled tasks per sweep, cycling through all of them over successive sweeps.
    const page = await this.d.store.listUnsettled(SWEEP_PAGE, this.sweepAfter);
    this.sweepAfter = page.length === SWEEP_PAGE ? page.at(-1)!.id : undefined;
    for (const task of page) if (await this.visit(task, now)) touched++;
    return touched;
  }

  /** True when the sweep did something for this task. */
  private async visit(task: TaskRecord, now: number): Promise<boolean> {
    if (await this.ending.settled(task)) return true;
    const route: AsyncRoutePlan | undefined = this.d.routes.get(task.route);
    if (!route) return false;
    if (now >= task.deadline_at) {
      await this.cancellation.deadline(task.id);
      return true;
    }
    const idle = now - (task.checked_at ?? Date.parse(task.created_at));
    if (idle <= this.d.sweepGraceMs + (task.upstream_task_id ? pollDelay(route, task, now) : route.poll.intervalMs)) return false;
    // No sign of life for a while: schedule the step it is waiting for. The job ids are the
    // ones the lost chain would have used, so a chain that was only slow merges with it.
    if (task.upstream_task_id) {
      const n = (task.poll_n ?? 0) + 1;
      await this.d.scheduler.schedule(JOBS.poll, `${task.id}.p${n}`, { id: task.id, n }, 0);
    } else {
      await this.d.scheduler.schedule(JOBS.submit, task.id, { id: task.id }, 0);
    }
    return true;
  }
}
