// How a task ends: the terminal transition (a compare-and-set on the status, so a late or
// duplicate answer never moves a finished task), then its side effects (settle or release, the
// task.succeeded / task.failed event), re-run by whoever finds them cut short.
import { hash } from 'node:crypto';
import type { GatewayError } from '../errors/gateway-error.ts';
import { TASK_EVENTS } from '../events/types.ts';
import { taskDuration, tasksFinished } from '../metrics/metrics.ts';
import { isoNow } from '../util/clock.ts';
import type { LifecycleDeps } from './lifecycle-deps.ts';
import { taskInfo, taskResponse, type TaskRecord } from './task.ts';
import { ACTIVE, TERMINAL } from '../vocabulary/task-status.ts';

export class TaskEnding {
  private readonly d: LifecycleDeps;

  constructor(deps: LifecycleDeps) {
    this.d = deps;
  }

  async fail(task: TaskRecord, err: GatewayError): Promise<void> {
    await this.failTask(task, err);
  }

  /** fail(), returning the failed task when this call failed it (undefined: it had already finished). */
  async failTask(task: TaskRecord, err: GatewayError): Promise<TaskRecord | undefined> {
    // The slot first: free once the failure can be seen (TaskAccounting.freeSlot).
    await this.d.accounting.freeSlot(task);
    const failed = await this.d.store.transition(task.id, ACTIVE, { status: 'failed', error: err.toTaskError(), finalized: false, updated_at: isoNow(this.d.clock) });
    if (!failed) return undefined;
    finished(failed, err.code);
    this.d.logger.info({ task_id: task.id, code: err.code }, 'task failed');
    await this.finalize(failed);
    return failed;
  }

  /**
   * What follows a terminal transition: settle or release, and the task.succeeded/failed
   * event. A process killed in between leaves `finalized: false`; the next job or sweep that
   * sees the task runs this again. Settling is once per task in the wallet, and the event id is
   * derived from the task, so webhooks fan it out once however often it is published.
   */
  async finalize(task: TaskRecord): Promise<void> {
    const type = task.status === 'completed' ? TASK_EVENTS.completed : TASK_EVENTS.failed;
    if (task.status === 'completed') await this.d.accounting.complete(task);
    else await this.d.accounting.abandon(task);
    const payload = task.status === 'completed' ? taskResponse(task) : { task_info: taskInfo(task) };
    await this.d.bus.emit(task.tenant_id, type, eventData(task, payload), { id: eventId(task.id, type), traceparent: task.traceparent });
    await this.d.store.update(task.id, [task.status], { finalized: true });
  }

  /**
   * A task found finished: make sure its side effects happened. True when it is terminal. The
   * process that won the terminal transition finalizes at once; anyone else steps in only after
   * the sweep's grace period, when that process has evidently died.
   */
  async settled(task: TaskRecord): Promise<boolean> {
    if (!TERMINAL.has(task.status)) return false;
    if (task.finalized === false && this.d.clock.now() - Date.parse(task.updated_at) >= this.d.sweepGraceMs) await this.finalize(task);
    return true;
  }
}

/** Counted once, by the process whose transition ended the task. */
export function finished(task: TaskRecord, code?: number): void {
  tasksFinished.inc({ vendor: task.vendor, route: task.route, outcome: task.status, code: code === undefined ? '' : String(code) });
  taskDuration.observe({ vendor: task.vendor, outcome: task.status }, Math.max(0, Date.parse(task.updated_at) - Date.parse(task.created_at)) / 1000);
}

/** Event ids of a task are derived from it, so a re-published event is recognised as the same one. */
export function eventId(taskId: string, type: string): string {
  return `evt_${hash('sha256', `${taskId}/${type}`, 'base64url').slice(0, 24)}`;
}

export function eventData(task: TaskRecord, payload: Record<string, unknown>): Record<string, unknown> {
  return { vendor: task.vendor, model_name: task.model_name, payload };
}
