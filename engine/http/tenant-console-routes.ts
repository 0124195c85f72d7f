// The tenant self-service API the console calls (docs/console-api.md), with an API key or a
// console session (the `auth` handler). Every failure is thrown as a GatewayError.
//
//   GET    /v1/keys          {data: [key], has_more: false}                console:read
//   POST   /v1/keys          201 key + secret (shown once)                  console:create
//   DELETE /v1/keys/:id      key with revoked_at                            console:create
//   GET    /v1/tasks         {data: [task], has_more, next_cursor}          console:read
//   GET    /v1/tasks/:id     {task, events: [{..., deliveries}]}            console:read
//   GET    /v1/usage         {from, to, data: [{day, vendor, route, credits, count}], total_credits, storage?: {files, bytes}}
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { GatewayError } from '../errors/gateway-error.ts';
import { TASK_STATUSES, type TaskStatus } from '../vocabulary/task-status.ts';
import { instant, usageRange, type LedgerReports } from '../billing/reports.ts';
import type { TaskConsole, TaskListQuery } from '../tasks/console.ts';
import { requireScope, type AuthContext } from '../tenants/auth-context.ts';
import type { KeySelfService, MintKeyInput } from '../tenants/self-service.ts';
import type { ConsoleSessions } from '../tenants/sessions.ts';
import type { Clock } from '../util/clock.ts';
import { SCHEMA_BASE } from '../validation/ajv.ts';
import { compileRequestValidator } from '../validation/request-validator.ts';
import { jsonBody } from './body.ts';
import { authOf } from './context.ts';
import { pageLimit, query } from './query.ts';

export interface TenantConsoleDeps {
  keys: KeySelfService;
  tasks: TaskConsole;
  reports: LedgerReports;
  /** Ends a revoked key's console sessions at once. */
  sessions?: ConsoleSessions;
  /** API key or console session (engine/http/auth.ts requireApiKey). */
  auth: RequestHandler;
  ajv: Ajv2020;
  clock: Clock;
  /** The tenant's result files held now (the result store, when on): GET /v1/usage's `storage`. */
  storage?: (tenantId: string) => Promise<{ files: number; bytes: number }>;
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;
const TENANT_SCOPE = { type: 'string', pattern: '^(\\*|(\\*|[a-z_][a-z0-9_]*):(\\*|create|read))$', maxLength: 100 };

export function tenantConsoleRouter(deps: TenantConsoleDeps): Router {
  const r = Router();
  r.use(['/v1/keys', '/v1/tasks', '/v1/usage'], deps.auth);
  const json = jsonBody(16 * 1024);
  const mintBody = compileRequestValidator(deps.ajv, `${SCHEMA_BASE}/console/create-key.json`, {
    type: 'object', additionalProperties: false, required: ['name'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 200 },
      scopes: { type: 'array', minItems: 1, maxItems: 50, items: TENANT_SCOPE },
      mode: { enum: ['live', 'test'] },
      expires_at: { type: 'string', format: 'date-time' },
    },
  });
  const caller = (res: Response, action: 'read' | 'create'): AuthContext => {
    const auth = authOf(res);
    requireScope(auth, 'console', action);
    return auth;
  };

  r.get('/v1/keys', async (_req, res) => {
    res.json({ data: await deps.keys.list(caller(res, 'read')), has_more: false });
  });
  r.post('/v1/keys', json, async (req, res) => {
    const auth = caller(res, 'create');
    const body = (await mintBody(req.body ?? {})) as unknown as MintKeyInput;
    res.status(201).json(await deps.keys.mint(auth, body));
  });
  r.delete('/v1/keys/:id', async (req, res) => {
    const key = await deps.keys.revoke(caller(res, 'create'), String(req.params.id));
    await deps.sessions?.endKeySessions(key.id);
    res.json(key);
  });

  r.get('/v1/tasks', async (req, res) => {
    res.json(await deps.tasks.list(caller(res, 'read').tenantId, taskQuery(req)));
  });
  r.get('/v1/tasks/:id', async (req, res) => {
    res.json(await deps.tasks.get(caller(res, 'read').tenantId, String(req.params.id)));
  });

  r.get('/v1/usage', async (req, res) => {
    const auth = caller(res, 'read');
    const range = usageRange(query(req, 'from'), query(req, 'to'), deps.clock.now());
    const { total_milli: _m, ...report } = await deps.reports.usage(auth.tenantId, range.from, range.to);
    res.json(deps.storage ? { ...report, storage: await deps.storage(auth.tenantId) } : report);
  });
  return r;
}

function taskQuery(req: Request): TaskListQuery {
  const q: TaskListQuery = { limit: pageLimit(req, DEFAULT_LIMIT, MAX_LIMIT) };
  const status = query(req, 'status');
  if (status !== undefined) {
    if (!TASK_STATUSES.includes(status as TaskStatus)) {
      throw new GatewayError('invalidParameterValue', `status must be one of ${TASK_STATUSES.join(', ')}.`, { errors: [{ pointer: '/query/status', detail: 'unknown status' }] });
    }
    q.status = status as TaskStatus;
  }
  for (const name of ['vendor', 'route', 'starting_after'] as const) {
    const v = query(req, name);
    if (v === undefined || v === '') continue;
    if (name === 'starting_after') q.startingAfter = v;
    else q[name] = v;
  }
  const after = query(req, 'created_after');
  if (after !== undefined) q.from = instant(after, '/query/created_after');
  const before = query(req, 'created_before');
  if (before !== undefined) q.to = instant(before, '/query/created_before');
  return q;
}
