// Taking a task in and handing it to the provider:
//   create: reserve credits → store task_info (pending) → task.created → 202, then submit
//   submit: build the upstream body (descriptor mapping) → POST through the route's pool →
//           remember the upstream id and the member that took it → first poll
// A create refused after it may have written something is withdrawn (now, or once the store
// answers again); a submission lost with its process is re-driven by the sweep.
import { randomBytes } from 'node:crypto';
import { ATTR_DB_OPERATION_NAME } from '../tracing/attributes.ts';
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { GatewayError, isDependencyUnavailable } from '../errors/gateway-error.ts';
import { TASK_EVENTS } from '../events/types.ts';
import { MediaGoneError, mediaBlobs, tokensIn } from '../media/blobs.ts';
import { adoptMedia, forgetSharedMedia, shareMedia } from '../media/shared.ts';
import { submissionsUnknown, tasksCreated } from '../metrics/metrics.ts';
import { traced, tracing } from '../tracing/tracing.ts';
import { mapUpstreamError, type UpstreamErrorFacts } from '../upstream/failure.ts';
import type { UpstreamResponse } from '../upstream/client.ts';
import type { PoolMember } from '../upstream/pool.ts';
import { isoAt } from '../util/clock.ts';
import { newUuid } from '../util/ids.ts';
import { RetryUntilDone } from '../util/retry-until-done.ts';
import type { TaskCancellation } from './cancel.ts';
import { eventData, eventId, type TaskEnding } from './ending.ts';
import { JOBS, type LifecycleDeps, type LifecycleState } from './lifecycle-deps.ts';
import { pollDelay } from './poll.ts';
import { asGatewayError, countedError, DescriptorDefect, descriptorExpression, mappedError, readOptional, reportDefect, routeOf } from './provider.ts';
import { TaskExistsError } from './store.ts';
import { taskInfo, type TaskRecord } from './task.ts';
import { ACTIVE } from '../vocabulary/task-status.ts';
import { throttled } from '../log/throttle.ts';
import { checkTaskPaths, submitPathWithCallback, submitUrls } from './upstream-answers.ts';

const STORE_CREATE = { [ATTR_DB_OPERATION_NAME]: 'tasks.create' };

/** How a create is made under an Idempotency-Key claim (engine/idempotency/lease.ts). */
export interface CreateOptions {
  /** The task's id (the key's): default a new one. */
  id?: string;
  /** Throws when the claim may be lost; called before each write. */
  check?: () => void;
}

export class TaskSubmission {
  private readonly d: LifecycleDeps;
  private readonly state: LifecycleState;
  private readonly ending: TaskEnding;
  private readonly cancellation: TaskCancellation;
  /** Creates refused after they may have written something: undone once the store answers. */
  private readonly withdrawals: RetryUntilDone;
  /** Submissions running in this process, by task id (any caller: create, job, sweep); awaited, within the grace, at shutdown. */
  private readonly submissions = new Map<string, Promise<void>>();

  constructor(deps: LifecycleDeps, state: LifecycleState, ending: TaskEnding, cancellation: TaskCancellation) {
    this.d = deps;
    this.state = state;
    this.ending = ending;
    this.cancellation = cancellation;
    this.withdrawals = new RetryUntilDone({
      onError: (err, key, dropped) => {
        if (dropped) throttled(this.d.logger).error({ err, task_id: key }, 'a refused create could not be withdrawn (its hold is released by the sweep)');
        else throttled(this.d.logger).warn({ err, steps: key }, 'refused creates wait for the store to be withdrawn');
      },
    });
  }

