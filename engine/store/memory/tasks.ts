// Memory adapter of the task store (the embedded default: one process). Records are deeply
// frozen snapshots: a transition stores a new one, so readers can be handed the stored snapshot
// itself instead of a deep copy (copies were ~8% of a create's CPU), and cannot change it.
// Finished tasks (terminal and finalized) are forgotten `finishedTtlMs` after they finished,
// like the Redis adapter's TTL, or, oldest finished first, once more than `maxFinished` are held
// (docs/performance.md): a queue in finishing order, trimmed as tasks are created and finish.
// Unsettled tasks are never dropped. A finished task is kept slim (finishedRecord): up to
// 50,000 of them are held, and what only a running task reads is most of a record.
import { TaskExistsError, type TaskStore, type TenantTaskBatch, type TenantTaskStep } from '../../tasks/store.ts';
import { type TaskRecord } from '../../tasks/task.ts';
import { TERMINAL, type TaskStatus } from '../../vocabulary/task-status.ts';
import { systemClock, type Clock } from '../../util/clock.ts';
import { ExpiryQueue } from './expiry-queue.ts';
import { snapshot } from './snapshot.ts';

export interface MemoryTaskStoreOptions {
  /** Retention of finished tasks in ms; 0 (the default): kept forever. */
  finishedTtlMs?: number;
  /** Finished tasks kept at most (config store.memory_finished_tasks); default: no count bound. */
  maxFinished?: number;
  clock?: Clock;
}

export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, Readonly<TaskRecord>>();
  /** Ids of unsettled tasks, in creation order. */
  private readonly unsettled = new Set<string>();
  /** Finished tasks, in finishing order. */
  private readonly finished: ExpiryQueue<string>;
  /** Each tenant's task ids in creation order (the console's listing). */
  private readonly byTenant = new Map<string, Set<string>>();

  constructor(opts: MemoryTaskStoreOptions = {}) {
    this.finished = new ExpiryQueue(opts.finishedTtlMs ?? 0, opts.clock ?? systemClock, 'finishedTtlMs', opts.maxFinished);
  }

  async create(task: TaskRecord): Promise<void> {
    if (this.tasks.has(task.id)) throw new TaskExistsError(task.id);
    this.finished.expire((id) => this.forget(id));
    this.tasks.set(task.id, snapshot(task));
    this.unsettled.add(task.id);
    let ids = this.byTenant.get(task.tenant_id);
    if (!ids) this.byTenant.set(task.tenant_id, (ids = new Set()));
    ids.add(task.id);
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    return this.tasks.get(id);
  }

  async transition(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<TaskRecord | undefined> {
    return this.apply(id, from, patch);
  }

  async update(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<boolean> {
    return this.apply(id, from, patch) !== undefined;
  }

  private apply(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): TaskRecord | undefined {
    const t = this.tasks.get(id);
    if (!t || !from.includes(t.status)) return undefined;
    let next: Readonly<TaskRecord> = Object.freeze({ ...t, ...frozenCopy(patch) });
    if (next.finalized === true && this.unsettled.delete(id) && TERMINAL.has(next.status)) {
      next = finishedRecord(next);
      this.finished.add(id);
      this.finished.expire((old) => this.forget(old));
    }
    this.tasks.set(id, next);
    return next;
  }

  async listUnsettled(limit: number, after?: string): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    let skipping = after !== undefined && this.unsettled.has(after);
    for (const id of this.unsettled) {
      if (out.length >= limit) break;
      if (skipping) {
        skipping = id !== after;
        continue;
      }
      out.push(this.tasks.get(id)!);
    }
    return out;
  }

  async discard(id: string): Promise<boolean> {
    const t = this.tasks.get(id);
    if (!t || TERMINAL.has(t.status)) return false;
    this.forget(id);
    this.unsettled.delete(id);
    return true;
  }

  async listByTenant(tenantId: string, q: TenantTaskStep): Promise<TenantTaskBatch | undefined> {
    const ids = [...(this.byTenant.get(tenantId) ?? [])].reverse();
    let i = 0;
    if (q.after !== undefined) {
      i = ids.indexOf(q.after) + 1;
      if (i === 0) return undefined;
    }
    const tasks: TaskRecord[] = [];
    let last: string | undefined;
    for (let read = 0; i < ids.length && read < q.count; i++) {
      const t = this.tasks.get(ids[i]!)!;
      const at = Date.parse(t.created_at);
      if (q.to !== undefined && at >= q.to) continue; // newer than the range: skipped, not counted
      if (q.from !== undefined && at < q.from) return { tasks, last, end: true };
      read++;
      last = t.id;
      tasks.push(t);
    }
    return { tasks, last, end: i >= ids.length };
  }

  private forget(id: string): void {
    const t = this.tasks.get(id);
    if (!t) return;
    this.tasks.delete(id);
    const ids = this.byTenant.get(t.tenant_id);
    ids?.delete(id);
    if (ids?.size === 0) this.byTenant.delete(t.tenant_id);
  }
}

/** What a finished task's record reads as in place of its request (see finishedRecord). */
const NO_REQUEST: Record<string, unknown> = Object.freeze({});

/**
 * A finished (terminal, finalized) task as it is kept: without what only a running task reads:
 * its request (the submit body, pricing and the result mapping read it before the task ends;
 * it reads as {} after), its traceparent (its calls and events are over), and the submission's
 * and polls' bookkeeping. Its reads (GET, the console, an Idempotency-Key replay, a late push)
 * use none of them. Which pool member served it stays (`upstream_member`: one shared string, and
 * what an operator asks of a finished task). Half of a retained record (docs/performance.md, "Peak RSS and the soak"):
 * the store keeps up to store.memory_finished_tasks (50,000) of them. A reader holding the
 * record from before (a poll that raced the end) keeps its own frozen snapshot, whole.
 */
function finishedRecord(t: Readonly<TaskRecord>): Readonly<TaskRecord> {
  const { request: _request, traceparent: _traceparent, submit_sent_at: _sent, checked_at: _checked, poll_n: _pollN, upstream_urls: _urls, result_copy_error: _copyError, ...kept } = t;
  return Object.freeze({ ...kept, request: NO_REQUEST });
}

/**
 * Patches are mostly flat (status, times, counters); only nested values need a private, frozen
 * copy. Read key by key: Object.values built an array per transition, four or five per task life.
 */
function frozenCopy(patch: Partial<TaskRecord>): Partial<TaskRecord> {
  for (const k in patch) {
    const v = patch[k as keyof TaskRecord];
    if (v !== null && typeof v === 'object') return snapshot(patch);
  }
  return patch;
}
