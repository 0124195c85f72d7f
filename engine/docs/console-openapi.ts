// The console's part of the OpenAPI document (docs/console-api.md): sign-in and sessions, and
// the tenant self-service routes (keys, tasks, usage, balance, ledger). Merged into the
// document by ./openapi.ts; the schemas reference its base components (problem, task_info).
import { problem } from './problems.ts';
import type { JsonObject } from '../validation/json-schema.ts';

const C = '#/components/schemas/';
const CREDITS = { type: 'string', pattern: '^-?[0-9]+\\.[0-9]{3}$', description: 'Credits, exact (3 decimals).' };
const TAG = 'console';
/** A tenant route accepts the API key or, from the console, a session cookie. */
const TENANT_SECURITY = [{ bearer: [] }, { console_session: [] }, { console_operator: [] }];

function errors(o: { post?: boolean; notFound?: boolean; invalid?: boolean } = {}): JsonObject {
  const out: JsonObject = {
    '401': problem(['authenticationFailed'], 'No API key or console session, or one that is invalid, expired or revoked'),
    '403': problem(['permissionDenied'], o.post ? 'The key lacks the scope, or a cookie-authenticated request came from another origin ("cross-site request refused")' : 'The key lacks the scope'),
  };
  if (o.invalid) out['400'] = problem(['parameterValidationFailed', 'invalidParameterValue'], 'A parameter is missing or invalid');
  if (o.notFound) out['404'] = problem(['resourceNotFound'], 'No such resource for this tenant');
  out['429'] = problem(['tooManyFailedAuthentications'], 'Too many failed authentications from this address; retry after Retry-After');
  out['503'] = problem(['dependencyUnavailable'], 'The gateway cannot reach its store now; retry after Retry-After');
  return out;
}

const json = (ref: string, description: string): JsonObject => ({ description, content: { 'application/json': { schema: { $ref: `${C}${ref}` } } } });
const q = (name: string, description: string, schema: JsonObject = { type: 'string' }): JsonObject => ({ name, in: 'query', required: false, description, schema });
const id = (name: string, description: string): JsonObject => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });
const body = (ref: string): JsonObject => ({ required: true, content: { 'application/json': { schema: { $ref: `${C}${ref}` } } } });

function op(summary: string, o: JsonObject & { scope?: string; session?: 'none' | 'tenant' | 'operator'; description?: string }): JsonObject {
  const { scope, session, description, ...rest } = o;
  const security = session === 'none' ? [] : session === 'tenant' ? [{ console_session: [] }] : session === 'operator' ? [{ console_operator: [] }] : TENANT_SECURITY;
  const text = [description, scope ? `Scope: \`${scope}\`.` : undefined].filter(Boolean).join(' ');
  return { tags: [TAG], summary, ...(text ? { description: text } : {}), security, ...rest };
}

export function consolePaths(): JsonObject {
  return { ...sessionPaths(), ...tenantPaths() };
}

/** Signing in and out: the tenant's session and the operator's. */
function sessionPaths(): JsonObject {
  return {
    '/console/v1/session': {
      post: op('Sign in to the console with an API key', {
        session: 'none', operationId: 'console_session_create',
        description: 'Exchanges an API key with `console:read` for a session: the answer sets `gw_session` (HttpOnly; SameSite=Strict; Path=/; Max-Age = the session TTL; Secure over HTTPS). The key is not kept by the browser. A browser request from another origin is refused (403).',
        requestBody: body('console_sign_in'),
        responses: { '201': json('console_session', 'Signed in; the session cookie is set'), ...errors({ post: true, invalid: true }) },
      }),
      get: op('The current console session', { session: 'tenant', operationId: 'console_session_get', responses: { '200': json('console_session', 'The session'), ...errors() } }),
      delete: op('Sign out', {
        session: 'tenant', operationId: 'console_session_delete',
        description: 'Revokes the session server-side and clears the cookie (204 also without a session).',
        responses: { '204': { description: 'Signed out' }, '403': problem(['permissionDenied'], 'Cross-site request refused') },
      }),
    },
    '/console/v1/admin-session': {
      post: op('Sign the operator in with the admin token', {
        session: 'none', operationId: 'console_admin_session_create',
        description: 'Sets `gw_admin_session` (same flags). With it the operator calls `/admin/v1` and opens a tenant\'s view with `X-Console-Tenant: <tenant_id>` on the tenant routes.',
        requestBody: body('console_admin_sign_in'),
        responses: { '201': json('console_admin_session', 'Signed in; the operator cookie is set'), ...errors({ post: true, invalid: true }) },
      }),
      get: op('The current operator session', { session: 'operator', operationId: 'console_admin_session_get', responses: { '200': json('console_admin_session', 'The operator session'), ...errors() } }),
      delete: op('Sign the operator out', { session: 'operator', operationId: 'console_admin_session_delete', responses: { '204': { description: 'Signed out' }, '403': problem(['permissionDenied'], 'Cross-site request refused') } }),
    },
  };
}