  async create(route: AsyncRoutePlan, tenantId: string, request: Record<string, unknown>, traceparent?: string, opts: CreateOptions = {}): Promise<TaskRecord> {
    // Shed before anything is written: past the bound, every task taken in would only wait here
    // for its submission, holding memory and lengthening every other task's wait.
    if (this.state.calls >= this.d.maxCallsRunning) throw backlogFull(this.state.calls);
    const task = this.newTask(route, tenantId, request, traceparent, opts.id);
    opts.check?.();
    try {
      task.hold = await this.d.accounting.reserve(task, route);
    } catch (err) {
      // A refusal (1003, 1005) undoes its own steps; a store that went away may have kept some.
      if (isDependencyUnavailable(err)) this.withdraw(task);
      throw err;
    }
    // A claim lost here leaves the hold to the attempt that took the key over (it creates this id).
    opts.check?.();
    try {
      if (this.d.sharedMedia) await shareMedia(this.d.sharedMedia, tokensIn(request), route.maxExecutionMs + this.d.sweepGraceMs);
      await (tracing ? traced('store tasks.create', () => this.d.store.create(task), STORE_CREATE) : this.d.store.create(task));
      await this.d.bus.emit(tenantId, TASK_EVENTS.created, eventData(task, { task_info: taskInfo(task) }), { id: eventId(task.id, TASK_EVENTS.created), traceparent: task.traceparent });
      tasksCreated.inc({ vendor: route.vendor, route: route.key });
    } catch (err) {
      // Another attempt of the same Idempotency-Key stored this id first: the task is that one's
      // (the caller adopts it), and so is its hold.
      if (err instanceof TaskExistsError) throw err;
      // Refused, so nothing of it may stay: the task, if it was written before the failure (or
      // its reply lost), and the hold go, now or once the store answers again.
      this.withdraw(task);
      throw isDependencyUnavailable(err) ? err : new GatewayError('internalOperationFailed', 'The task could not be stored.', { cause: err });
    }
    // Submitted at once by the process that accepted the task (after the 202 is on its way), not
    // through a job: one job less per create. A submission lost with its process is re-driven by
    // the sweep once the task has shown no sign of life for the grace period.
    // The record just stored is the one to submit: no read back.
    this.submitSoon(task.id, task);
    return task;
  }

  /**
   * A task an Idempotency-Key retry found, created by an attempt whose process died: submitted
   * now if it never was, rather than after the sweep's grace period. One that was sent is left
   * to the sweep (its outcome is unknown: submitNow decides).
   */
  adopt(task: TaskRecord): void {
    if (task.status === 'pending' && !task.upstream_task_id && task.submit_sent_at === undefined) this.submitSoon(task.id);
  }

  /** Submit after the current answer is on its way (not awaited); a failure is the sweep's to re-drive. */
  private submitSoon(id: string, stored?: TaskRecord): void {
    // Counted in the backlog from now (submit() counts it again before this count is dropped).
    this.state.calls++;
    setImmediate(() => {
      this.submit(id, stored).catch((err) => throttled(this.d.logger)[this.state.stopping || isDependencyUnavailable(err) ? 'warn' : 'error']({ err, task_id: id }, 'task submission failed; the sweep re-drives it'));
      this.state.calls--;
    });
  }

