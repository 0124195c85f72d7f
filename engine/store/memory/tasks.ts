// Memory adapter of the task store (the embedded default: one process). Records are deeply
// frozen snapshots: a transition stores a new one, so readers can be handed the stored snapshot
// itself instead of a deep copy (copies were ~8% of a create's CPU), and cannot change it.
import type { TaskStatus } from '../../descriptors/types.ts';
import type { TaskStore } from '../../tasks/store.ts';
import type { TaskRecord } from '../../tasks/task.ts';
import { snapshot } from './snapshot.ts';

export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, Readonly<TaskRecord>>();
  /** Ids of unsettled tasks, in creation order. */
  private readonly unsettled = new Set<string>();

  async create(task: TaskRecord): Promise<void> {
    if (this.tasks.has(task.id)) throw new Error(`task ${task.id} exists`);
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
    if (next.finalized === true) this.unsettled.delete(id);
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
}

/** Patches are mostly flat (status, times, counters); only nested values need a private, frozen copy. */
function frozenCopy(patch: Partial<TaskRecord>): Partial<TaskRecord> {
  for (const v of Object.values(patch)) if (v !== null && typeof v === 'object') return snapshot(patch);
  return patch;
}