/** The tenant self-service routes: keys, tasks, usage, balance, ledger. */
function tenantPaths(): JsonObject {
  return {
    '/v1/keys': {
      get: op('List the tenant\'s API keys (previews only)', { scope: 'console:read', operationId: 'console_keys_list', responses: { '200': json('console_key_list', 'The keys'), ...errors() } }),
      post: op('Create an API key', {
        scope: 'console:create', operationId: 'console_keys_create',
        description: 'Scopes must be covered by the caller\'s (default: the caller\'s); the mode defaults to the caller\'s and a test key cannot create a live one; a temporary caller creates keys that expire no later than itself. The secret is in this answer only.',
        requestBody: body('console_key_create'),
        responses: { '201': json('console_key_with_secret', 'The key and its secret (shown once)'), ...errors({ post: true, invalid: true }) },
      }),
    },
    '/v1/keys/{id}': {
      delete: op('Revoke an API key', {
        scope: 'console:create', operationId: 'console_keys_revoke', parameters: [id('id', 'The key id (key_...)')],
        description: 'Effective at once, for the key and its console sessions; revoking the calling key is allowed.',
        responses: { '200': json('console_key', 'The key, with revoked_at'), ...errors({ post: true, notFound: true }) },
      }),
    },
    '/v1/tasks': {
      get: op('List the tenant\'s tasks, newest first', {
        scope: 'console:read', operationId: 'console_tasks_list',
        description: 'Cursor-paginated: pass `next_cursor` as `starting_after`. A filtered request reads at most 2000 tasks; then it may answer fewer than `limit` with `has_more` and a cursor to go on.',
        parameters: [
          q('status', 'Only tasks in this status', { $ref: `${C}task_status` }),
          q('vendor', 'Only this vendor\'s tasks'),
          q('route', 'Only this route\'s tasks (route id, or vendor/route id)'),
          q('created_after', 'Created at or after (RFC 3339 date-time, or a UTC date)'),
          q('created_before', 'Created before (RFC 3339 date-time, or a UTC date)'),
          q('limit', 'Page size, 1 to 100 (default 20)', { type: 'integer', minimum: 1, maximum: 100, default: 20 }),
          q('starting_after', 'The cursor: a task id from next_cursor'),
        ],
        responses: { '200': json('console_task_list', 'A page of tasks'), ...errors({ invalid: true }) },
      }),
    },
    '/v1/tasks/{id}': {
      get: op('One task with its events and their deliveries', {
        scope: 'console:read', operationId: 'console_tasks_get', parameters: [id('id', 'The task id')],
        responses: { '200': json('console_task_detail', 'The task'), ...errors({ notFound: true }) },
      }),
    },
    '/v1/usage': {
      get: op('Credits spent per day, vendor and route', {
        scope: 'console:read', operationId: 'console_usage',
        description: 'Computed from the ledger\'s settle entries (task settlements and chat charges) on the UTC day of each entry, so total_credits equals the ledger\'s spend for the range. A task\'s route is its route id; a chat charge\'s is its model.',
        parameters: [q('from', 'First UTC day (YYYY-MM-DD); default 29 days before to', { type: 'string', format: 'date' }), q('to', 'Last UTC day, included (default today); at most 92 days after from', { type: 'string', format: 'date' })],
        responses: { '200': json('console_usage', 'Usage'), ...errors({ invalid: true }) },
      }),
    },
    '/v1/balance': {
      get: op('The tenant\'s wallet', { scope: 'console:read', operationId: 'console_balance', responses: { '200': json('console_wallet', 'The wallet'), ...errors() } }),
    },
    '/v1/ledger': {
      get: op('The tenant\'s ledger, newest first, filtered, as JSON or CSV', {
        scope: 'console:read', operationId: 'console_ledger',
        description: 'Dates are whole UTC days (both ends included); date-times are instants (both included). `format=csv` exports every matching entry (at most 100000) with the columns id, seq, at, kind, amount, amount_milli, ref, note.',
        parameters: [
          q('type', 'Only entries of this kind', { type: 'string', enum: ['topup', 'hold', 'settle', 'release', 'adjustment'] }),
          q('from', 'From this UTC date or date-time'),
          q('to', 'To this UTC date or date-time'),
          q('format', 'json (default) or csv', { type: 'string', enum: ['json', 'csv'] }),
          q('limit', 'Page size, 1 to 200 (default 50)', { type: 'integer', minimum: 1, maximum: 200, default: 50 }),
          q('cursor', 'next_cursor of the previous page'),
        ],
        responses: {
          '200': { description: 'Ledger entries', content: { 'application/json': { schema: { $ref: `${C}console_ledger_page` } }, 'text/csv': { schema: { type: 'string' } } } },
          ...errors({ invalid: true }),
        },
      }),
    },
  };
}