  private newTask(route: AsyncRoutePlan, tenantId: string, request: Record<string, unknown>, traceparent?: string, id = newUuid()): TaskRecord {
    const now = this.d.clock.now();
    const at = isoAt(now);
    const task: TaskRecord = {
      id,
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
    // The secret of its result-file URLs, fixed now so every process that copies them makes the same URLs.
    if (this.d.results) task.results_token = randomBytes(24).toString('base64url');
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

  /** Resolves once no submission is running in this process. */
  async idle(): Promise<void> {
    while (this.submissions.size) await Promise.allSettled([...this.submissions.values()]);
  }

  /** A last try at the withdrawals still waiting (at shutdown), within `timeoutMs`. */
  flushWithdrawals(timeoutMs: number): Promise<void> {
    return this.withdrawals.flush(timeoutMs);
  }

  /** `stored`: the record as this process has just stored it (a create), else it is read. */
  async submit(id: string, stored?: TaskRecord): Promise<void> {
    // A re-drive (the sweep) of a submission this process is still making (a slow provider, or
    // a failover through the pool's members) joins it instead of sending the task again.
    const running = this.submissions.get(id);
    if (running) return running;
    const run = this.submitNow(id, stored).finally(() => {
      this.submissions.delete(id);
      this.state.calls--;
    });
    this.submissions.set(id, run);
    this.state.calls++;
    return run;
  }

  private async submitNow(id: string, stored?: TaskRecord): Promise<void> {
    if (this.state.stopping || this.withdrawals.has(id)) return;
    const task = stored ?? (await this.d.store.get(id));
    if (!task || (await this.ending.settled(task)) || task.upstream_task_id) return;
    const route = routeOf(this.d.routes, task);
    if (task.submit_sent_at !== undefined && !(await this.outcomeUnknown(task, route))) return;
    let sent: { res: UpstreamResponse; member: PoolMember } | undefined;
    try {
      sent = await this.send(task, route);
      if (!sent) return; // the task ended before it was sent
    } catch (err) {
      // Cut short by a shutdown, or the store went away: not the provider's answer. The task
      // stays pending and is re-driven (the job's retry, or the sweep).
      if (this.state.stopping || isDependencyUnavailable(err)) throw err;
      if (err instanceof MediaGoneError) return this.ending.fail(task, new GatewayError('internalOperationFailed', `The task could not be submitted: ${err.message}.`));
      if (err instanceof DescriptorDefect) reportDefect(this.d.logger, route, err, task.id);
      return this.ending.fail(task, asGatewayError(this.d.logger, route, err));
    }
    const upstreamId = await this.acceptedId(task, route, sent.res);
    if (upstreamId === undefined) return;
    const { member } = sent;
    const refs = await this.taskRefs(task, route, upstreamId, sent.res.body, member);
    if (!refs) return;
    const updated = await this.d.store.update(id, ACTIVE, { ...refs, upstream_member: member.id, checked_at: this.d.clock.now() });
    if (updated) await this.d.scheduler.schedule(JOBS.poll, `${id}.p1`, { id, n: 1 }, pollDelay(route, task, this.d.clock.now()));
    // The task ended while it was being submitted (e.g. the safety net failed it): the provider
    // has just started work nobody will collect, so it is asked to stop it.
    // (A provider's push may also have completed it before this answer was recorded: nothing to stop then.)
    else if ((await this.d.store.get(id))?.status !== 'completed') void this.cancellation.cancelUpstream({ ...task, ...refs, upstream_member: member.id }, 'ended during submission');
  }

  /**
   * What later calls about the task are built from: its id and the URLs the answer names, their
   * paths built once now. An answer that would steer a call off the member's base URL fails the
   * task (3003) and nothing is ever sent there; undefined then.
   */
  private async taskRefs(task: TaskRecord, route: AsyncRoutePlan, upstreamId: string, answer: unknown, member: PoolMember): Promise<Pick<TaskRecord, 'upstream_task_id' | 'upstream_urls'> | undefined> {
    const refs: Pick<TaskRecord, 'upstream_task_id' | 'upstream_urls'> = { upstream_task_id: upstreamId };
    try {
      refs.upstream_urls = await submitUrls(route, answer, member.client.baseUrl);
      checkTaskPaths(route, refs);
      return refs;
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      if (err instanceof DescriptorDefect) reportDefect(this.d.logger, route, err, task.id);
      else this.d.logger.warn({ task_id: task.id, vendor: route.vendor, upstream_task_id: upstreamId, reason: err.detail }, 'the submit answer names a path the gateway refuses to call');
      await this.ending.fail(task, err);
      return undefined;
    }
  }

  /**
   * A task sent before whose answer was never recorded (its process died, or the store went away
   * meanwhile): the provider may have taken it. It is sent again (true) only when the route
   * declares an idempotency header the provider honours — the same key, the task id, makes the
   * second submission the first one. Otherwise it fails with 4010 and its hold is released
   * (false): a second task at a provider that cannot dedupe would be billed to the operator twice.
   */
  private async outcomeUnknown(task: TaskRecord, route: AsyncRoutePlan): Promise<boolean> {
    const redrive = route.submit.idempotencyHeader !== undefined;
    submissionsUnknown.inc({ vendor: route.vendor, route: route.key, action: redrive ? 'redriven' : 'failed' });
    const log = { task_id: task.id, vendor: route.vendor, route: route.key, sent_at: isoAt(task.submit_sent_at!) };
    if (redrive) {
      throttled(this.d.logger).warn(log, `submission outcome unknown: sent again with the same ${route.submit.idempotencyHeader}`);
      return true;
    }
    throttled(this.d.logger).error(log, 'submission outcome unknown: the task fails with 4010 (the provider may have taken it)');
    await this.ending.fail(task, new GatewayError('submissionOutcomeUnknown', 'The task was sent to the provider, but the gateway stopped before it recorded the answer, and the provider cannot recognise a second submission: the task was not sent again, and it is not billed.'));
    return false;
  }

  /**
   * The submit request, through the route's pool, with the task's media spliced back in; the
   * time it is sent is recorded first (undefined: the task ended before, nothing was sent).
   */
  private async send(task: TaskRecord, route: AsyncRoutePlan): Promise<{ res: UpstreamResponse; member: PoolMember } | undefined> {
    const s = route.submit;
    const media = tokensIn(task.request);
    let sent: { res: UpstreamResponse; member: PoolMember };
    try {
      // Another process (or this one before a restart) may have received the upload.
      if (media.length && this.d.sharedMedia) media.push(...(await adoptMedia(this.d.sharedMedia, media)));
      let body = await descriptorExpression(route, 'submit.body', () => s.body.evaluate(task.request));
      const callbackUrl = route.callback && task.callback_token ? `${this.d.publicBaseUrl}/callbacks/${task.id}/${task.callback_token}` : undefined;
      if (callbackUrl && route.callback?.urlField) body = withField(body, route.callback.urlField, callbackUrl);
      // Large media the request holds as blobs are spliced back into the serialised body.
      const rawBody = media.length ? mediaBlobs.encodeJson(body) : undefined;
      // Every member tried gets the same key, so a provider that did take a "failed" try keeps one task.
      const headers = s.idempotencyHeader ? { ...s.headers, [s.idempotencyHeader]: task.id } : s.headers;
      // From here the provider may take the task: a process that dies before recording its
      // answer leaves this mark for the next attempt to see (outcomeUnknown).
      const now = this.d.clock.now();
      if (!(await this.d.store.update(task.id, ['pending'], { submit_sent_at: now, checked_at: now }))) return undefined;
      // A try the provider did not accept goes to the next member within the task's deadline:
      // one hold for the task, taken at create, whatever the number of tries.
      sent = await route.pool.call({ method: s.method, path: submitPathWithCallback(route, callbackUrl), body, rawBody, headers, traceparent: task.traceparent, stage: 'submit' }, {
        until: task.deadline_at,
        onFailover: (from, reason) => this.d.logger.warn({ task_id: task.id, vendor: route.vendor, member: from.id, reason }, 'submission failed over to the next pool member'),
      });
    } finally {
      if (media.length) mediaBlobs.release(media);
    }
    if (media.length && this.d.sharedMedia) await forgetSharedMedia(this.d.sharedMedia, media).catch(() => undefined);
    return sent;
  }

  /** The upstream task id of an accepted submission; undefined when the answer failed the task. */
  private async acceptedId(task: TaskRecord, route: AsyncRoutePlan, res: UpstreamResponse): Promise<string | undefined> {
    try {
      return await this.readAcceptance(task, route, res);
    } catch (err) {
      // The descriptor could not read the answer (4011): the task fails, not blamed on the provider.
      if (!(err instanceof DescriptorDefect)) throw err;
      reportDefect(this.d.logger, route, err, task.id);
      await this.ending.fail(task, err);
      return undefined;
    }
  }

  private async readAcceptance(task: TaskRecord, route: AsyncRoutePlan, res: UpstreamResponse): Promise<string | undefined> {
    const s = route.submit;
    const log = this.d.logger;
    if (res.status < 200 || res.status > 299) {
      const message = await readOptional(log, route, 'submit.error_message', s.errorMessage, res.body);
      await this.ending.fail(task, await mappedError(route, 'submit', { stage: 'submit', http_status: res.status, body: res.body, message }));
      return undefined;
    }
    if (s.accept && !(await descriptorExpression(route, 'submit.accept', () => s.accept!.evaluate(res.body)))) {
      // A 2xx that says "not accepted" inside: the provider refused this request (3002 unless mapped).
      const message = await readOptional(log, route, 'submit.error_message', s.errorMessage, res.body);
      const facts: UpstreamErrorFacts = { stage: 'submit', http_status: res.status, body: res.body, message };
      const err = await mapUpstreamError(route.errorRules, facts);
      await this.ending.fail(task, countedError(route, 'submit', err.errorName === 'upstreamResponseError' ? new GatewayError('upstreamRequestFailed', err.detail) : err));
      return undefined;
    }
    const upstreamId = await descriptorExpression(route, 'submit.task_id', () => s.taskId.evaluate(res.body));
    if (typeof upstreamId !== 'string' && typeof upstreamId !== 'number') {
      await this.ending.fail(task, new GatewayError('upstreamResponseError', 'The provider accepted the task but its answer carries no task id.'));
      return undefined;
    }
    return String(upstreamId);
  }
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

/** Seconds a create refused for the backlog is told to wait: the backlog drains within about that (Retry-After). */
const BACKLOG_RETRY_AFTER_S = 1;

/** 503 / 4001: this process has more submissions and polls running than server.max_task_calls_running. */
function backlogFull(calls: number): GatewayError {
  return new GatewayError('temporarilyUnavailable', `The gateway has ${calls} task submissions and polls waiting to be sent; nothing was created or charged. Retry after the time in Retry-After.`, {
    headers: { 'Retry-After': String(BACKLOG_RETRY_AFTER_S) },
  });
}
