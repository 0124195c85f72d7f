// The data plane: every descriptor route (async create, task GET and cancel, status GET and
// cancel, sync and stream proxy routes with their aliases, model lists) in one find-my-way table
// compiled once at start.
// Its handlers are the only implementation of those routes; they translate HTTP to the services
// (engine/tasks/requests.ts, engine/proxy/requests.ts through ./proxy-handler.ts) and back, and
// hold no descriptor work. Every route is admitted the one way (engine/tenants/admission.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AsyncRoutePlan, StatusRoutePlan, VendorPlan } from '../descriptors/compile.ts';
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { mediaBlobs } from '../media/blobs.ts';
import type { Admission } from '../tenants/admission.ts';
import type { AuthContext } from '../tenants/auth-context.ts';
import { cancelTask, createTask, readTask, type TaskRequestDeps } from '../tasks/requests.ts';
import { malformedPath, writeJson } from './answer.ts';
import type { ProxyHandler } from './proxy-handler.ts';
import type { BodyPolicy } from './request-body.ts';
import { RouteTable } from './route-table.ts';
import type { Visit } from './visit.ts';
import type { ResultService } from '../results/service.ts';
import { RESULT_FILE_PATH, serveResultFile } from './result-files.ts';

export interface DataPlaneDeps extends TaskRequestDeps {
  admission: Admission;
  proxy: ProxyHandler;
  /** The result store, when results.store is not off: its files are served under /results/. */
  results?: ResultService;
}

/** What a table entry serves: the handler, the compiled route plan and the body the door reads for it. */
interface CreateEntry { serve: typeof create; route: AsyncRoutePlan; body: BodyPolicy }
interface ReadEntry { serve: typeof read; route: AsyncRoutePlan | StatusRoutePlan; tasksOf: ReadonlySet<string>; body?: undefined }
/** POST <task path>/cancel: the request is the path alone, so no body policy (one sent is drained unread). */
interface CancelEntry { serve: typeof cancel; route: AsyncRoutePlan | StatusRoutePlan; tasksOf: ReadonlySet<string>; body?: undefined; action: 'cancel' }
interface ProxyEntry { serve: typeof proxied; route: ProxyRoutePlan; body?: BodyPolicy }
/** POST /callbacks/{task_id}/{token}: a provider's push (no API key: the token is the credential). */
interface CallbackEntry { serve: typeof callback; route: { kind: 'callback'; key: string; path: string }; body: BodyPolicy }
/** GET/HEAD /results/{task_id}/{token}/{name}: a copied result file (no API key: the token is the credential). */
interface ResultEntry { serve: typeof resultFile; route: { kind: 'result'; key: string; path: string }; body?: undefined }
type Entry = CreateEntry | ReadEntry | CancelEntry | ProxyEntry | CallbackEntry | ResultEntry;
type Params = Record<string, string | undefined>;

const CALLBACK_BODY_LIMIT = 1024 * 1024;

export type Match =
  | { entry: Entry; params: Params }
  | { error: GatewayError };

export class DataPlane {
  private readonly table = new RouteTable<Entry>();
  readonly deps: DataPlaneDeps;

  constructor(vendors: readonly VendorPlan[], deps: DataPlaneDeps) {
    this.deps = deps;
    for (const vendor of vendors) {
      for (const route of vendor.routes) {
        if (route.kind === 'async') {
          const limit = route.maxBodyBytes;
          const body: BodyPolicy = route.mediaBody ? { kind: 'media', limit, rules: route.media } : { kind: 'json', limit };
          this.table.on('POST', route.path, { serve: create, route, body });
          const tasksOf = new Set([route.key]);
          this.table.on('GET', `${route.path}/:task_id`, { serve: read, route, tasksOf });
          this.table.on('POST', `${route.path}/:task_id/cancel`, { serve: cancel, route, tasksOf, action: 'cancel' });
        } else if (route.kind === 'status') {
          // Wherever a GET reads a task, the same path + /cancel cancels it: a client that only
          // knows the status route (model G's) needs no other path.
          this.table.on('GET', `${route.path}/:task_id`, { serve: read, route, tasksOf: route.tasksOf });
          this.table.on('POST', `${route.path}/:task_id/cancel`, { serve: cancel, route, tasksOf: route.tasksOf, action: 'cancel' });
        }
      }
    }
    // Push callbacks, when server.public_base_url is set and a route declares upstream.callback.
    if (deps.lifecycle.callbacksEnabled) this.table.on('POST', '/callbacks/:task_id/:token', { serve: callback, route: { kind: 'callback', key: 'callbacks', path: '/callbacks/:task_id/:token' }, body: { kind: 'json', limit: CALLBACK_BODY_LIMIT } });
    if (deps.results) this.table.on('GET', RESULT_FILE_PATH, { serve: resultFile, route: { kind: 'result', key: 'results', path: RESULT_FILE_PATH } });
    for (const { method, path, route } of deps.proxy.service.paths()) {
      this.table.on(method, path, { serve: proxied, route, body: route.list ? undefined : { kind: 'json', limit: route.maxBodyBytes } });
    }
  }