export function consoleSchemas(): JsonObject {
  return { ...sessionAndKeySchemas(), ...taskAndMoneySchemas() };
}

function sessionAndKeySchemas(): JsonObject {
  const key = {
    type: 'object', required: ['id', 'name', 'preview', 'scopes', 'mode', 'created_at', 'expires_at', 'revoked_at'],
    properties: {
      id: { type: 'string' }, name: { type: 'string' }, preview: { type: 'string', description: 'e.g. gw_live_abcd…wxyz; never the secret' },
      scopes: { type: 'array', items: { type: 'string' } }, mode: { enum: ['live', 'test'] }, created_at: { type: 'string', format: 'date-time' },
      expires_at: { type: ['string', 'null'], format: 'date-time' }, revoked_at: { type: ['string', 'null'], format: 'date-time' },
    },
  };
  return {
    console_sign_in: { type: 'object', required: ['api_key'], properties: { api_key: { type: 'string', description: 'An API key with console:read' } } },
    console_admin_sign_in: { type: 'object', required: ['admin_token'], properties: { admin_token: { type: 'string' } } },
    console_session: {
      type: 'object', required: ['tenant_id', 'key_id', 'scopes', 'mode', 'expires_at'],
      properties: { tenant_id: { type: 'string' }, key_id: { type: 'string' }, scopes: { type: 'array', items: { type: 'string' } }, mode: { enum: ['live', 'test'] }, expires_at: { type: 'string', format: 'date-time', description: 'Slides on use; never more than 12 h after sign-in' } },
    },
    console_admin_session: { type: 'object', required: ['operator', 'expires_at'], properties: { operator: { const: true }, expires_at: { type: 'string', format: 'date-time' } } },
    console_key: key,
    console_key_with_secret: { allOf: [{ $ref: `${C}console_key` }, { type: 'object', required: ['secret'], properties: { secret: { type: 'string', description: 'The key itself: shown once' } } }] },
    console_key_list: { type: 'object', required: ['data', 'has_more'], properties: { data: { type: 'array', items: { $ref: `${C}console_key` } }, has_more: { type: 'boolean' } } },
    console_key_create: {
      type: 'object', additionalProperties: false, required: ['name'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 200 },
        scopes: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^(\\*|(\\*|[a-z_][a-z0-9_]*):(\\*|create|read))$' } },
        mode: { enum: ['live', 'test'] },
        expires_at: { type: 'string', format: 'date-time' },
      },
    },
  };
}

