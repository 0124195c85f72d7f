// The asynchronous task lifecycle, generic over descriptors:
//   create: reserve credits → store task_info (pending) → task.created → 202, then submit
//   submit: build the upstream body (descriptor mapping) → POST → remember the upstream id
//   poll job:   GET the upstream task → map its status → processing / completed / failed
//   safety net: a task not finished by the route's max_execution_ms fails with 4008 — checked at
//   every poll, and by the sweep for a task whose timers were lost (no job per task for it:
//   one job less per create); when the route declares an upstream cancel, the provider is then
//   asked once to stop the task (cancelUpstream)
//   cancel: a client's cancellation fails an active task with 4009 (released, task.failed), then
//   asks the provider to stop it the same way
// Every transition is a compare-and-set on the status (TaskStore.transition), so a late or
// duplicate poll answer never moves a finished task and settle/release happen once.
import { hash, randomBytes } from 'node:crypto';
import { ATTR_DB_OPERATION_NAME } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import { GatewayError, isDependencyUnavailable } from '../errors/gateway-error.ts';
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { resultFieldValue } from '../descriptors/result-fields.ts';
import type { TaskStatus } from '../descriptors/types.ts';
import type { EventBus } from '../events/bus.ts';
import type { JobScheduler } from '../jobs/scheduler.ts';
import { MediaGoneError, mediaBlobs, tokensIn } from '../media/blobs.ts';
import { adoptMedia, forgetSharedMedia, shareMedia, type SharedMediaStore } from '../media/shared.ts';
import { mapUpstreamError, UpstreamFailure, type UpstreamErrorFacts } from '../upstream/failure.ts';
import type { UpstreamResponse } from '../upstream/client.ts';
import type { PoolMember } from '../upstream/pool.ts';
import { isoAt, isoNow, type Clock } from '../util/clock.ts';
import { newUuid } from '../util/ids.ts';
import { sameSecret } from '../util/secrets.ts';
import { sweepRedrives, taskDuration, tasksCreated, tasksFinished, upstreamErrors, upstreamRequests } from '../metrics/metrics.ts';
import { RetryUntilDone } from '../util/retry-until-done.ts';
import { traced, tracing } from '../tracing/tracing.ts';
import type { TaskAccounting } from './accounting.ts';
import type { TaskStore } from './store.ts';
import { TERMINAL, taskInfo, taskResponse, type TaskRecord } from './task.ts';

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
}

/** While a task has a callback URL, its polls are this many times slower (the push is expected first). */
export const CALLBACK_POLL_FACTOR = 10;

/** What a push to /callbacks/{task_id}/{token} did (TaskLifecycle.acceptCallback). */
export type CallbackOutcome = 'accepted' | 'ignored' | 'not_found';

const ACTIVE: readonly TaskStatus[] = ['pending', 'processing'];
const STORE_CREATE = { [ATTR_DB_OPERATION_NAME]: 'tasks.create' };
const SWEEP_PAGE = 200;

export class TaskLifecycle {
  private readonly d: LifecycleDeps;
  private sweeps = 0;
  private sweepAfter: string | undefined;
  /** Creates refused after they may have written something: undone once the store answers. */
  private readonly withdrawals: RetryUntilDone;
  /** Submissions running in this process, by task id (any caller: create, job, sweep); awaited, within the grace, at shutdown. */
  private readonly submissions = new Map<string, Promise<void>>();
  private stopping = false;

  constructor(deps: LifecycleDeps) {
    this.d = deps;
    this.withdrawals = new RetryUntilDone({
      onError: (err, key, dropped) => {
        if (dropped) this.d.logger.error({ err, task_id: key }, 'a refused create could not be withdrawn (its hold is released by the sweep)');
        else this.d.logger.warn({ err, steps: key }, 'refused creates wait for the store to be withdrawn');
      },
    });
  }

  /** Register the job handlers (worker role). */
  startWorkers(): void {
    this.d.scheduler.handle(JOBS.submit, (p) => this.submit(String(p.id)));
    this.d.scheduler.handle(JOBS.poll, (p) => this.poll(String(p.id), Number(p.n ?? 0)));
    this.d.scheduler.handle(JOBS.deadline, (p) => this.deadline(String(p.id))); // jobs of earlier versions
    this.d.scheduler.handle(JOBS.sweep, async (p) => {
      sweepRedrives.inc(await this.sweep());
      await this.scheduleSweep(Number(p.n ?? 0) + 1);
    });
  }

