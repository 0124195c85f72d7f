// The task vocabulary every layer speaks: a task's statuses and how they group. It lives on the
// ground floor because the descriptor compiler (status maps target these words), the task
// service, the store adapters, the HTTP layer and the tooling all read it, and none of them may
// import another's room to get it (the task record itself stays in engine/tasks/task.ts).

/** A task's states; descriptors' status maps target them (engine/descriptors/types.ts). */
export type TaskStatus = 'pending' | 'processing' | 'completed' | 'failed';
export const TASK_STATUSES: readonly TaskStatus[] = ['pending', 'processing', 'completed', 'failed'];

/** The statuses a task ends in. */
export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed']);
/** The statuses a transition may move a task out of (every transition is a compare-and-set on them). */
export const ACTIVE: readonly TaskStatus[] = ['pending', 'processing'];
