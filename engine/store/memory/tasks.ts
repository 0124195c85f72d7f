// Memory adapter of the task store (the embedded default: one process).
import type { TaskStatus } from '../../descriptors/types.ts';
import type { TaskStore } from '../../tasks/store.ts';
import type { TaskRecord } from '../../tasks/task.ts';

export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, TaskRecord>();
  /** Ids of unsettled tasks, in creation order. */
  private readonly unsettled = new Set<string>();

  async create(task: TaskRecord): Promise<void> {
    if (this.tasks.has(task.id)) throw new Error(`task ${task.id} exists`);
    this.tasks.set(task.id, structuredClone(task));
    this.unsettled.add(task.id);
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    const t = this.tasks.get(id);
    return t ? structuredClone(t) : undefined;
  }

  async transition(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<TaskRecord | undefined> {
    const t = this.tasks.get(id);
    if (!t || !from.includes(t.status)) return undefined;
    Object.assign(t, structuredClone(patch));
    if (t.finalized === true) this.unsettled.delete(id);
    return structuredClone(t);
  }

  async listUnsettled(limit: number): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    for (const id of this.unsettled) {
      if (out.length >= limit) break;
      out.push(structuredClone(this.tasks.get(id)!));
    }
    return out;
  }
}
