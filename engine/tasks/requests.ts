// What a tenant asks of the async routes, after the HTTP edge has read the request and
// authenticated the caller: create a task (idempotently), read one back, cancel one. The HTTP
// handlers (engine/http/data-plane.ts) only translate between these and the wire.
import { ATTR_DB_OPERATION_NAME } from '../tracing/attributes.ts';
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import type { IdempotencyService } from '../idempotency/service.ts';
import type { StoredResponse } from '../idempotency/store.ts';
import type { AuthContext } from '../tenants/auth-context.ts';
import { traced, tracing } from '../tracing/tracing.ts';
import { isUuid, newUuid } from '../util/ids.ts';
import { HoldClosedError } from './accounting.ts';
import type { TaskLifecycle } from './lifecycle.ts';
import { TaskExistsError, type TaskStore } from './store.ts';
import { taskInfo, taskResponse, type TaskRecord } from './task.ts';
import { TERMINAL } from '../vocabulary/task-status.ts';

const STORE_GET = { [ATTR_DB_OPERATION_NAME]: 'tasks.get' };

export interface TaskRequestDeps {
  lifecycle: TaskLifecycle;
  tasks: TaskStore;
  idempotency: IdempotencyService;
}

/**
 * A create after authentication and limits: a retried create with the same Idempotency-Key
 * replays the first answer (one task, one hold); otherwise validate, then hand the task to the
 * lifecycle under the key's task id. `onCreated` runs when this call created a task (it then
 * owns the request's media).
 */
export async function createTask(
  route: AsyncRoutePlan,
  deps: TaskRequestDeps,
  auth: AuthContext,
  body: unknown,
  idempotencyKey: string | undefined,
  traceparent: string,
  onCreated?: () => void,
): Promise<StoredResponse> {
  let task: TaskRecord | undefined;
  const { response } = await deps.idempotency.run(
    { tenantId: auth.tenantId, key: idempotencyKey, method: 'POST', path: route.path, body },
    async (claim) => {
      const request = await (tracing ? traced('validation', () => route.validate(body)) : route.validate(body));
      // An earlier attempt died holding the key: the task it created, if any, is the answer.
      const earlier = claim.recovered ? await deps.tasks.get(claim.taskId) : undefined;
      if (earlier) return adopted(route, deps, earlier);
      try {
        task = await deps.lifecycle.create(route, auth.tenantId, request, traceparent, { id: claim.taskId, check: () => claim.check() });
      } catch (err) {
        // That attempt stored the task meanwhile: it is the answer (its hold is the one taken).
        if (err instanceof TaskExistsError) return adopted(route, deps, (await deps.tasks.get(claim.taskId))!);
        if (!(err instanceof HoldClosedError)) throw err;
        // That attempt's create was undone (its hold released): this one runs under a new id.
        await claim.relink(newUuid());
        task = await deps.lifecycle.create(route, auth.tenantId, request, traceparent, { id: claim.taskId, check: () => claim.check() });
      }
      return created(route, task);
    },
    // The task was created but its answer could not be recorded (the store went away): the
    // client gets an error, so the task must not run.
    () => task && deps.lifecycle.withdraw(task),
  );
  if (task) onCreated?.();
  return response;
}

/** The answer for a task an earlier attempt of the key created (submitted now if it never was). */
function adopted(route: AsyncRoutePlan, deps: TaskRequestDeps, task: TaskRecord): StoredResponse {
  deps.lifecycle.adopt(task);
  return created(route, task);
}

function created(route: AsyncRoutePlan, task: TaskRecord): StoredResponse {
  return { status: route.successStatus, headers: {}, body: { task_info: taskInfo(task) } };
}

/**
 * The answer of GET <path>/{task_id}: the caller's own task, created on one of `routes`.
 * Another tenant's task, or one created on another route, does not exist for this caller.
 */
export async function readTask(deps: TaskRequestDeps, auth: AuthContext, routes: ReadonlySet<string>, id: string): Promise<unknown> {
  return taskResponse(await ownTask(deps, auth, routes, id));
}

/**
 * The answer of POST <path>/{task_id}/cancel: the task as GET would now answer it (failed,
 * 4009). A task that has already finished — completed, failed, or cancelled by an earlier call —
 * is a 409 naming its state, with its task_info: a cancel changes a task once, and a retried
 * cancel whose first answer was lost still learns, from that task_info, that it was cancelled.
 * Which tasks a caller may cancel is the same as which it may read (else 404 / 2005).
 */
export async function cancelTask(deps: TaskRequestDeps, auth: AuthContext, routes: ReadonlySet<string>, id: string): Promise<unknown> {
  let task = await ownTask(deps, auth, routes, id);
  if (!TERMINAL.has(task.status)) {
    const outcome = await deps.lifecycle.cancel(task);
    if (outcome.cancelled) return taskResponse(outcome.task);
    task = outcome.task; // it finished (completion, failure, another cancel) while we asked
  }
  const how = task.error ? ` (${task.error.code} ${task.error.title})` : '';
  throw new GatewayError('conflict', `Task ${id} is already ${task.status}${how}; only a pending or processing task can be cancelled.`, {
    extensions: { task_info: taskInfo(task) },
  });
}

/** The caller's own task, created on one of `routes`; anything else does not exist for it. */
async function ownTask(deps: TaskRequestDeps, auth: AuthContext, routes: ReadonlySet<string>, id: string): Promise<TaskRecord> {
  if (!isUuid(id)) {
    throw new GatewayError('parameterValidationFailed', `task_id must be a UUID; got ${JSON.stringify(id.slice(0, 64))}.`, { errors: [{ pointer: '/task_id', detail: 'must be a UUID' }] });
  }
  const task = await (tracing ? traced('store tasks.get', () => deps.tasks.get(id), STORE_GET) : deps.tasks.get(id));
  if (!task || task.tenant_id !== auth.tenantId || !routes.has(task.route)) throw new GatewayError('resourceNotFound', `No task ${id}.`);
  return task;
}
