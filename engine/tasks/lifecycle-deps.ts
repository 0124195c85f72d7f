// What the lifecycle's rooms (submit, poll, cancel, sweep, ending) share: their dependencies,
// the job names they schedule each other by, and the one flag a shutdown sets.
import type { Logger } from 'pino';
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import type { EventBus } from '../events/bus.ts';
import type { JobScheduler } from '../jobs/scheduler.ts';
import type { SharedMediaStore } from '../media/shared.ts';
import type { Clock } from '../util/clock.ts';
import type { TaskAccounting } from './accounting.ts';
import type { TaskStore } from './store.ts';
import type { ResultCopyPort } from './result-copy.ts';

/**
 * The lifecycle's jobs. `deadline` is scheduled by no current code: it serves the jobs that
 * versions before e36f5af (2026-11-23, when the polls and the sweep took over the deadline) left queued, so an operator can upgrade
 * with work in flight (test/tasks/earlier-versions.test.ts).
 */
export const JOBS = { submit: 'task.submit', poll: 'task.poll', deadline: 'task.deadline', sweep: 'task.sweep' } as const;

export interface LifecycleDeps {
  store: TaskStore;
  scheduler: JobScheduler;
  bus: EventBus;
  clock: Clock;
  accounting: TaskAccounting;
  logger: Logger;
  routes: ReadonlyMap<string, AsyncRoutePlan>;
  /** Consecutive unusable poll answers tolerated before the task fails. */
  pollErrorLimit: number;
  /** How often the safety sweep runs, and how long an active task may show no sign of life before it re-drives it. */
  sweepIntervalMs: number;
  sweepGraceMs: number;
  /** Redis mode: uploaded media travel to the process that submits the task. */
  sharedMedia?: SharedMediaStore;
  /** server.public_base_url (no trailing slash): routes declaring upstream.callback get a push URL under it. */
  publicBaseUrl?: string;
  /** The result store (results.store not off): a completed task's files are copied before it shows completed. */
  results?: ResultCopyPort;
  /** server.max_task_calls_running: past this many submissions and polls running here, creates are refused (503 / 4001). */
  maxCallsRunning: number;
}

/**
 * Set once a shutdown's grace period is over: no new submission, and work cut short from then
 * on is not the provider's failure (it is left as it is, to be re-driven).
 */
export interface LifecycleState {
  stopping: boolean;
  /** Submissions and polls this process has started and not finished: its own backlog of upstream calls. */
  calls: number;
}
