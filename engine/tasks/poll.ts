// Following a submitted task: the poll job (GET the upstream task, map its status), a
// provider's push to the task's callback URL, read the same way, and the result mapping of a
// completed task. A run of unusable poll answers fails the task; the safety net (cancel.ts)
// fails one that outlives its route's max_execution_ms.
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { resultFieldValue } from '../descriptors/result-fields.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { upstreamRequests } from '../metrics/metrics.ts';
import type { UpstreamResponse } from '../upstream/client.ts';
import { isoNow } from '../util/clock.ts';
import { sameSecret } from '../util/secrets.ts';
import type { TaskCancellation } from './cancel.ts';
import { finished, type TaskEnding } from './ending.ts';
import { JOBS, type LifecycleDeps, type LifecycleState } from './lifecycle-deps.ts';
import { asGatewayError, mappedError, memberOf, readOptional, routeOf, upstreamPath } from './provider.ts';
import { ACTIVE, type TaskRecord, type TaskStatus } from './task.ts';
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
    try {
      const member = memberOf(route, task);
      if (!member) throw new GatewayError(3001, `The pool member ${JSON.stringify(task.upstream_member)} that accepted the task is no longer configured for ${route.vendor}.`);
      res = await route.pool.callMember(member, { method: p.method, path: upstreamPath(p.path, task.upstream_task_id), traceparent: task.traceparent, stage: 'poll' });
      if (res.status < 200 || res.status > 299) {
        const message = await readOptional(p.errorMessage, res.body);
        throw await mappedError(route, 'poll', { stage: 'poll', http_status: res.status, body: res.body, message });
      }
    } catch (err) {
      // A poll cut short by a shutdown is not the provider's failure: the job is run again.
      if (this.state.stopping) throw err;
      // A poll without a usable answer is retried; only a run of them fails the task.
      const failures = task.poll_failures + 1;
      const gwErr = asGatewayError(this.d.logger, route, err);
      if (failures >= this.d.pollErrorLimit) return this.ending.fail(task, gwErr);
      await this.d.store.transition(id, ACTIVE, { poll_failures: failures, checked_at: this.d.clock.now(), poll_n: n });
      throttled(this.d.logger).warn({ task_id: id, code: gwErr.code, failures }, 'upstream poll failed; will retry');
      return next();
    }
    const status = await this.applyAnswer(task, route, res.body, res.status, p.status, 'poll');
    if (status === 'ended' || status === 'lost') return;
    const patch: Partial<TaskRecord> = { poll_failures: 0, checked_at: this.d.clock.now(), poll_n: n };
    if (status === 'processing' && task.status === 'pending') {
      patch.status = 'processing';
      patch.updated_at = isoNow(this.d.clock);
    }
    if (await this.d.store.transition(id, ACTIVE, patch)) await next();
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
    // Accepted only by the push whose compare-and-set changed the task: of concurrent identical
    // pushes one is `accepted`, the others `ignored` (they changed nothing), as a replay is.
    if (status === 'ended') return 'accepted';
    if (status === 'processing' && task.status === 'pending') {
      return (await this.d.store.transition(id, ['pending'], { status: 'processing', updated_at: isoNow(this.d.clock), checked_at: this.d.clock.now() })) ? 'accepted' : 'ignored';
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
   * compare-and-set's answer: of concurrent identical pushes, exactly one ends the task).
   */
  private async applyAnswer(task: TaskRecord, route: AsyncRoutePlan, body: unknown, httpStatus: number, statusExpr: AsyncRoutePlan['poll']['status'], stage: 'poll' | 'callback'): Promise<TaskStatus | 'ended' | 'lost'> {
    const p = route.poll;
    const raw = await statusExpr.evaluate(body).catch(() => undefined);
    const status = p.statusMap[String(raw)];
    const ended = (failed: TaskRecord | boolean | undefined) => (failed ? 'ended' : 'lost');
    if (!status) return ended(await this.ending.failTask(task, new GatewayError(3003, `The provider reported an unknown task status ${JSON.stringify(raw ?? null)}.`)));
    if (status === 'failed') {
      const message = await readOptional(p.errorMessage, body);
      const code = await readOptional(p.errorCode, body);
      return ended(await this.ending.failTask(task, await mappedError(route, stage, { stage: 'task', http_status: httpStatus, body, message: code && message ? `${message} (${code})` : message })));
    }
    if (status === 'completed') return ended(await this.complete(task, route, body));
    return status;
  }

  /** True when this call ended the task (completed, or failed for an unreadable result); false when it had already ended. */
  private async complete(task: TaskRecord, route: AsyncRoutePlan, body: unknown): Promise<boolean> {
    const result: Record<string, unknown> = {};
    for (const [name, expr] of route.result) {
      const read = resultFieldValue(name, await expr.evaluate(body, { request: task.request }).catch(() => undefined));
      if (!read.ok) return (await this.ending.failTask(task, new GatewayError(3003, `The provider reported success but its answer ${read.reason}.`))) !== undefined;
      result[name] = read.value;
    }
    // The price is fixed before the transition, so a re-run of finalize() settles the same amount.
    const charge = await this.d.accounting.price({ ...task, result }, route, body);
    const done = await this.d.store.transition(task.id, ACTIVE, { status: 'completed', result, charge, finalized: false, updated_at: isoNow(this.d.clock), poll_failures: 0 });
    if (!done) return false; // someone else finished it first
    finished(done);
    await this.ending.finalize(done);
    return true;
  }
}
