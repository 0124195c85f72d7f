// The ways a task is stopped before it finishes: a client's cancellation (4009), the safety net
// of the route's max_execution_ms (4008), and the request asking the provider to stop the task
// that follows either when the route declares an upstream cancel.
import { GatewayError } from '../errors/gateway-error.ts';
import type { TaskEnding } from './ending.ts';
import type { LifecycleDeps } from './lifecycle-deps.ts';
import { memberOf } from './provider.ts';
import { taskPath } from './upstream-answers.ts';
import { taskInfo, type TaskRecord } from './task.ts';

export class TaskCancellation {
  private readonly d: LifecycleDeps;
  private readonly ending: TaskEnding;

  constructor(deps: LifecycleDeps, ending: TaskEnding) {
    this.d = deps;
    this.ending = ending;
  }

  /** The safety net: a task not finished by its route's max_execution_ms fails with 4008. */
  async deadline(id: string): Promise<void> {
    const task = await this.d.store.get(id);
    if (!task || (await this.ending.settled(task))) return;
    const route = this.d.routes.get(task.route);
    const seconds = route ? Math.round(route.maxExecutionMs / 1000) : 0;
    // A task held back only by a copy of its result files that kept failing ends with that reason.
    const failed = await this.ending.failTask(task, task.result_copy_error
      ? new GatewayError('resultCopyFailed', `The result files could not be copied before the task's deadline (${seconds} s): ${task.result_copy_error}`)
      : new GatewayError('taskExecutionTimeout', `The task exceeded the maximum execution time (${seconds} s) and was cancelled.`));
    // Only the caller whose transition failed the task asks the provider to stop it, so a poll
    // and the sweep reaching the deadline together send one cancel. Not awaited: a slow or dead
    // provider must hold up neither this job nor the sweep's other tasks.
    if (failed) void this.cancelUpstream(failed, 'max_execution_ms');
  }

  /**
   * A client's cancellation (POST <path>/{task_id}/cancel). It goes through the same
   * compare-and-set as every terminal transition, so against a completion (or a failure, or the
   * safety net) racing it exactly one wins: completed and settled, or failed with 4009 and
   * released in full, never both. `cancelled` is false when the task had already finished; the
   * task is then returned as it ended (re-read, so the caller can name the state that won).
   * Resolves once the hold is released and task.failed is published; the provider's cancel is
   * not awaited, so a slow or dead provider never holds up the client's answer.
   */
  async cancel(task: TaskRecord): Promise<{ cancelled: boolean; task: TaskRecord }> {
    // upstream.cancel: none: the provider cannot stop it and the operator lets it run (and bill).
    if (this.d.routes.get(task.route)?.cancelPolicy === 'none') {
      throw new GatewayError('taskNotCancellable', 'Tasks of this route cannot be cancelled: the provider offers no cancel, so the task runs on and is billed when it completes.', { extensions: { task_info: taskInfo(task) } });
    }
    const err = new GatewayError('taskCancelled', `The task was cancelled by the client while ${task.status}; it is not billed.`);
    const failed = await this.ending.failTask(task, err);
    if (!failed) return { cancelled: false, task: (await this.d.store.get(task.id)) ?? task };
    // A task still being submitted has no upstream id yet: submit() sees the lost transition
    // and sends this cancel itself once the provider has answered.
    void this.cancelUpstream(failed, 'cancelled by the client');
    return { cancelled: true, task: failed };
  }

  /**
   * Ask the provider to stop a task, when its route declares an upstream cancel (the safety
   * net's 4008 does; a client's cancellation can too): the route's cancel request, with the
   * poll's base URL, auth and credentials. Best-effort: it never throws, and its outcome is only
   * logged (the task's failure and the release of its hold never depend on it). True when the
   * provider accepted it (a 2xx); false when there is nothing to cancel or it did not.
   */
  async cancelUpstream(task: TaskRecord, reason: string): Promise<boolean> {
    const route = this.d.routes.get(task.route);
    const c = route?.cancel;
    if (!route || !c || !task.upstream_task_id) return false;
    const log = { task_id: task.id, upstream_task_id: task.upstream_task_id, route: route.key, reason };
    try {
      const body = c.body ? await c.body.evaluate(task.request, { upstream_task_id: task.upstream_task_id }) : undefined;
      const member = memberOf(route, task);
      if (!member) {
        this.d.logger.warn({ ...log, member: task.upstream_member }, 'the pool member that accepted the task is no longer configured: no upstream cancel');
        return false;
      }
      const res = await route.pool.callMember(member, { method: c.method, path: taskPath(c.path, task), body, traceparent: task.traceparent, stage: 'cancel' });
      if (res.status >= 200 && res.status <= 299) {
        this.d.logger.info(log, 'upstream task cancelled');
        return true;
      }
      this.d.logger.warn({ ...log, http_status: res.status }, 'the provider refused to cancel the task');
    } catch (err) {
      this.d.logger.warn({ ...log, err }, 'the upstream cancel request failed');
    }
    return false;
  }
}
