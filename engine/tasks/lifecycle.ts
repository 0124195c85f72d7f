// The asynchronous task lifecycle, generic over descriptors. Its rooms:
//   submit.ts  create: reserve credits → store task_info (pending) → task.created → 202, then
//              submit: build the upstream body (descriptor mapping) → POST → remember the upstream id
//   poll.ts    poll job: GET the upstream task → map its status → processing / completed / failed;
//              a provider's push to the task's callback URL, read the same way
//   cancel.ts  a client's cancellation (4009) and the safety net (a task not finished by the
//              route's max_execution_ms fails with 4008), each then asking the provider to stop
//              the task when the route declares an upstream cancel
//   sweep.ts   the safety sweep: re-drives tasks whose timers were lost, applies the deadline
//   ending.ts  the terminal transition and its side effects (settle or release, the event)
// Every transition is a compare-and-set on the status (TaskStore.transition), so a late or
// duplicate poll answer never moves a finished task and settle/release happen once. This class
// wires the rooms together and registers their jobs; it holds no logic of its own.
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { sweepRedrives } from '../metrics/metrics.ts';
import { TaskCancellation } from './cancel.ts';
import { TaskEnding } from './ending.ts';
import { JOBS, type LifecycleDeps, type LifecycleState } from './lifecycle-deps.ts';
import { TaskPolling, type CallbackOutcome } from './poll.ts';
import { TaskSubmission, type CreateOptions } from './submit.ts';
import { TaskSweep } from './sweep.ts';
import type { TaskRecord } from './task.ts';

export type { LifecycleDeps } from './lifecycle-deps.ts';
export type { CallbackOutcome } from './poll.ts';

export class TaskLifecycle {
  private readonly d: LifecycleDeps;
  private readonly state: LifecycleState = { stopping: false, calls: 0 };
  private readonly submission: TaskSubmission;
  private readonly polling: TaskPolling;
  private readonly cancellation: TaskCancellation;
  private readonly sweeper: TaskSweep;

  constructor(deps: LifecycleDeps) {
    this.d = deps;
    const ending = new TaskEnding(deps);
    this.cancellation = new TaskCancellation(deps, ending);
    this.polling = new TaskPolling(deps, this.state, ending, this.cancellation);
    this.submission = new TaskSubmission(deps, this.state, ending, this.cancellation);
    this.sweeper = new TaskSweep(deps, ending, this.cancellation);
  }

  /** Register the job handlers (worker role). */
  startWorkers(): void {
    this.d.scheduler.handle(JOBS.submit, (p) => this.submit(String(p.id)));
    this.d.scheduler.handle(JOBS.poll, (p) => this.poll(String(p.id), Number(p.n ?? 0)));
    this.d.scheduler.handle(JOBS.deadline, (p) => this.deadline(String(p.id))); // jobs left queued by versions before e36f5af (see JOBS)
    this.d.scheduler.handle(JOBS.sweep, async (p) => {
      sweepRedrives.inc(await this.sweep());
      await this.scheduleSweep(Number(p.n ?? 0) + 1);
    });
  }

  /** Start the sweep chain; the job id names its slot, so several workers share one chain. */
  scheduleSweep(n?: number): Promise<void> {
    return this.sweeper.schedule(n);
  }

  create(route: AsyncRoutePlan, tenantId: string, request: Record<string, unknown>, traceparent?: string, opts?: CreateOptions): Promise<TaskRecord> {
    return this.submission.create(route, tenantId, request, traceparent, opts);
  }

  /** A task created by an attempt whose process died, found by its Idempotency-Key's retry (TaskSubmission.adopt). */
  adopt(task: TaskRecord): void {
    this.submission.adopt(task);
  }

  /** Undo a create answered with an error after it may have written its task or hold (TaskSubmission.withdraw). */
  withdraw(task: TaskRecord): void {
    this.submission.withdraw(task);
  }

  /**
   * Shutdown, once its grace period is over: no new submission, and work cut short from now on
   * is not the provider's failure: it is left as it is, to be re-driven.
   */
  stop(): void {
    this.state.stopping = true;
  }

  /** Resolves once no submission is running in this process. */
  idle(): Promise<void> {
    return this.submission.idle();
  }

  /** A last try at the withdrawals still waiting (at shutdown), within `timeoutMs`. */
  flushWithdrawals(timeoutMs: number): Promise<void> {
    return this.submission.flushWithdrawals(timeoutMs);
  }

  submit(id: string): Promise<void> {
    return this.submission.submit(id);
  }

  poll(id: string, n: number): Promise<void> {
    this.state.calls++;
    return this.polling.poll(id, n).finally(() => this.state.calls--);
  }

  /** Submissions and polls running in this process (gateway_task_calls_running). */
  get callsRunning(): number {
    return this.state.calls;
  }

  acceptCallback(id: string, token: string, body: unknown): Promise<CallbackOutcome> {
    return this.polling.acceptCallback(id, token, body);
  }

  /** True when push callbacks are on (server.public_base_url) and some route declares one. */
  get callbacksEnabled(): boolean {
    return this.polling.callbacksEnabled;
  }

  deadline(id: string): Promise<void> {
    return this.cancellation.deadline(id);
  }

  cancel(task: TaskRecord): Promise<{ cancelled: boolean; task: TaskRecord }> {
    return this.cancellation.cancel(task);
  }

  cancelUpstream(task: TaskRecord, reason: string): Promise<boolean> {
    return this.cancellation.cancelUpstream(task, reason);
  }

  sweep(): Promise<number> {
    return this.sweeper.sweep();
  }
}