/** Tasks, usage, the wallet and the ledger. */
function taskAndMoneySchemas(): JsonObject {
  const delivery = {
    type: 'object', required: ['id', 'endpoint_id', 'status', 'attempt_count', 'next_attempt_at'],
    properties: { id: { type: 'string' }, endpoint_id: { type: 'string' }, status: { enum: ['pending', 'succeeded', 'failed'] }, attempt_count: { type: 'integer' }, next_attempt_at: { type: ['string', 'null'], format: 'date-time' } },
  };
  return {
    console_task: {
      type: 'object', required: ['task_info', 'vendor', 'route', 'cost'],
      description: 'The task GET body (task_info, and the result fields once completed) plus where it ran and what it cost.',
      properties: {
        task_info: { $ref: `${C}task_info` }, vendor: { type: 'string' }, route: { type: 'string', description: 'The route id' },
        cost: { type: ['string', 'null'], description: 'Credits settled (completed), "0.000" (failed: never billed), null while it runs' },
      },
    },
    console_task_list: {
      type: 'object', required: ['data', 'has_more', 'next_cursor'],
      properties: { data: { type: 'array', items: { $ref: `${C}console_task` } }, has_more: { type: 'boolean' }, next_cursor: { type: ['string', 'null'] } },
    },
    console_task_detail: {
      type: 'object', required: ['task', 'events'],
      properties: {
        task: { $ref: `${C}console_task` },
        events: {
          type: 'array',
          items: {
            type: 'object', required: ['id', 'type', 'created_at', 'deliveries'],
            properties: { id: { type: 'string' }, type: { type: 'string' }, created_at: { type: 'string', format: 'date-time' }, deliveries: { type: 'array', items: delivery } },
          },
        },
      },
    },
    console_usage: {
      type: 'object', required: ['from', 'to', 'data', 'total_credits'],
      properties: {
        from: { type: 'string', format: 'date' }, to: { type: 'string', format: 'date' }, total_credits: CREDITS,
        data: {
          type: 'array',
          items: { type: 'object', required: ['day', 'vendor', 'route', 'credits', 'count'], properties: { day: { type: 'string', format: 'date' }, vendor: { type: 'string' }, route: { type: 'string', description: 'Route id, or the chat model' }, credits: CREDITS, count: { type: 'integer' } } },
        },
        storage: {
          type: 'object', required: ['files', 'bytes'], description: "The tenant's result files held now (present while the result store is on; docs/results.md)",
          properties: { files: { type: 'integer', minimum: 0 }, bytes: { type: 'integer', minimum: 0 } },
        },
      },
    },
    console_wallet: {
      type: 'object',
      required: ['tenant_id', 'currency', 'available', 'balance', 'held', 'state', 'low_balance_threshold'],
      properties: {
        tenant_id: { type: 'string' }, currency: { const: 'credits' }, available: { type: 'string' }, balance: { type: 'string' }, held: { type: 'string' },
        available_milli: { type: 'integer' }, balance_milli: { type: 'integer' }, held_milli: { type: 'integer' },
        state: { enum: ['NORMAL', 'ALERTED'] }, low_balance_threshold: { type: 'string' },
      },
    },
    console_ledger_page: {
      type: 'object', required: ['data', 'next_cursor'],
      properties: {
        next_cursor: { type: ['string', 'null'] },
        data: {
          type: 'array',
          items: {
            type: 'object', required: ['id', 'seq', 'at', 'kind', 'amount', 'amount_milli', 'ref', 'note'],
            properties: { id: { type: 'string' }, seq: { type: 'integer' }, at: { type: 'string', format: 'date-time' }, kind: { enum: ['topup', 'hold', 'settle', 'release', 'adjustment'] }, amount: CREDITS, amount_milli: { type: 'integer' }, ref: { type: 'string' }, note: { type: 'string' } },
          },
        },
      },
    },
  };
}

export const CONSOLE_SECURITY_SCHEMES: JsonObject = {
  console_session: { type: 'apiKey', in: 'cookie', name: 'gw_session', description: 'A console session (POST /console/v1/session). A request with another method than GET/HEAD must carry the gateway\'s own Origin (or Referer).' },
  console_operator: { type: 'apiKey', in: 'cookie', name: 'gw_admin_session', description: 'An operator session (POST /console/v1/admin-session); on tenant routes with X-Console-Tenant: <tenant_id>.' },
};