  /** Start the sweep chain; the job id names its slot, so several workers share one chain. */
  async scheduleSweep(n = Math.floor(this.d.clock.now() / this.d.sweepIntervalMs) + 1): Promise<void> {
    const slot = Math.max(n, Math.floor(this.d.clock.now() / this.d.sweepIntervalMs) + 1);
    await this.d.scheduler.schedule(JOBS.sweep, `sweep.${slot}`, { n: slot }, slot * this.d.sweepIntervalMs - this.d.clock.now());
  }

  async create(route: AsyncRoutePlan, tenantId: string, request: Record<string, unknown>, traceparent?: string): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const at = isoAt(now);
    const task: TaskRecord = {
      id: newUuid(),
      tenant_id: tenantId,
      vendor: route.vendor,
      route: route.key,
      model_name: route.modelName,
      status: 'pending',
      created_at: at,
      updated_at: at,
      request,
      deadline_at: now + route.maxExecutionMs,
      poll_failures: 0,
      traceparent,
    };
    if (route.callback && this.d.publicBaseUrl) task.callback_token = randomBytes(24).toString('base64url');
    try {
      task.hold = await this.d.accounting.reserve(task, route);
    } catch (err) {
      // A refusal (1003, 1005) undoes its own steps; a store that went away may have kept some.
      if (isDependencyUnavailable(err)) this.withdraw(task);
      throw err;
    }
    try {
      if (this.d.sharedMedia) await shareMedia(this.d.sharedMedia, tokensIn(request), route.maxExecutionMs + this.d.sweepGraceMs);
      await (tracing ? traced('store tasks.create', () => this.d.store.create(task), STORE_CREATE) : this.d.store.create(task));
      await this.d.bus.emit(tenantId, 'task.created', eventData(task, { task_info: taskInfo(task) }), { id: eventId(task.id, 'task.created'), traceparent: task.traceparent });
      tasksCreated.inc({ vendor: route.vendor, route: route.key });
    } catch (err) {
      // Refused, so nothing of it may stay: the task, if it was written before the failure (or
      // its reply lost), and the hold go, now or once the store answers again.
      this.withdraw(task);
      throw isDependencyUnavailable(err) ? err : new GatewayError(4002, 'The task could not be stored.', { cause: err });
    }
    // Submitted at once by the process that accepted the task (after the 202 is on its way), not
    // through a job: one job less per create. A submission lost with its process is re-driven by
    // the sweep once the task has shown no sign of life for the grace period.
    setImmediate(() => {
      this.submit(task.id).catch((err) => this.d.logger[this.stopping || isDependencyUnavailable(err) ? 'warn' : 'error']({ err, task_id: task.id }, 'task submission failed; the sweep re-drives it'));
    });
    return task;
  }

  /**
   * Undo a create that is answered with an error after it may have written its task or hold
   * (e.g. the store went away, or the answer could not be recorded): the task is deleted unless
   * it already finished, the hold and the task slot are released. Tried at once, then until the
   * store answers. Until then this process does not submit the task.
   */
  withdraw(task: TaskRecord): void {
    this.withdrawals.add(task.id, async () => {
      if (!(await this.d.store.discard(task.id)) && (await this.d.store.get(task.id))) {
        this.d.logger.error({ task_id: task.id }, 'a refused create had already finished when it was withdrawn');
        return;
      }
      await this.d.accounting.abandon(task);
    });
  }

  /**
   * Shutdown, once its grace period is over: no new submission, and work cut short from now on
   * is not the provider's failure: it is left as it is, to be re-driven.
   */
  stop(): void {
    this.stopping = true;
  }

  /** Resolves once no submission is running in this process. */
  async idle(): Promise<void> {
    while (this.submissions.size) await Promise.allSettled([...this.submissions.values()]);
  }

  /** A last try at the withdrawals still waiting (at shutdown), within `timeoutMs`. */
  flushWithdrawals(timeoutMs: number): Promise<void> {
    return this.withdrawals.flush(timeoutMs);
  }

  async submit(id: string): Promise<void> {
    // A re-drive (the sweep) of a submission this process is still making (a slow provider, or
    // a failover through the pool's members) joins it instead of sending the task again.
    const running = this.submissions.get(id);
    if (running) return running;
    const run = this.submitNow(id).finally(() => this.submissions.delete(id));
    this.submissions.set(id, run);
    return run;
  }

  private async submitNow(id: string): Promise<void> {
    if (this.stopping || this.withdrawals.has(id)) return;
    const task = await this.d.store.get(id);
    if (!task || (await this.settled(task)) || task.upstream_task_id) return;
    const route = this.routeOf(task);
    const s = route.submit;
    let res: UpstreamResponse;
    let member: PoolMember;
    const media = tokensIn(task.request);
    try {
      // Another process (or this one before a restart) may have received the upload.
      if (media.length && this.d.sharedMedia) media.push(...(await adoptMedia(this.d.sharedMedia, media)));
      let body = await s.body.evaluate(task.request);
      if (route.callback && task.callback_token) body = withField(body, route.callback.urlField, this.callbackUrl(task));
      // Large media the request holds as blobs are spliced back into the serialised body.
      const rawBody = media.length ? mediaBlobs.encodeJson(body) : undefined;
      // Every member tried gets the same key, so a provider that did take a "failed" try keeps one task.
      const headers = s.idempotencyHeader ? { ...s.headers, [s.idempotencyHeader]: task.id } : s.headers;
      // A try the provider did not accept goes to the next member within the task's deadline:
      // one hold for the task, taken at create, whatever the number of tries.
      ({ res, member } = await route.pool.call({ method: s.method, path: s.path, body, rawBody, headers, traceparent: task.traceparent, stage: 'submit' }, {
        until: task.deadline_at,
        onFailover: (from, reason) => this.d.logger.warn({ task_id: id, vendor: route.vendor, member: from.id, reason }, 'submission failed over to the next pool member'),
      }));
    } catch (err) {
      // Cut short by a shutdown, or the store went away: not the provider's answer. The task
      // stays pending and is re-driven (the job's retry, or the sweep).
      if (this.stopping || isDependencyUnavailable(err)) throw err;
      if (err instanceof MediaGoneError) return this.fail(task, new GatewayError(4002, `The task could not be submitted: ${err.message}.`));
      return this.fail(task, this.asGatewayError(route, err));
    } finally {
      if (media.length) mediaBlobs.release(media);
    }
    if (media.length && this.d.sharedMedia) await forgetSharedMedia(this.d.sharedMedia, media).catch(() => undefined);
    if (res.status < 200 || res.status > 299) {
      const message = await readOptional(s.errorMessage, res.body);
      return this.fail(task, await mappedError(route, 'submit', { stage: 'submit', http_status: res.status, body: res.body, message }));
    }
    if (s.accept && !(await s.accept.evaluate(res.body).catch(() => false))) {
      // A 2xx that says "not accepted" inside: the provider refused this request (3002 unless mapped).
      const message = await readOptional(s.errorMessage, res.body);
      const facts: UpstreamErrorFacts = { stage: 'submit', http_status: res.status, body: res.body, message };
      const err = await mapUpstreamError(route.errorRules, facts);
      return this.fail(task, countedError(route, 'submit', err.code === 3003 ? new GatewayError(3002, err.detail) : err));
    }
    const upstreamId = await s.taskId.evaluate(res.body).catch(() => undefined);
    if (typeof upstreamId !== 'string' && typeof upstreamId !== 'number') {
      return this.fail(task, new GatewayError(3003, 'The provider accepted the task but its answer carries no task id.'));
    }
    const updated = await this.d.store.transition(id, ACTIVE, { upstream_task_id: String(upstreamId), upstream_member: member.id, checked_at: this.d.clock.now() });
    if (updated) await this.d.scheduler.schedule(JOBS.poll, `${id}.p1`, { id, n: 1 }, this.pollDelay(route, task));
    // The task ended while it was being submitted (e.g. the safety net failed it): the provider
    // has just started work nobody will collect, so it is asked to stop it.
    // (A provider's push may also have completed it before this answer was recorded: nothing to stop then.)
    else if ((await this.d.store.get(id))?.status !== 'completed') void this.cancelUpstream({ ...task, upstream_task_id: String(upstreamId), upstream_member: member.id }, 'ended during submission');
  }

  async poll(id: string, n: number): Promise<void> {
    const task = await this.d.store.get(id);
    if (!task || (await this.settled(task)) || !task.upstream_task_id) return;
    const route = this.routeOf(task);
    if (this.d.clock.now() >= task.deadline_at) return this.deadline(id);
    const p = route.poll;
    // Job ids use '.', not ':' (BullMQ refuses ':' in custom ids).
    const next = () => this.d.scheduler.schedule(JOBS.poll, `${id}.p${n + 1}`, { id, n: n + 1 }, this.pollDelay(route, task));
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
      if (this.stopping) throw err;
      // A poll without a usable answer is retried; only a run of them fails the task.
      const failures = task.poll_failures + 1;
      const gwErr = this.asGatewayError(route, err);
      if (failures >= this.d.pollErrorLimit) return this.fail(task, gwErr);
      await this.d.store.transition(id, ACTIVE, { poll_failures: failures, checked_at: this.d.clock.now(), poll_n: n });
      this.d.logger.warn({ task_id: id, code: gwErr.code, failures }, 'upstream poll failed; will retry');
      return next();
    }
    const status = await this.applyAnswer(task, route, res.body, res.status, p.status, 'poll');
    if (!status) return;
    const patch: Partial<TaskRecord> = { poll_failures: 0, checked_at: this.d.clock.now(), poll_n: n };
    if (status === 'processing' && task.status === 'pending') {
      patch.status = 'processing';
      patch.updated_at = isoNow(this.d.clock);
    }
    if (await this.d.store.transition(id, ACTIVE, patch)) await next();
  }

  /**
   * An upstream answer about a task (a poll's body, or a provider's push), read the one way:
   * the status through the poll's status_map; failed → the error mapping, completed → the result
   * mapping and settlement, both through the compare-and-set, so a push and a poll racing end the
   * task once. Returns the status when the task goes on (pending / processing), undefined when
   * this answer ended it (or tried to: someone else may have won).
   */
  private async applyAnswer(task: TaskRecord, route: AsyncRoutePlan, body: unknown, httpStatus: number, statusExpr: AsyncRoutePlan['poll']['status'], stage: 'poll' | 'callback'): Promise<TaskStatus | undefined> {
    const p = route.poll;
    const raw = await statusExpr.evaluate(body).catch(() => undefined);
    const status = p.statusMap[String(raw)];
    if (!status) {
      await this.fail(task, new GatewayError(3003, `The provider reported an unknown task status ${JSON.stringify(raw ?? null)}.`));
      return undefined;
    }
    if (status === 'failed') {
      const message = await readOptional(p.errorMessage, body);
      const code = await readOptional(p.errorCode, body);
      await this.fail(task, await mappedError(route, stage, { stage: 'task', http_status: httpStatus, body, message: code && message ? `${message} (${code})` : message }));
      return undefined;
    }
    if (status === 'completed') {
      await this.complete(task, route, body);
      return undefined;
    }
    return status;
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
    if (await this.settled(task)) return 'ignored';
    upstreamRequests.inc({ vendor: route.vendor, stage: 'callback', status_class: '2xx' });
    const status = await this.applyAnswer(task, route, body, 200, route.callback.status, 'callback');
    if (status === 'processing' && task.status === 'pending') {
      await this.d.store.transition(id, ['pending'], { status: 'processing', updated_at: isoNow(this.d.clock), checked_at: this.d.clock.now() });
    }
    return 'accepted';
  }

  /** True when push callbacks are on (server.public_base_url) and some route declares one. */
  get callbacksEnabled(): boolean {
    return !!this.d.publicBaseUrl && [...this.d.routes.values()].some((r) => !!r.callback);
  }

  private callbackUrl(task: TaskRecord): string {
    return `${this.d.publicBaseUrl}/callbacks/${task.id}/${task.callback_token}`;
  }

  /** The delay to the next poll: the route's interval, or the safety net's slow cadence while a push is expected (never past the deadline). */
  private pollDelay(route: AsyncRoutePlan, task: TaskRecord): number {
    if (!task.callback_token || !route.callback) return route.poll.intervalMs;
    return Math.max(1, Math.min(route.poll.intervalMs * CALLBACK_POLL_FACTOR, task.deadline_at - this.d.clock.now()));
  }

  async deadline(id: string): Promise<void> {
    const task = await this.d.store.get(id);
    if (!task || (await this.settled(task))) return;
    const route = this.d.routes.get(task.route);
    const seconds = route ? Math.round(route.maxExecutionMs / 1000) : 0;
    const failed = await this.failTask(task, new GatewayError(4008, `The task exceeded the maximum execution time (${seconds} s) and was cancelled.`));
    // Only the caller whose transition failed the task asks the provider to stop it, so a poll
    // and the sweep reaching the deadline together send one cancel. Not awaited: a slow or dead
    // provider must hold up neither this job nor the sweep's other tasks.
    if (failed) void this.cancelUpstream(failed, 'max_execution_ms');
  }

  /**
   * A client's cancellation (POST <path>/{task_id}/cancel). It goes through the same
   * compare-and-set as every terminal transition, so against a completion (or a failure, or the
   * safety net) racing it exactly one wins: completed and settled, or failed with 4009 and
   * released in full, never both. `cancelled` is false when the task had already finished; the
   * task is then returned as it ended (re-read, so the caller can name the state that won).
   * Resolves once the hold is released and task.failed is published; the provider's cancel is
   * not awaited, so a slow or dead provider never holds up the client's answer.
   */
  async cancel(task: TaskRecord): Promise<{ cancelled: boolean; task: TaskRecord }> {
    const err = new GatewayError(4009, `The task was cancelled by the client while ${task.status}; it is not billed.`);
    const failed = await this.failTask(task, err);
    if (!failed) return { cancelled: false, task: (await this.d.store.get(task.id)) ?? task };
    // A task still being submitted has no upstream id yet: submit() sees the lost transition
    // and sends this cancel itself once the provider has answered.
    void this.cancelUpstream(failed, 'cancelled by the client');
    return { cancelled: true, task: failed };
  }

  /**
   * Ask the provider to stop a task, when its route declares an upstream cancel (the safety
   * net's 4008 does; a client's cancellation can too): the route's cancel request, with the
   * poll's base URL, auth and credentials. Best-effort: it never throws, and its outcome is only
   * logged (the task's failure and the release of its hold never depend on it). True when the
   * provider accepted it (a 2xx); false when there is nothing to cancel or it did not.
   */
  async cancelUpstream(task: TaskRecord, reason: string): Promise<boolean> {
    const route = this.d.routes.get(task.route);
    const c = route?.cancel;
    if (!route || !c || !task.upstream_task_id) return false;
    const log = { task_id: task.id, upstream_task_id: task.upstream_task_id, route: route.key, reason };
    try {
      const body = c.body ? await c.body.evaluate(task.request, { upstream_task_id: task.upstream_task_id }) : undefined;
      const member = memberOf(route, task);
      if (!member) {
        this.d.logger.warn({ ...log, member: task.upstream_member }, 'the pool member that accepted the task is no longer configured: no upstream cancel');
        return false;
      }
      const res = await route.pool.callMember(member, { method: c.method, path: upstreamPath(c.path, task.upstream_task_id), body, traceparent: task.traceparent, stage: 'cancel' });
      if (res.status >= 200 && res.status <= 299) {
        this.d.logger.info(log, 'upstream task cancelled');
        return true;
      }
      this.d.logger.warn({ ...log, http_status: res.status }, 'the provider refused to cancel the task');
    } catch (err) {
      this.d.logger.warn({ ...log, err }, 'the upstream cancel request failed');
    }
    return false;
  }

  private async complete(task: TaskRecord, route: AsyncRoutePlan, body: unknown): Promise<void> {
    const result: Record<string, unknown> = {};
    for (const [name, expr] of route.result) {
      const read = resultFieldValue(name, await expr.evaluate(body, { request: task.request }).catch(() => undefined));
      if (!read.ok) return this.fail(task, new GatewayError(3003, `The provider reported success but its answer ${read.reason}.`));
      result[name] = read.value;
    }
    // The price is fixed before the transition, so a re-run of finalize() settles the same amount.
    const charge = await this.d.accounting.price({ ...task, result }, route, body);
    const done = await this.d.store.transition(task.id, ACTIVE, { status: 'completed', result, charge, finalized: false, updated_at: isoNow(this.d.clock), poll_failures: 0 });
    if (!done) return; // someone else finished it first
    finished(done);
    await this.finalize(done);
  }

  private async fail(task: TaskRecord, err: GatewayError): Promise<void> {
    await this.failTask(task, err);
  }

  /** fail(), returning the failed task when this call failed it (undefined: it had already finished). */
  private async failTask(task: TaskRecord, err: GatewayError): Promise<TaskRecord | undefined> {
    const failed = await this.d.store.transition(task.id, ACTIVE, { status: 'failed', error: err.toTaskError(), finalized: false, updated_at: isoNow(this.d.clock) });
    if (!failed) return undefined;
    finished(failed, err.code);
    this.d.logger.info({ task_id: task.id, code: err.code }, 'task failed');
    await this.finalize(failed);
    return failed;
  }

  /**
   * What follows a terminal transition: settle or release, and the task.succeeded/failed
   * event. A process killed in between leaves `finalized: false`; the next job or sweep that
   * sees the task runs this again. Settling is once per task in the wallet, and the event id is
   * derived from the task, so webhooks fan it out once however often it is published.
   */
  private async finalize(task: TaskRecord): Promise<void> {
    if (task.status === 'completed') {
      await this.d.accounting.complete(task);
      await this.d.bus.emit(task.tenant_id, 'task.succeeded', eventData(task, taskResponse(task)), { id: eventId(task.id, 'task.succeeded'), traceparent: task.traceparent });
    } else {
      await this.d.accounting.abandon(task);
      await this.d.bus.emit(task.tenant_id, 'task.failed', eventData(task, { task_info: taskInfo(task) }), { id: eventId(task.id, 'task.failed'), traceparent: task.traceparent });
    }
    await this.d.store.transition(task.id, [task.status], { finalized: true });
  }

  /**
   * A task found finished: make sure its side effects happened. True when it is terminal. The
   * process that won the terminal transition finalizes at once; anyone else steps in only after
   * the sweep's grace period, when that process has evidently died.
   */
  private async settled(task: TaskRecord): Promise<boolean> {
    if (!TERMINAL.has(task.status)) return false;
    if (task.finalized === false && this.d.clock.now() - Date.parse(task.updated_at) >= this.d.sweepGraceMs) await this.finalize(task);
    return true;
  }

  /**
   * The safety sweep (worker role, every few seconds): re-drives active tasks whose timer was
   * lost — a process killed between storing a task and scheduling its jobs, or a poll chain
   * broken by a crash — and finishes terminal tasks whose side effects were cut short.
   */
  async sweep(): Promise<number> {
    const now = this.d.clock.now();
    // Holds whose task was never stored (a process killed in between), once per ten sweeps.
    let touched = this.sweeps++ % 10 === 0 ? await this.d.accounting.releaseOrphans(this.d.sweepGraceMs) : 0;
    // A page of unsettled tasks per sweep, cycling through all of them over successive sweeps.
    const page = await this.d.store.listUnsettled(SWEEP_PAGE, this.sweepAfter);
    this.sweepAfter = page.length === SWEEP_PAGE ? page.at(-1)!.id : undefined;
    for (const task of page) {
      const route = this.d.routes.get(task.route);
      if (await this.settled(task)) {
        touched++;
        continue;
      }
      if (!route) continue;
      const idle = now - (task.checked_at ?? Date.parse(task.created_at));
      if (now >= task.deadline_at) {
        await this.deadline(task.id);
        touched++;
      } else if (idle > this.d.sweepGraceMs + (task.upstream_task_id ? this.pollDelay(route, task) : route.poll.intervalMs)) {
        // No sign of life for a while: schedule the step it is waiting for. The job ids are
        // the ones the lost chain would have used, so a chain that was only slow merges with it.
        if (task.upstream_task_id) {
          const n = (task.poll_n ?? 0) + 1;
          await this.d.scheduler.schedule(JOBS.poll, `${task.id}.p${n}`, { id: task.id, n }, 0);
        } else {
          await this.d.scheduler.schedule(JOBS.submit, task.id, { id: task.id }, 0);
        }
        touched++;
      }
    }
    return touched;
  }

  private routeOf(task: TaskRecord): AsyncRoutePlan {
    const route = this.d.routes.get(task.route);
    if (!route) throw new GatewayError(4005, `Task ${task.id} belongs to route ${task.route}, which is not configured.`);
    return route;
  }

  /** Transport failures keep their own code (3001 unreachable, 3003 unparseable, 3004 timeout). */
  private asGatewayError(route: AsyncRoutePlan, err: unknown): GatewayError {
    if (err instanceof GatewayError) return err;
    if (err instanceof UpstreamFailure) return new GatewayError(err.code, err.message);
    this.d.logger.error({ err, route: route.key }, 'unexpected error talking to the upstream');
    return new GatewayError(4002, 'An internal operation failed while talking to the provider.');
  }
}

