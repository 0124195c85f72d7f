// Following a submitted task: the poll job (GET the upstream task, map its status), a
// provider's push to the task's callback URL, read the same way, and the result mapping of a
// completed task. A run of unusable poll answers fails the task; the safety net (cancel.ts)
// fails one that outlives its route's max_execution_ms.
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { upstreamRequests } from '../metrics/metrics.ts';
import type { UpstreamResponse } from '../upstream/client.ts';
import { isoNow } from '../util/clock.ts';
import { sameSecret } from '../util/secrets.ts';
import type { TaskCancellation } from './cancel.ts';
import { finished, type TaskEnding } from './ending.ts';
import { JOBS, type LifecycleDeps, type LifecycleState } from './lifecycle-deps.ts';
import { asGatewayError, DescriptorDefect, descriptorExpression, mappedError, memberOf, readOptional, reportDefect, routeOf } from './provider.ts';
import { readResult, taskPath } from './upstream-answers.ts';
import { readsHttpStatus, UnsafePathError } from '../upstream/answer-paths.ts';
import { type TaskRecord } from './task.ts';
import { ACTIVE, type TaskStatus } from '../vocabulary/task-status.ts';
import { copyResults } from './result-copy.ts';
import { throttled } from '../log/throttle.ts';

/** While a task has a callback URL, its polls are this many times slower (the push is expected first). */
export const CALLBACK_POLL_FACTOR = 10;

/** What a push to /callbacks/{task_id}/{token} did (TaskLifecycle.acceptCallback). */
export type CallbackOutcome = 'accepted' | 'ignored' | 'not_found';

/** The delay to the next poll: the route's interval, or the safety net's slow cadence while a push is expected (never past the deadline). */
export function pollDelay(route: AsyncRoutePlan, task: TaskRecord, now: number): number {
  if (!task.callback_token || !route.callback) return route.poll.intervalMs;
  return Math.max(1, Math.min(route.poll.intervalMs * CALLBACK_POLL_FACTOR, task.deadline_at - now));
}

export class TaskPolling {
  private readonly d: LifecycleDeps;
  private readonly state: LifecycleState;
  private readonly ending: TaskEnding;
  private readonly cancellation: TaskCancellation;

  constructor(deps: LifecycleDeps, state: LifecycleState, ending: TaskEnding, cancellation: TaskCancellation) {
    this.d = deps;
    this.state = state;
    this.ending = ending;
    this.cancellation = cancellation;
  }

  async poll(id: string, n: number): Promise<void> {
    const task = await this.d.store.get(id);
    if (!task || (await this.ending.settled(task)) || !task.upstream_task_id) return;
    const route = routeOf(this.d.routes, task);
    if (this.d.clock.now() >= task.deadline_at) return this.cancellation.deadline(id);
    const p = route.poll;
    // Job ids use '.', not ':' (BullMQ refuses ':' in custom ids).
    const next = () => this.d.scheduler.schedule(JOBS.poll, `${id}.p${n + 1}`, { id, n: n + 1 }, pollDelay(route, task, this.d.clock.now()));
    let res: UpstreamResponse;
    let path: string | undefined;
    let httpStatus: number | undefined;
    try {
      const member = memberOf(route, task);
      if (!member) throw new GatewayError('upstreamUnavailable', `The pool member ${JSON.stringify(task.upstream_member)} that accepted the task is no longer configured for ${route.vendor}.`);
      path = taskPath(p.path, task);
      res = await route.pool.callMember(member, { method: p.method, path, traceparent: task.traceparent, stage: 'poll' });
      httpStatus = res.status;
      // A non-2xx answer whose status the status_map maps (fal's 202, a "not ready" 400) is an
      // answer; any other is a failed poll.
      if ((res.status < 200 || res.status > 299) && !(await mapsStatus(route, res))) {
        const message = await readOptional(this.d.logger, route, 'poll.error_message', p.errorMessage, res.body, res.status);
        throw await mappedError(route, 'poll', { stage: 'poll', http_status: res.status, body: res.body, message });
      }
    } catch (err) {
      // A poll cut short by a shutdown is not the provider's failure: the job is run again.
      if (this.state.stopping) throw err;
      if (err instanceof UnsafePathError) return this.ending.fail(task, new GatewayError('upstreamResponseError', `The task's poll path cannot be built from the provider's answer: ${err.message}.`));
      return this.pollFailed(task, route, asGatewayError(this.d.logger, route, err), n, next, { method: p.method, path, http_status: httpStatus });
    }
    const status = await this.applyAnswer(task, route, res.body, res.status, p.status, 'poll');
    if (typeof status === 'object') return this.pollFailed(task, route, status.retry, n, next, { stage: 'result', ...status.call });
    if (status === 'ended' || status === 'lost') return;
    const now = this.d.clock.now();
    const moved = status === 'processing' && task.status === 'pending';
    // Nothing to record but the sign of life, and the last one is recent: the write is skipped
    // (3 Redis commands a poll). The sweep re-drives only a task silent for a whole grace period.
    if (!moved && task.poll_failures === 0 && task.checked_at !== undefined && now - task.checked_at < this.d.sweepGraceMs / 2) return next();
    const patch: Partial<TaskRecord> = { poll_failures: 0, checked_at: now, poll_n: n };
    if (moved) {
      patch.status = 'processing';
      patch.updated_at = isoNow(this.d.clock);
    }
    if (await this.d.store.update(id, ACTIVE, patch)) await next();
  }

