// What the task lifecycle asks of billing and quotas, as one port: reserve when a task is
// created (credit hold, concurrency slot), freeSlot just before its terminal transition,
// complete when it succeeds (settle the actual price), abandon when it fails (release
// everything). The lifecycle calls complete or abandon only after winning the compare-and-set
// into a terminal state, so each runs once.
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import type { TaskRecord } from './task.ts';

/**
 * reserve() of a task id whose hold is already closed (settled or released): an earlier attempt
 * of the same Idempotency-Key was undone; this id cannot be held again.
 */
export class HoldClosedError extends Error {
  constructor(taskId: string) {
    super(`the hold of task ${taskId} is already closed`);
    this.name = 'HoldClosedError';
  }
}

export interface TaskAccounting {
  /**
   * Throws a GatewayError (1003, 1005) when the task may not start; returns milli-credits held.
   * A task id held before returns that hold (HoldClosedError when it is closed).
   */
  reserve(task: TaskRecord, route: AsyncRoutePlan): Promise<number>;
  /** The actual price of a task about to complete (`upstream`: the provider's final answer). */
  price(task: TaskRecord, route: AsyncRoutePlan, upstream?: unknown): Promise<number>;
  /**
   * Free the task's concurrent-task slot. Called BEFORE the compare-and-set into a terminal
   * state, so the slot is free once the terminal state can be seen (GET, the webhook): a client
   * that sees its task end and submits the next at once is admitted. Idempotent; a transition
   * lost to another ending, or one that never happens (a crash: the job or sweep ends the task
   * later), leaves the slot free early, never taken.
   */
  freeSlot(task: TaskRecord): Promise<void>;
  /** Settle `task.charge` and close the task's spend reservation (and its slot, if still held). */
  complete(task: TaskRecord): Promise<void>;
  abandon(task: TaskRecord): Promise<void>;
  /**
   * Release holds (and task slots) left by a process that died between reserving and storing
   * a task: open holds older than `olderThanMs` whose task does not exist. Returns how many.
   */
  releaseOrphans(olderThanMs: number): Promise<number>;
}