/** Counted once, by the process whose transition ended the task. */
function finished(task: TaskRecord, code?: number): void {
  tasksFinished.inc({ vendor: task.vendor, route: task.route, outcome: task.status, code: code === undefined ? '' : String(code) });
  taskDuration.observe({ vendor: task.vendor, outcome: task.status }, Math.max(0, Date.parse(task.updated_at) - Date.parse(task.created_at)) / 1000);
}

/** A provider's answer mapped to its service code, counted for the vendor and stage. */
async function mappedError(route: AsyncRoutePlan, stage: 'submit' | 'poll' | 'callback', facts: UpstreamErrorFacts): Promise<GatewayError> {
  return countedError(route, stage, await mapUpstreamError(route.errorRules, facts));
}

function countedError(route: AsyncRoutePlan, stage: 'submit' | 'poll' | 'callback', err: GatewayError): GatewayError {
  upstreamErrors.inc({ vendor: route.vendor, stage, code: String(err.code) });
  return err;
}

/**
 * The pool member that accepted the task (its polls and cancel go there); tasks accepted before
 * pools existed belong to the first member. Undefined: that member left the config.
 */
function memberOf(route: AsyncRoutePlan, task: TaskRecord): PoolMember | undefined {
  return task.upstream_member === undefined ? route.pool.first : route.pool.member(task.upstream_member);
}

