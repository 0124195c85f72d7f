// The task record the engine keeps, and the client-facing views of it: the GET response
// (`task_info` plus result fields beside it) and the `task_info` object itself.
import type { TaskError } from '../errors/gateway-error.ts';
import type { TaskStatus } from '../vocabulary/task-status.ts';

export interface TaskRecord {
  id: string;
  tenant_id: string;
  vendor: string;
  /** `<vendor>/<route id>` of the route that created it. */
  route: string;
  model_name: string;
  status: TaskStatus;
  created_at: string;
  updated_at: string;
  /** The validated client request (defaults applied). */
  request: Record<string, unknown>;
  upstream_task_id?: string;
  /** Paths under the accepting member's base URL of the URLs the submit answer named (upstream.submit.urls), by name. */
  upstream_urls?: Record<string, string>;
  /**
   * Epoch ms when the task was last sent to the provider, recorded before it is sent: set with no
   * upstream_task_id, the submission's outcome is unknown (its process died before recording the
   * provider's answer), and it is not sent again unless the provider dedupes (submit.ts).
   */
  submit_sent_at?: number;
  /** The upstream pool member that accepted the task (config upstreams.<vendor>.members[].id): its polls and cancel go there. */
  upstream_member?: string;
  /** Result fields (images, videos, audios, ...) once completed. */
  result?: Record<string, unknown>;
  error?: TaskError;
  /** Epoch ms after which the safety net fails the task with 4008. */
  deadline_at: number;
  /** Consecutive polls that got no usable answer. */
  poll_failures: number;
  /** W3C traceparent of the creating request, passed upstream on every call. */
  traceparent?: string;
  /** Milli-credits held for this task at creation. */
  hold?: number;
  /** Milli-credits to settle, fixed when the task completes. */
  charge?: number;
  /** false between a terminal transition and the end of its side effects (settle/release, event). */
  finalized?: boolean;
  /** Epoch ms of the last sign of life (submission, poll): the sweep re-drives tasks silent too long. */
  checked_at?: number;
  /** The secret of the task's callback URL (set when its route declares a callback and server.public_base_url is set). */
  callback_token?: string;
  /** Number of the last poll, so a re-driven poll chain continues the lost one's job ids. */
  poll_n?: number;
  /** The secret in the task's result-file URLs (engine/results/): chosen at create, never shown on its own. */
  results_token?: string;
  /** When the copied result files expire (ISO 8601): the task read shows it beside the URL arrays. */
  results_expire_at?: string;
  /** Why the last copy of the result files failed (retried until the deadline, which then fails the task with 4012). */
  result_copy_error?: string;
}

export interface TaskInfo {
  id: string;
  status: TaskStatus;
  created_at: string;
  updated_at: string;
  error?: TaskError;
}

export function taskInfo(t: TaskRecord): TaskInfo {
  const info: TaskInfo = { id: t.id, status: t.status, created_at: t.created_at, updated_at: t.updated_at };
  if (t.error) info.error = t.error;
  return info;
}

/** The GET response: task_info, and the result fields beside it once completed. */
export function taskResponse(t: TaskRecord): Record<string, unknown> {
  if (t.status !== 'completed' || !t.result) return { task_info: taskInfo(t) };
  return t.results_expire_at ? { task_info: taskInfo(t), ...t.result, results_expire_at: t.results_expire_at } : { task_info: taskInfo(t), ...t.result };
}
