// Memory adapter of the task store (the embedded default: one process). Records are deeply
// frozen snapshots: a transition stores a new one, so readers can be handed the stored snapshot
// itself instead of a deep copy (copies were ~8% of a create's CPU), and cannot change it.
// Finished tasks (terminal and finalized) are forgotten `finishedTtlMs` after they finished,
// like the Redis adapter's TTL: a queue in finishing order, trimmed as tasks are created.
import type { TaskStatus } from '../../descriptors/types.ts';
import type { TaskStore } from '../../tasks/store.ts';
import { TERMINAL, type TaskRecord } from '../../tasks/task.ts';
import { systemClock, type Clock } from '../../util/clock.ts';
import { ShardedMap } from './sharded-map.ts';
import { snapshot } from './snapshot.ts';

export interface MemoryTaskStoreOptions {
  /** Retention of finished tasks in ms; 0 (the default): kept forever. */
  finishedTtlMs?: number;
  clock?: Clock;
}

export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new ShardedMap<Readonly<TaskRecord>>();
  /** Ids of unsettled tasks, in creation order. */
  private readonly unsettled = new Set<string>();
  private readonly finishedTtlMs: number;
  private readonly clock: Clock;
  /** Finished tasks in finishing order: [id, forget at]; `head` is the first not yet forgotten. */
  private finished: [string, number][] = [];
  private head = 0;

  constructor(opts: MemoryTaskStoreOptions = {}) {
    this.finishedTtlMs = opts.finishedTtlMs ?? 0;
    if (!Number.isSafeInteger(this.finishedTtlMs) || this.finishedTtlMs < 0) throw new Error('finishedTtlMs must be a non-negative integer');
    this.clock = opts.clock ?? systemClock;
  }

  async create(task: TaskRecord): Promise<void> {
    if (this.tasks.has(task.id)) throw new Error(`task ${task.id} exists`);
    this.forgetExpired();
    this.tasks.set(task.id, snapshot(task));
    this.unsettled.add(task.id);
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    return this.tasks.get(id);
  }

  async transition(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<TaskRecord | undefined> {
    const t = this.tasks.get(id);
    if (!t || !from.includes(t.status)) return undefined;
    const next = Object.freeze({ ...t, ...frozenCopy(patch) });
    this.tasks.set(id, next);
    if (next.finalized === true && this.unsettled.delete(id) && this.finishedTtlMs > 0 && TERMINAL.has(next.status)) {
      this.finished.push([id, this.clock.now() + this.finishedTtlMs]);
    }
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
    this.tasks.delete(id);
    this.unsettled.delete(id);
    return true;
  }

  private forgetExpired(): void {
    const q = this.finished;
    if (this.head === q.length) return;
    const now = this.clock.now();
    while (this.head < q.length && q[this.head]![1] <= now) this.tasks.delete(q[this.head++]![0]);
    if (this.head > 1024 && this.head * 2 > q.length) {
      this.finished = q.slice(this.head);
      this.head = 0;
    }
  }
}

/** Patches are mostly flat (status, times, counters); only nested values need a private, frozen copy. */
function frozenCopy(patch: Partial<TaskRecord>): Partial<TaskRecord> {
  for (const v of Object.values(patch)) if (v !== null && typeof v === 'object') return snapshot(patch);
  return patch;
}
