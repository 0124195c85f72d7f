// Memory adapter of the task store (the embedded default: one process).
import type { TaskStatus } from '../../descriptors/types.ts';
import type { TaskStore } from '../../tasks/store.ts';
import type { TaskRecord } from '../../tasks/task.ts';

export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, TaskRecord>();

  async create(task: TaskRecord): Promise<void> {
    if (this.tasks.has(task.id)) throw new Error(`task ${task.id} exists`);
    this.tasks.set(task.id, structuredClone(task));
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    const t = this.tasks.get(id);
    return t ? structuredClone(t) : undefined;
  }

  async transition(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<TaskRecord | undefined> {
    const t = this.tasks.get(id);
    if (!t || !from.includes(t.status)) return undefined;
    Object.assign(t, structuredClone(patch));
    return structuredClone(t);
  }
}
