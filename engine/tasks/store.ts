// The task-store port. Transitions are compare-and-set on the status, so a late or duplicate
// poll answer can never move a finished task, and two workers cannot both finish one task.
import type { TaskStatus } from '../vocabulary/task-status.ts';
import type { TaskRecord } from './task.ts';

/** create() of an id that is already stored (an earlier attempt of the same Idempotency-Key wrote it). */
export class TaskExistsError extends Error {
  constructor(id: string) {
    super(`task ${id} exists`);
    this.name = 'TaskExistsError';
  }
}

export interface TaskStore {
  /** Store a new task; TaskExistsError when its id is taken (nothing is changed then). */
  create(task: TaskRecord): Promise<void>;
  get(id: string): Promise<TaskRecord | undefined>;
  /**
   * Apply `patch` only if the task's status is one of `from`; returns the updated record, or
   * undefined when the task is missing or in another status (nothing changed).
   */
  transition(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<TaskRecord | undefined>;
  /**
   * transition() for a caller that only needs to know whether the patch applied: true when it
   * did. No record comes back, so a Redis adapter neither sends nor decodes it.
   */
  update(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<boolean>;
  /**
   * Up to `limit` tasks that are not settled yet: active (pending, processing) or terminal with
   * `finalized: false`. A task leaves this set when it is finalized. Oldest first; with `after`
   * (the id of the last task of a previous page, still unsettled) the page after it, else from
   * the start.
   */
  listUnsettled(limit: number, after?: string): Promise<TaskRecord[]>;
  /**
   * Delete a task that is still active (pending, processing), as if it had never been stored:
   * a create refused after the task may have been written (the store went away mid-create).
   * True when it was deleted; false when missing or already terminal (then it is kept).
   */
  discard(id: string): Promise<boolean>;
  /**
   * One step of a tenant's task listing (the console's GET /v1/tasks), newest first: the tasks
   * of the next `count` entries of the tenant's index after `after` (a task id; from the newest
   * without it) created in [from, to) (epoch ms). Entries whose task is gone are skipped. `last`
   * is the last entry read (the next step's `after`); `end` says the index has no more in range.
   * Undefined when `after` is not in the tenant's index (an unknown or foreign cursor).
   */
  listByTenant(tenantId: string, q: TenantTaskStep): Promise<TenantTaskBatch | undefined>;
}

export interface TenantTaskStep {
  after?: string;
  from?: number;
  to?: number;
  count: number;
}

export interface TenantTaskBatch {
  tasks: TaskRecord[];
  last?: string;
  end: boolean;
}