  /**
   * The route of `method path`; a 405 (with Allow) when the path is ours under other methods, a
   * 400 when it is not valid percent-encoding; undefined when the path is not ours at all (the
   * control plane's table answers it).
   */
  match(method: string, path: string): Match | undefined {
    const found = this.table.find(method, path);
    if ('store' in found) return { entry: found.store, params: found.params };
    // Not valid percent-encoding: a 400 when the path is one of ours once every % is taken
    // literally (a task id like %E0%A4%A), else not ours.
    if ('badUrl' in found) return this.table.has(path.replaceAll('%', '%25')) ? { error: malformedPath() } : undefined;
    return found.error.status === 405 ? found : undefined;
  }

  serve(req: IncomingMessage, res: ServerResponse, visit: Visit, entry: Entry, params: Params): Promise<void> {
    // Each entry's own handler, with the entry it was registered with.
    return entry.serve(this.deps, req, res, visit, entry as never, params);
  }
}


/** POST <path>: create a task. JSON bodies are read before authentication, media bodies after (./request-body.ts). */
async function create(deps: DataPlaneDeps, req: IncomingMessage, res: ServerResponse, visit: Visit, entry: CreateEntry): Promise<void> {
  const route = entry.route;
  visit.route = route.key;
  let body = route.mediaBody ? undefined : (await visit.readBody()).json;
  const auth = await admit(deps, req, visit, route.vendor, 'create', route.key);
  // From here, a refusal of a route like video model A answers with a task_info-shaped body.
  visit.taskInfoErrors = route.validationShape === 'task_info';
  let tokens: string[] | undefined;
  let taskHoldsMedia = false;
  try {
    if (route.mediaBody) {
      const parsed = await visit.readBody();
      body = parsed.json;
      tokens = parsed.tokens;
    }
    const key = req.headers['idempotency-key'];
    const response = await createTask(route, deps, auth, body, Array.isArray(key) ? key.join(', ') : key, visit.trace.traceparent, () => (taskHoldsMedia = true));
    writeJson(res, response.status, response.body, response.headers);
  } finally {
    // Media blobs this request parsed go to its task (released after the upstream submit), else now.
    if (!taskHoldsMedia && tokens) mediaBlobs.release(tokens);
  }
}

/** Admission (engine/tenants/admission.ts); `model` counts a create against the route's model limit. */
function admit(deps: DataPlaneDeps, req: IncomingMessage, visit: Visit, vendor: string, action: 'create' | 'read', model?: string): Promise<AuthContext> {
  return deps.admission.admit(req.headers.authorization, vendor, action, visit, { model });
}

/** GET <path>/{task_id}: one of the caller's tasks. */
async function read(deps: DataPlaneDeps, req: IncomingMessage, res: ServerResponse, visit: Visit, entry: ReadEntry, params: Params): Promise<void> {
  visit.route = entry.route.key;
  const auth = await admit(deps, req, visit, entry.route.vendor, 'read');
  writeJson(res, 200, await readTask(deps, auth, entry.tasksOf, params.task_id ?? ''));
}

/**
 * POST <path>/{task_id}/cancel: cancel one of the caller's tasks. A create scope, not a read one:
 * it changes what the key's owner is billed, as creating does.
 */
async function cancel(deps: DataPlaneDeps, req: IncomingMessage, res: ServerResponse, visit: Visit, entry: CancelEntry, params: Params): Promise<void> {
  visit.route = entry.route.key;
  const auth = await admit(deps, req, visit, entry.route.vendor, 'create');
  await visit.readBody(); // the cancel takes no body: one sent is drained unread
  writeJson(res, 200, await cancelTask(deps, auth, entry.tasksOf, params.task_id ?? ''));
}

/**
 * POST /callbacks/{task_id}/{token}: a provider pushes a task's outcome. Unknown task and wrong
 * token answer the same 404; a task already finished (a replay, or the poll won) answers 200
 * {"status":"ignored"} and nothing changes, so a provider that retries is harmless; a valid push
 * moves the task at once (the poll's code path and compare-and-set): 200 {"status":"accepted"}.
 */
async function callback(deps: DataPlaneDeps, _req: IncomingMessage, res: ServerResponse, visit: Visit, entry: CallbackEntry, params: Params): Promise<void> {
  visit.route = entry.route.key;
  const body = (await visit.readBody()).json;
  const outcome = await deps.lifecycle.acceptCallback(params.task_id ?? '', params.token ?? '', body);
  if (outcome === 'not_found') throw new GatewayError('resourceNotFound', 'No such callback.');
  writeJson(res, 200, { status: outcome });
}

/** GET/HEAD /results/{task_id}/{token}/{name}: engine/http/result-files.ts. */
function resultFile(deps: DataPlaneDeps, req: IncomingMessage, res: ServerResponse, visit: Visit, entry: ResultEntry, params: Params): Promise<void> {
  visit.route = entry.route.key;
  req.resume(); // a GET has no body; one sent is drained unread
  return serveResultFile(deps.results!, req, res, params);
}

/** Sync and stream proxy routes and model lists: the exchange answers and logs them itself. */
function proxied(deps: DataPlaneDeps, req: IncomingMessage, res: ServerResponse, visit: Visit, entry: ProxyEntry): Promise<void> {
  visit.logged = true;
  return deps.proxy.handle(req, res, entry.route, visit);
}