  /** A poll (or result fetch) without a usable answer is retried; only a run of them fails the task. The log names the call and its HTTP status. */
  private async pollFailed(task: TaskRecord, route: AsyncRoutePlan, err: GatewayError, n: number, next: () => Promise<void>, call: Record<string, unknown>): Promise<void> {
    const failures = task.poll_failures + 1;
    if (failures >= this.d.pollErrorLimit) return this.ending.fail(task, err);
    await this.d.store.update(task.id, ACTIVE, { poll_failures: failures, checked_at: this.d.clock.now(), poll_n: n });
    throttled(this.d.logger).warn({ task_id: task.id, vendor: route.vendor, code: err.code, failures, ...call, detail: err.detail }, 'upstream poll failed; will retry');
    return next();
  }

  /**
   * A provider's push to /callbacks/{task_id}/{token}. The token is the credential: an unknown
   * task and a wrong token are the same `not_found`, so a caller learns nothing of which tasks
   * exist. A task already finished (a replay, or the poll won) is `ignored` and left as it is;
   * otherwise the body is read like a poll answer (applyAnswer) and the task moves at once.
   */
  async acceptCallback(id: string, token: string, body: unknown): Promise<CallbackOutcome> {
    const task = await this.d.store.get(id);
    if (!task?.callback_token || !sameSecret(task.callback_token, token)) return 'not_found';
    const route = this.d.routes.get(task.route);
    if (!route?.callback) return 'not_found';
    if (await this.ending.settled(task)) return 'ignored';
    upstreamRequests.inc({ vendor: route.vendor, stage: 'callback', status_class: '2xx' });
    const status = await this.applyAnswer(task, route, body, 200, route.callback.status, 'callback');
    // A result fetch that got no answer is left to the polls, which go on as the safety net.
    if (typeof status === 'object') return 'accepted';
    // Accepted only by the push whose compare-and-set changed the task: of concurrent identical
    // pushes one is `accepted`, the others `ignored` (they changed nothing), as a replay is.
    if (status === 'ended') return 'accepted';
    if (status === 'processing' && task.status === 'pending') {
      return (await this.d.store.update(id, ['pending'], { status: 'processing', updated_at: isoNow(this.d.clock), checked_at: this.d.clock.now() })) ? 'accepted' : 'ignored';
    }
    return 'ignored';
  }

  /** True when push callbacks are on (server.public_base_url) and some route declares one. */
  get callbacksEnabled(): boolean {
    return !!this.d.publicBaseUrl && [...this.d.routes.values()].some((r) => !!r.callback);
  }

  /**
   * An upstream answer about a task (a poll's body, or a provider's push), read the one way:
   * the status through the poll's status_map; failed → the error mapping, completed → the result
   * mapping and settlement, both through the compare-and-set, so a push and a poll racing end the
   * task once. Returns the status when the task goes on (pending / processing), `ended` when
   * this answer ended it, `lost` when it would have but someone else ended the task first (the
   * compare-and-set's answer: of concurrent identical pushes, exactly one ends the task), or a
   * retry when the result fetch (upstream.result) got no usable answer. Expressions see the
   * answer's HTTP status as $http_status.
   */
  private async applyAnswer(task: TaskRecord, route: AsyncRoutePlan, body: unknown, httpStatus: number, statusExpr: AsyncRoutePlan['poll']['status'], stage: 'poll' | 'callback'): Promise<TaskStatus | 'ended' | 'lost' | ResultRetry> {
    try {
      return await this.readAnswer(task, route, body, httpStatus, statusExpr, stage);
    } catch (err) {
      // The descriptor could not read the answer (4011): the task fails, not blamed on the provider.
      if (!(err instanceof DescriptorDefect)) throw err;
      reportDefect(this.d.logger, route, err, task.id);
      return (await this.ending.failTask(task, err)) ? 'ended' : 'lost';
    }
  }

