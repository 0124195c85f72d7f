// What the lifecycle needs of the result store (engine/results/, docs/results.md), as a port:
// the store's service implements it, so tasks never import the results folder (which reads
// task records). A completed task's files are copied before the task may show `completed`.
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import type { GatewayError } from '../errors/gateway-error.ts';
import type { PoolMember } from '../upstream/pool.ts';
import type { TaskRecord } from './task.ts';

/** The vendor's credentials for the hosts whose file URLs need them (descriptor result_download.auth_hosts). */
export interface DownloadAuth {
  hosts: ReadonlySet<string>;
  headers: () => Promise<Record<string, string>> | Record<string, string>;
}

export type CopyOutcome =
  | { ok: true; patch: Pick<TaskRecord, 'result' | 'results_token' | 'results_expire_at'> }
  | { ok: false; error: GatewayError; permanent: boolean };

export interface ResultCopyPort {
  copy(task: TaskRecord, result: Record<string, unknown>, auth?: DownloadAuth): Promise<CopyOutcome>;
}

/** Marks the task alive (its checked_at), every `everyMs` while a copy runs. */
export interface Heartbeat {
  touch: () => Promise<unknown>;
  everyMs: number;
}

/** What to do with a completed answer once its files were (or were not) copied. */
export type CopyStep = { patch: Partial<TaskRecord> } | { fail: GatewayError } | { retry: string };

/**
 * Copy the files of `result` when the store is on (else the provider's URLs pass through). A
 * failure that cannot heal (refused address, too large, wrong type, a link that is gone) fails
 * the task at once; any other is retried at the next poll, within the task's deadline.
 */
export async function copyResults(results: ResultCopyPort | undefined, task: TaskRecord, route: AsyncRoutePlan, member: PoolMember | undefined, result: Record<string, unknown>, alive: Heartbeat): Promise<CopyStep> {
  if (!results) return { patch: { result } };
  const auth = route.resultAuthHosts.size && member ? { hosts: route.resultAuthHosts, headers: () => member.client.auth.headers() } : undefined;
  // A long copy (a large video) shows signs of life, so the sweep does not re-drive the task
  // into a second, concurrent copy while this one runs.
  const beat = setInterval(() => void alive.touch().catch(() => undefined), alive.everyMs);
  let copy: CopyOutcome;
  try {
    copy = await results.copy(task, result, auth);
  } finally {
    clearInterval(beat);
  }
  if (copy.ok) return { patch: copy.patch };
  return copy.permanent ? { fail: copy.error } : { retry: copy.error.detail };
}