/** An upstream path template (poll, cancel) with the upstream task id in it. */
function upstreamPath(template: string, upstreamTaskId: string): string {
  return template.replace('{upstream_task_id}', encodeURIComponent(upstreamTaskId));
}

/** Event ids of a task are derived from it, so a re-published event is recognised as the same one. */
export function eventId(taskId: string, type: string): string {
  return `evt_${hash('sha256', `${taskId}/${type}`, 'base64url').slice(0, 24)}`;
}

function eventData(task: TaskRecord, payload: Record<string, unknown>): Record<string, unknown> {
  return { vendor: task.vendor, model_name: task.model_name, payload };
}

async function readOptional(expr: { evaluate(input: unknown): Promise<unknown> } | undefined, body: unknown): Promise<string | undefined> {
  if (!expr || body === undefined) return undefined;
  const v = await expr.evaluate(body).catch(() => undefined);
  return v === undefined || v === null || v === '' ? undefined : String(v);
}

/** A copy of `body` with `value` at the dotted path `at` (objects created on the way). */
function withField(body: unknown, at: readonly string[], value: unknown): unknown {
  const root: Record<string, unknown> = body && typeof body === 'object' && !Array.isArray(body) ? { ...(body as Record<string, unknown>) } : {};
  let node = root;
  for (const [i, key] of at.entries()) {
    if (i === at.length - 1) node[key] = value;
    else {
      const child = node[key];
      node = node[key] = child && typeof child === 'object' && !Array.isArray(child) ? { ...(child as Record<string, unknown>) } : {};
    }
  }
  return root;
}
