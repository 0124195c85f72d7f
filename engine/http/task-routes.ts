// HTTP handlers compiled from descriptor route plans: POST creates a task, GET <path>/{task_id}
// reads one. Handlers only translate HTTP to the task lifecycle and back.
import type { Express, Request, Response } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { AsyncRoutePlan, StatusRoutePlan, VendorPlan } from '../descriptors/compile.ts';
import type { TaskLifecycle } from '../tasks/lifecycle.ts';
import type { TaskStore } from '../tasks/store.ts';
import { taskInfo, taskResponse, type TaskRecord } from '../tasks/task.ts';
import { isUuid } from '../util/ids.ts';
import type { TenantService } from '../tenants/service.ts';
import type { IdempotencyService } from '../idempotency/idempotency.ts';
import type { StoredResponse } from '../idempotency/store.ts';
import type { LimitsService } from '../limits/limits.ts';
import { requireApiKey } from './auth.ts';
import { jsonBody } from './body.ts';
import { readMediaBody } from '../media/body.ts';
import { mediaBlobs } from '../media/blobs.ts';
import { authOf, requireScope, type AuthContext } from './context.ts';
import { writeJson, writeTaskInfoValidationError } from './problem.ts';
import { traceOf } from './traceparent.ts';

export interface TaskRouteDeps {
  tenants: TenantService;
  lifecycle: TaskLifecycle;
  tasks: TaskStore;
  limits: LimitsService;
  idempotency: IdempotencyService;
}

/** Registers every async and status route; records path → methods (for 405 answers) in `methods`. */
export function mountTaskRoutes(app: Express, vendors: readonly VendorPlan[], deps: TaskRouteDeps, methods: Map<string, Set<string>>): void {
  const auth = requireApiKey(deps.tenants);
  const add = (path: string, method: string) => methods.set(path, (methods.get(path) ?? new Set()).add(method));

  for (const vendor of vendors) {
    for (const route of vendor.routes) {
      if (route.kind === 'async') {
        // Routes taking Base64 images read their body after auth, inside the handler (engine/media/body.ts).
        app.post(route.path, ...(route.mediaBody ? [] : [jsonBody(route.maxBodyBytes)]), auth, createHandler(route, deps));
        add(route.path, 'POST');
        app.get(`${route.path}/:task_id`, auth, readHandler(route, new Set([route.key]), deps));
        add(`${route.path}/:task_id`, 'GET');
      } else if (route.kind === 'status') {
        app.get(`${route.path}/:task_id`, auth, readHandler(route, route.tasksOf, deps));
        add(`${route.path}/:task_id`, 'GET');
      }
    }
  }
}

function createHandler(route: AsyncRoutePlan, deps: TaskRouteDeps) {
  return async (req: Request, res: Response): Promise<void> => {
    res.locals.routeKey = route.key;
    const auth = authOf(res);
    requireScope(auth, route.vendor, 'create');
    await deps.limits.checkRequest({ tenantId: auth.tenantId, keyId: auth.keyId, model: route.key });
    let response: StoredResponse;
    let taskHoldsMedia = false;
    try {
      if (route.mediaBody) await readMediaBody(req, res, route.maxBodyBytes, route.media);
      response = await runCreate(route, deps, auth, req.body, req.get('idempotency-key'), traceOf(res).traceparent, () => (taskHoldsMedia = true));
    } catch (err) {
      // Routes like video model A answer a 400 with a task_info-shaped body instead of a problem.
      if (err instanceof GatewayError && route.validationShape === 'task_info' && err.status === 400) return writeTaskInfoValidationError(res, err, traceOf(res).traceId);
      throw err;
    } finally {
      // Media blobs this request parsed go to its task (released after the upstream submit), else now.
      if (!taskHoldsMedia && res.locals.mediaTokens) mediaBlobs.release(res.locals.mediaTokens as string[]);
    }
    writeJson(res, response.status, response.body, response.headers);
  };
}

/**
 * A create after authentication and limits, for the express handler and the fast lane alike:
 * a retried create with the same Idempotency-Key replays the first answer (one task, one hold);
 * otherwise validate, then hand the task to the lifecycle.
 */
export async function runCreate(
  route: AsyncRoutePlan,
  deps: TaskRouteDeps,
  auth: AuthContext,
  body: unknown,
  idempotencyKey: string | undefined,
  traceparent: string,
  onCreated?: () => void,
): Promise<StoredResponse> {
  let task: TaskRecord | undefined;
  const { response } = await deps.idempotency.run(
    { tenantId: auth.tenantId, key: idempotencyKey, method: 'POST', path: route.path, body },
    async () => {
      const request = await route.validate(body);
      task = await deps.lifecycle.create(route, auth.tenantId, request, traceparent);
      return { status: route.successStatus, headers: {}, body: { task_info: taskInfo(task) } };
    },
    // The task was created but its answer could not be recorded (the store went away): the
    // client gets an error, so the task must not run.
    () => task && deps.lifecycle.withdraw(task),
  );
  if (task) onCreated?.();
  return response;
}

function readHandler(route: AsyncRoutePlan | StatusRoutePlan, routes: ReadonlySet<string>, deps: TaskRouteDeps) {
  return async (req: Request, res: Response): Promise<void> => {
    res.locals.routeKey = route.key;
    const auth = authOf(res);
    requireScope(auth, route.vendor, 'read');
    await deps.limits.checkRequest({ tenantId: auth.tenantId, keyId: auth.keyId });
    const id = String(req.params.task_id);
    if (!isUuid(id)) {
      throw new GatewayError(2001, `task_id must be a UUID; got ${JSON.stringify(id.slice(0, 64))}.`, { errors: [{ pointer: '/task_id', detail: 'must be a UUID' }] });
    }
    const task = await deps.tasks.get(id);
    // Another tenant's task, or one created on another route, does not exist for this caller.
    if (!task || task.tenant_id !== auth.tenantId || !routes.has(task.route)) throw new GatewayError(2005, `No task ${id}.`);
    res.status(200).json(taskResponse(task));
  };
}