  private async readAnswer(task: TaskRecord, route: AsyncRoutePlan, body: unknown, httpStatus: number, statusExpr: AsyncRoutePlan['poll']['status'], stage: 'poll' | 'callback'): Promise<TaskStatus | 'ended' | 'lost' | ResultRetry> {
    const p = route.poll;
    const raw = await descriptorExpression(route, `${stage}.status`, () => statusExpr.evaluate(body, { http_status: httpStatus }));
    const status = p.statusMap[String(raw)];
    const ended = (failed: TaskRecord | boolean | undefined) => (failed ? 'ended' : 'lost');
    // A copy of the result files that failed is tried again at the next poll: the task goes on.
    const completed = (outcome: boolean | 'retry') => (outcome === 'retry' ? 'processing' : ended(outcome));
    if (!status) return ended(await this.ending.failTask(task, new GatewayError('upstreamResponseError', `The provider reported an unknown task status ${JSON.stringify(raw ?? null)}.`)));
    if (status === 'failed') {
      const message = await readOptional(this.d.logger, route, 'poll.error_message', p.errorMessage, body, httpStatus);
      const code = await readOptional(this.d.logger, route, 'poll.error_code', p.errorCode, body, httpStatus);
      return ended(await this.ending.failTask(task, await mappedError(route, stage, { stage: 'task', http_status: httpStatus, body, message: code && message ? `${message} (${code})` : message })));
    }
    if (status !== 'completed') return status;
    if (!route.resultFetch) return completed(await this.complete(task, route, body, httpStatus));
    // The output sits at a second URL (fal's response_url): its answer is the final one.
    const call = { method: route.resultFetch.method, path: '' };
    let res: UpstreamResponse;
    try {
      // (A push may come before the submit answer is recorded: no path yet, the polls fetch it.)
      call.path = taskPath(route.resultFetch.path, task);
      const member = memberOf(route, task);
      if (!member) throw new GatewayError('upstreamUnavailable', `The pool member ${JSON.stringify(task.upstream_member)} that accepted the task is no longer configured for ${route.vendor}.`);
      res = await route.pool.callMember(member, { ...call, traceparent: task.traceparent, stage: 'result' });
    } catch (err) {
      if (this.state.stopping) throw err;
      if (err instanceof UnsafePathError) return { retry: new GatewayError('upstreamResponseError', `The task's result path cannot be built: ${err.message}.`), call };
      return { retry: asGatewayError(this.d.logger, route, err), call };
    }
    if (res.status < 200 || res.status > 299) {
      const message = await readOptional(this.d.logger, route, 'poll.error_message', p.errorMessage, res.body, res.status);
      this.d.logger.warn({ task_id: task.id, vendor: route.vendor, ...call, http_status: res.status }, 'the result request of a completed task was refused');
      return ended(await this.ending.failTask(task, await mappedError(route, 'result', { stage: 'result', http_status: res.status, body: res.body, message })));
    }
    return completed(await this.complete(task, route, res.body, res.status));
  }

  /**
   * True when this call ended the task (completed, or failed for an unreadable result or files
   * that cannot be copied); false when it had already ended; `retry` when its result files could
   * not be copied yet (the next poll tries again, within the task's deadline).
   */
  private async complete(task: TaskRecord, route: AsyncRoutePlan, body: unknown, httpStatus: number): Promise<boolean | 'retry'> {
    const read = await readResult(route, body, httpStatus, task.request);
    if ('error' in read) return (await this.ending.failTask(task, read.error)) !== undefined;
    const result = read.result;
    // Before `completed`: a client never sees the provider's URLs while the result store is on.
    const alive = { touch: () => this.d.store.update(task.id, ACTIVE, { checked_at: this.d.clock.now() }), everyMs: Math.max(1, Math.floor(this.d.sweepGraceMs / 3)) };
    const copied = await copyResults(this.d.results, task, route, memberOf(route, task), result, alive);
    if ('fail' in copied) return (await this.ending.failTask(task, copied.fail)) !== undefined;
    if ('retry' in copied) {
      await this.d.store.update(task.id, ACTIVE, { result_copy_error: copied.retry, checked_at: this.d.clock.now() });
      return 'retry';
    }
    // The price is fixed before the transition, so a re-run of finalize() settles the same amount.
    const charge = await this.d.accounting.price({ ...task, result }, route, body);
    const patch = { status: 'completed', ...copied.patch, charge, finalized: false, updated_at: isoNow(this.d.clock), poll_failures: 0 } satisfies Partial<TaskRecord>;
    await this.d.accounting.freeSlot(task); // free once `completed` can be seen (TaskAccounting.freeSlot)
    if (!(await this.d.store.update(task.id, ACTIVE, patch))) return false; // someone else finished it first
    // What finalize() and the metrics read of the completed task is the patch and the fields a
    // task never changes (ids, route, tenant, created_at, traceparent): the record as read at the
    // poll's start, patched, is what the compare-and-set wrote for them. The store does not send
    // the whole record back (a result-sized reply decoded once more per task life in Redis mode).
    const done: TaskRecord = { ...task, ...patch };
    finished(done);
    await this.ending.finalize(done);
    return true;
  }
}

/**
 * True when a (non-2xx) poll answer is an answer, not a failed poll: the status expression reads
 * $http_status (so the descriptor means to read such answers) and status_map maps what it reads.
 * An expression that does not look at the status would otherwise map a 404's body onto a default
 * branch ("not done yet") and poll a wrong path until the safety net.
 */
async function mapsStatus(route: AsyncRoutePlan, res: UpstreamResponse): Promise<boolean> {
  if (!readsHttpStatus(route.poll.status.source)) return false;
  const raw = await route.poll.status.evaluate(res.body, { http_status: res.status }).catch(() => undefined);
  return raw !== undefined && raw !== null && String(raw) in route.poll.statusMap;
}

/** A result fetch without a usable answer: retried like a poll. */
interface ResultRetry {
  retry: GatewayError;
  call: { method: string; path: string };
}
