// An OpenAPI 3.1 document generated from the descriptors: each route's request schema (with the
// shared schemas/ it `$ref`s bundled under components), the task_info and result responses,
// the RFC 9457 problem bodies with the service codes each route can answer, bearer security,
// and the webhook event payloads as `webhooks`. `gateway openapi` prints it; the running
// gateway serves it at /openapi.json (engine/http/openapi-routes.ts).
import { readFileSync } from 'node:fs';
import type { ErrorObject } from 'ajv';
import { URL_LIST_FIELDS } from '../descriptors/result-fields.ts';
import type { RouteSpec, VendorDescriptor } from '../descriptors/types.ts';
import type { ErrorName } from '../errors/catalogue.ts';
import { codeList, named, problem } from './problems.ts';
import { CONSOLE_SECURITY_SCHEMES, consolePaths, consoleSchemas } from './console-openapi.ts';
import { EVENT_TYPES } from '../events/bus.ts';
import { codeForAjvError, ruleCode } from '../validation/error-policy.ts';
import { DATA_KEYWORDS, isObject, registryFromDir, SCHEMA_MAPS, requestSchemaBase, type JsonObject, type SchemaRegistry } from '../validation/json-schema.ts';

export interface OpenApiOptions {
  title?: string;
  version?: string;
  /** `servers[0].url` (default "/": the gateway serving the document). */
  serverUrl?: string;
  registry?: SchemaRegistry;
}

type Doc = JsonObject;

const COMPONENT = '#/components/schemas/';
/** The errors a task most often ends with, after its creation was answered. */
const TASK_ERRORS: readonly ErrorName[] = ['upstreamUnavailable', 'upstreamRequestFailed', 'upstreamResponseError', 'upstreamTimeout', 'upstreamExecutionFailed', 'internalOperationFailed', 'taskExecutionTimeout', 'taskCancelled', 'submissionOutcomeUnknown', 'descriptorExpressionFailed', 'resultCopyFailed'];

export function buildOpenApi(descriptors: readonly VendorDescriptor[], opts: OpenApiOptions = {}): Doc {
  const registry = opts.registry ?? registryFromDir();
  const schemas: JsonObject = baseComponents();
  const bundled = new Map<string, string>(); // registry URI → component name
  const paths: JsonObject = {};
  const tags: JsonObject[] = [];

  const bundle = (uri: string): string => {
    const known = bundled.get(uri);
    if (known) return known;
    const file = uri.slice(uri.lastIndexOf('/') + 1).replace(/\.schema\.json$|\.json$/, '');
    let name = `shared_${file.replace(/[^A-Za-z0-9_.-]/g, '_')}`;
    while (name in schemas) name += '_';
    bundled.set(uri, name);
    schemas[name] = rewrite(registry.get(uri), uri, name);
    return name;
  };
  /** Copy a schema, turning every `$ref` into a reference inside this document. */
  const rewrite = (schema: unknown, base: string, self: string): unknown => {
    const walk = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(walk);
      if (!isObject(node)) return node;
      const out: JsonObject = {};
      for (const [k, v] of Object.entries(node)) {
        if (k === '$id' || k === '$schema') continue;
        if (k === '$ref' && typeof v === 'string') out[k] = refTo(v, base, self);
        else if (DATA_KEYWORDS.has(k)) out[k] = v;
        else if (SCHEMA_MAPS.has(k) && isObject(v)) out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, walk(sub)]));
        else out[k] = walk(v);
      }
      return out;
    };
    return walk(schema);
  };
  const refTo = (ref: string, base: string, self: string): string => {
    let url: URL;
    try {
      url = new URL(ref, base);
    } catch {
      return ref;
    }
    const fragment = url.hash;
    url.hash = '';
    const target = url.href === base.split('#')[0] ? self : registry.has(url.href) ? bundle(url.href) : undefined;
    if (!target) return ref;
    return `${COMPONENT}${target}${fragment.replace(/^#/, '')}`;
  };

  for (const d of descriptors) {
    tags.push({ name: d.vendor, description: d.title ?? d.description ?? d.vendor });
    const byId = new Map(d.routes.map((r) => [r.id, r]));
    for (const r of d.routes) {
      const id = `${d.vendor}_${r.id}`;
      const clientPath = `/vendors/${d.vendor}${r.path}`;
      let requestRef: string | undefined;
      if (r.request?.schema) {
        const name = `${id}_request`;
        const base = requestSchemaBase(d.vendor, r.id);
        schemas[name] = rewrite(r.request.schema, base, name);
        requestRef = `${COMPONENT}${name}`;
      }
      const validationCodes = r.request ? validationCodesOf(r, schemas[`${id}_request`], (ref) => resolveComponent(schemas, ref)) : [];
      if (r.kind === 'async') {
        schemas[`${id}_task`] = taskResponseSchema([r]);
        setOp(paths, clientPath, 'post', createOperation(d, r, `${id}_create`, requestRef, validationCodes));
        setOp(paths, `${clientPath}/{task_id}`, 'get', readOperation(d, r, `${id}_get`, `${COMPONENT}${id}_task`));
        setOp(paths, `${clientPath}/{task_id}/cancel`, 'post', cancelOperation(d, r, `${id}_cancel`, `${COMPONENT}${id}_task`));
      } else if (r.kind === 'status') {
        const of = (r.tasks_of ?? []).map((t) => byId.get(t)).filter((x): x is RouteSpec => Boolean(x));
        schemas[`${id}_task`] = taskResponseSchema(of);
        setOp(paths, `${clientPath}/{task_id}`, 'get', readOperation(d, r, `${id}_get`, `${COMPONENT}${id}_task`));
        setOp(paths, `${clientPath}/{task_id}/cancel`, 'post', cancelOperation(d, r, `${id}_cancel`, `${COMPONENT}${id}_task`));
      } else {
        [clientPath, ...(r.aliases ?? [])].forEach((p, i) => setOp(paths, p, r.method.toLowerCase(), proxyOperation(d, r, `${id}${i === 0 ? '' : `_alias${i}`}`, requestRef, validationCodes)));
      }
    }
  }

  Object.assign(paths, consolePaths());
  Object.assign(schemas, consoleSchemas());
  tags.push({ name: 'console', description: 'The tenant self-service API the console calls (API key or console session); docs/console-api.md' });

  return {
    openapi: '3.1.0',
    info: {
      title: opts.title ?? 'Model gateway API',
      version: opts.version ?? packageVersion(),
      description:
        'One base address and one API key for many model providers. Asynchronous routes answer a POST with `task_info` ' +
        '(status `pending`); GET the same path followed by `/{task_id}` for the latest status and, once `completed`, the result ' +
        'fields beside `task_info`; POST `/{task_id}/cancel` cancels a task that has not finished. Errors are RFC 9457 problem bodies carrying a service `error_code`. ' +
        'Generated from the vendor descriptors.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    servers: [{ url: opts.serverUrl ?? '/' }],
    security: [{ bearer: [] }],
    tags,
    paths,
    webhooks: webhookItems(),
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>. One key is valid for every provider.' },
        ...CONSOLE_SECURITY_SCHEMES,
      },
      schemas,
    },
  };
}

function setOp(paths: JsonObject, path: string, method: string, op: JsonObject): void {
  const item = (paths[path] ??= {}) as JsonObject;
  item[method] = op;
}

function resolveComponent(schemas: JsonObject, ref: string): unknown {
  if (!ref.startsWith(COMPONENT)) return undefined;
  let cur: unknown = schemas;
  for (const seg of ref.slice(COMPONENT.length).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))) {
    cur = isObject(cur) ? cur[seg] : undefined;
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------
// Operations

function createOperation(d: VendorDescriptor, r: RouteSpec, operationId: string, requestRef: string | undefined, validationCodes: number[]): JsonObject {
  const status = String(r.status ?? 202);
  const responses: JsonObject = {
    [status]: {
      description: 'Task created: `task_info` with status `pending`. Its later states are read with GET `{path}/{task_id}`; failures after this point appear only there.',
      content: { 'application/json': { schema: { $ref: `${COMPONENT}task_created` } } },
    },
  };
  if (r.request?.validation_errors === 'task_info') {
    responses['400'] = {
      description: `Validation failed. This route answers with a \`task_info\`-shaped body (status \`failed\`). Codes: ${codeList(named(validationCodes))}`,
      content: { 'application/json': { schema: { allOf: [{ $ref: `${COMPONENT}task_info_validation_error` }, { properties: { error: { properties: { error_code: { enum: validationCodes } } } } }] } } },
      'x-error-codes': validationCodes,
    };
  } else responses['400'] = problem(named(validationCodes), 'The request is invalid');
  Object.assign(responses, commonErrors({ billed: Boolean(r.pricing), post: true, quota: true }));
  return {
    operationId,
    tags: [d.vendor],
    summary: r.summary ?? r.id,
    description: `Creates an asynchronous task (${d.title ?? d.vendor}).${r.pricing ? ` ${pricingNote(r)}` : ''}`,
    ...(requestRef ? { requestBody: requestBody(r, requestRef) } : {}),
    responses,
  };
}

function readOperation(d: VendorDescriptor, r: RouteSpec, operationId: string, responseRef: string): JsonObject {
  return {
    operationId,
    tags: [d.vendor],
    summary: `${r.summary ?? r.id}: task status`,
    description: 'The latest `task_info` of the task and, once it is `completed`, its result fields. A failed task is still answered with HTTP 200: its `task_info.error` says why.',
    parameters: [{ name: 'task_id', in: 'path', required: true, description: 'The task id returned at creation.', schema: { type: 'string', format: 'uuid' } }],
    responses: {
      '200': { description: 'The task.', content: { 'application/json': { schema: { $ref: responseRef } } } },
      '400': problem(['parameterValidationFailed'], 'task_id is not a UUID'),
      '404': problem(['resourceNotFound'], 'No such task for this API key'),
      ...commonErrors({ billed: false, post: false, quota: false }),
    },
  };
}

/** What a cancel does upstream for the tasks a route reads (its own, or its tasks_of routes'): a sentence, and whether some refuse it (`none`). */
function cancelPolicies(d: VendorDescriptor, r: RouteSpec): { text: string; refused: boolean } {
  const routes = r.kind === 'status' ? d.routes.filter((x) => (r.tasks_of ?? []).includes(x.id)) : [r];
  const policies = new Set(routes.map((x) => x.upstream?.cancel).map((c) => (typeof c === 'object' ? 'request' : (c ?? 'local'))));
  const text = [...policies].map((c) => ({
    request: 'the provider is asked once to stop the task (best-effort)',
    local: 'the task ends on the gateway only: the provider, which has no cancel, may still finish it (and bill the operator)',
    none: 'the provider cannot stop the task and this route lets it run: the cancel is refused with 409 / 2006 and the task goes on',
  })[c as 'request' | 'local' | 'none']).join('; or ');
  return { text, refused: policies.has('none') };
}

function cancelOperation(d: VendorDescriptor, r: RouteSpec, operationId: string, responseRef: string): JsonObject {
  const policy = cancelPolicies(d, r);
  const conflict = problem(policy.refused ? ['conflict', 'taskNotCancellable'] : ['conflict'], `The task has already finished (completed, failed, or cancelled by an earlier call); the detail names its state and \`task_info\` carries it${policy.refused ? '. 2006: this route\'s tasks cannot be cancelled' : ''}`);
  const schema = (conflict.content as JsonObject)['application/problem+json'] as JsonObject;
  ((schema.schema as JsonObject).allOf as JsonObject[]).push({ required: ['task_info'], properties: { task_info: { $ref: `${COMPONENT}task_info` } } });
  return {
    operationId,
    tags: [d.vendor],
    summary: `${r.summary ?? r.id}: cancel the task`,
    description:
      'Cancels a `pending` or `processing` task (as Replicate\'s `POST /predictions/{id}/cancel`; no request body). It ends `failed` with ' +
      '`task_info.error.code` 4009 (Task Cancelled), its credit hold is released in full (a cancelled task is not billed), `task.failed` ' +
      `is sent. Upstream: ${policy.text}. A task that finishes while the cancel arrives ends one way only: ` +
      'completed and billed (this answers 409), or cancelled and released. Needs the `<vendor>:create` scope.',
    parameters: [{ name: 'task_id', in: 'path', required: true, description: 'The task id returned at creation.', schema: { type: 'string', format: 'uuid' } }],
    responses: {
      '200': { description: 'Cancelled: the task as GET now answers it (status `failed`, error 4009).', content: { 'application/json': { schema: { $ref: responseRef } } } },
      '400': problem(['parameterValidationFailed'], 'task_id is not a UUID'),
      '404': problem(['resourceNotFound'], 'No such task for this API key'),
      '409': conflict,
      ...commonErrors({ billed: false, post: false, quota: false }),
    },
  };
}

function proxyOperation(d: VendorDescriptor, r: RouteSpec, operationId: string, requestRef: string | undefined, validationCodes: number[]): JsonObject {
  const responses: JsonObject = {
    [String(r.status ?? 200)]: {
      description: r.kind === 'stream' ? 'The answer; a server-sent event stream when the request asks to stream.' : 'The upstream answer.',
      content: {
        'application/json': { schema: { type: 'object' } },
        ...(r.kind === 'stream' ? { 'text/event-stream': { schema: { type: 'string' } } } : {}),
      },
    },
  };
  if (requestRef || r.method === 'POST') responses['400'] = problem(validationCodes.length ? named(validationCodes) : ['parameterValidationFailed'], 'The request is invalid');
  Object.assign(responses, commonErrors({ billed: Boolean(r.pricing), post: r.method === 'POST', quota: false, upstream: true }));
  return {
    operationId,
    tags: [d.vendor],
    summary: r.summary ?? r.id,
    description: `${r.kind === 'stream' ? 'Synchronous, or streamed as server-sent events' : 'Synchronous'} (${d.title ?? d.vendor}).${r.pricing ? ` ${pricingNote(r)}` : ''}`,
    ...(requestRef ? { requestBody: requestBody(r, requestRef) } : {}),
    responses,
  };
}

function requestBody(r: RouteSpec, ref: string): JsonObject {
  const examples = r.request?.examples ?? [];
  return {
    required: true,
    content: {
      'application/json': {
        schema: { $ref: ref },
        ...(examples.length ? { examples: Object.fromEntries(examples.map((value, i) => [`example_${i + 1}`, { summary: `Example ${i + 1}`, value }])) } : {}),
      },
    },
  };
}

function pricingNote(r: RouteSpec): string {
  const p = r.pricing as { unit?: string; note?: string };
  return `Billed per ${String(p.unit ?? 'task').replace(/_/g, ' ')}${p.note ? ` (${p.note})` : ''}; a failed task is not billed.`;
}

function commonErrors(o: { billed: boolean; post: boolean; quota: boolean; upstream?: boolean }): JsonObject {
  const out: JsonObject = {
    '401': problem(['authenticationFailed'], 'The API key is missing, invalid, expired or revoked'),
    '403': problem(['permissionDenied'], 'The API key may not use this route'),
  };
  if (o.billed) out['402'] = problem(['insufficientBalance'], 'Insufficient balance');
  if (o.post) {
    out['413'] = problem(['payloadTooLarge'], 'The request body is too large');
    out['415'] = problem(['unsupportedMediaType'], 'The request body is not JSON');
  }
  out['429'] = problem(o.quota ? ['rateLimitExceeded', 'quotaExceeded', 'tooManyFailedAuthentications'] : ['rateLimitExceeded', 'tooManyFailedAuthentications'], 'Rate limit or quota exceeded, or too many failed authentications from this address');
  out['500'] = problem([...(o.upstream ? ['upstreamUnavailable', 'upstreamRequestFailed', 'upstreamResponseError', 'upstreamTimeout', 'upstreamExecutionFailed'] as const : []), 'internalOperationFailed', ...(o.billed ? ['configurationError'] as const : [])], o.upstream ? 'The upstream provider or the gateway failed' : 'The gateway failed');
  // Every route reads the store (the API key at least).
  out['503'] = problem(['dependencyUnavailable'], 'The gateway cannot reach its store or job queue now; retry after Retry-After (a create with the same Idempotency-Key)');
  return out;
}

/**
 * The 400 codes a request schema can produce under the engine's error policy
 * (engine/validation/error-policy.ts), plus its rules' codes. 2001 is always possible (malformed JSON).
 */
const SCHEMA_ONE = new Set(['items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'additionalProperties', 'unevaluatedProperties']);
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const ASSERTIONS = new Set([
  'type', 'enum', 'const', 'required', 'dependentRequired', 'additionalProperties', 'unevaluatedProperties', 'minimum', 'maximum',
  'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties',
  'pattern', 'format', 'multipleOf', 'uniqueItems', 'not', 'anyOf', 'oneOf', 'contains', 'propertyNames',
]);

export function validationCodesOf(r: RouteSpec, schema: unknown, resolve: (ref: string) => unknown): number[] {
  const codes = new Set<number>([2001]);
  const seen = new Set<unknown>();
  const walk = (node: unknown, depth: number) => {
    if (!isObject(node) || seen.has(node) || depth > 32) return;
    seen.add(node);
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') walk(resolve(v), depth + 1);
      else if (SCHEMA_MAPS.has(k) && isObject(v)) for (const s of Object.values(v)) walk(s, depth + 1);
      else if (SCHEMA_ONE.has(k)) walk(v, depth + 1);
      else if (SCHEMA_LISTS.has(k) && Array.isArray(v)) for (const s of v) walk(s, depth + 1);
      const closed = (k !== 'additionalProperties' && k !== 'unevaluatedProperties') || v === false;
      if (ASSERTIONS.has(k) && closed) codes.add(codeForAjvError({ keyword: k, parentSchema: node } as unknown as ErrorObject));
    }
  };
  walk(schema, 0);
  for (const rule of r.request?.rules ?? []) {
    const code = ruleCode(rule);
    if (code !== undefined) codes.add(code);
  }
  for (const m of r.request?.media ?? []) for (const c of m.kind === 'image' ? [2101, 2102, 2103] : [2102]) codes.add(c);
  return [...codes].sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------------
// Components

function taskResponseSchema(routes: readonly RouteSpec[]): JsonObject {
  const props: JsonObject = { task_info: { $ref: `${COMPONENT}task_info` } };
  for (const r of routes) {
    for (const field of Object.keys(r.result ?? {})) {
      props[field] = URL_LIST_FIELDS.has(field)
        ? { type: 'array', items: { type: 'string', format: 'uri' }, description: `Result URLs, present when the task is completed: files on the gateway's result host while the result store is on (they open until results_expire_at, then answer 410).` }
        : { type: 'array', description: 'Result field, present when the task is completed.' };
    }
  }
  props.results_expire_at = { type: 'string', format: 'date-time', description: 'When the result files stop opening (the result store\'s retention); present on a completed task while the result store is on.' };
  return { type: 'object', required: ['task_info'], properties: props };
}

function baseComponents(): JsonObject {
  return {
    task_status: { type: 'string', enum: ['pending', 'processing', 'completed', 'failed'] },
    task_error: {
      type: 'object',
      required: ['code', 'title', 'detail'],
      properties: {
        code: { type: 'integer', description: `Service error code. Most common after creation: ${codeList(TASK_ERRORS)}.`, examples: [3005] },
        title: { type: 'string' },
        detail: { type: 'string' },
      },
    },
    task_info: {
      type: 'object',
      required: ['id', 'status', 'created_at', 'updated_at'],
      properties: {
        id: { type: 'string', format: 'uuid' },
        status: { $ref: `${COMPONENT}task_status` },
        created_at: { type: 'string', format: 'date-time' },
        updated_at: { type: 'string', format: 'date-time' },
        error: { $ref: `${COMPONENT}task_error`, description: 'Present when status is failed.' },
      },
    },
    task_created: {
      type: 'object',
      required: ['task_info'],
      properties: { task_info: { allOf: [{ $ref: `${COMPONENT}task_info` }, { properties: { status: { const: 'pending' } } }] } },
    },
    problem: {
      type: 'object',
      description: 'RFC 9457 problem details with the service error code.',
      required: ['status', 'title', 'error_code'],
      properties: {
        type: { type: 'string', format: 'uri-reference', description: 'Ends in a fragment equal to the error code.' },
        title: { type: 'string' },
        status: { type: 'integer' },
        error_code: { type: 'integer' },
        detail: { type: 'string' },
        instance: { type: 'string', format: 'uri-reference' },
        trace_id: { type: 'string' },
        errors: {
          type: 'array',
          description: 'Every invalid field, as a JSON pointer into the request.',
          items: { type: 'object', required: ['pointer', 'detail'], properties: { pointer: { type: 'string' }, detail: { type: 'string' }, code: { type: 'integer' } } },
        },
      },
    },
    task_info_validation_error: {
      type: 'object',
      description: 'The 400 body of routes that answer validation failures in the task_info shape: no task exists, so task_info.id is null.',
      required: ['task_info', 'error'],
      properties: {
        task_info: {
          type: 'object',
          required: ['id', 'status', 'error'],
          properties: { id: { type: 'null' }, status: { const: 'failed' }, created_at: { type: 'string', format: 'date-time' }, updated_at: { type: 'string', format: 'date-time' }, error: { $ref: `${COMPONENT}task_error` } },
        },
        error: { type: 'object', required: ['title', 'error_code', 'detail'], properties: { title: { type: 'string' }, error_code: { type: 'integer' }, detail: { type: 'string' } } },
        errors: { type: 'array', items: { type: 'object' } },
        trace_id: { type: 'string' },
      },
    },
    event_envelope: {
      type: 'object',
      required: ['id', 'type', 'created_at', 'data'],
      properties: {
        id: { type: 'string', pattern: '^evt_', description: 'Event id (test events: evt_test_); deduplicate on it.' },
        type: { type: 'string', enum: [...EVENT_TYPES] },
        created_at: { type: 'string', format: 'date-time' },
        data: { type: 'object' },
        truncated: { type: 'boolean' },
      },
    },
  };
}

function taskEvent(type: string, payload: JsonObject, what: string): JsonObject {
  return {
    allOf: [
      { $ref: `${COMPONENT}event_envelope` },
      {
        properties: {
          type: { const: type },
          data: {
            type: 'object',
            required: ['vendor', 'model_name', 'payload'],
            properties: { vendor: { type: 'string' }, model_name: { type: 'string' }, payload },
          },
        },
      },
    ],
    description: what,
  };
}

function webhookItems(): JsonObject {
  const headers = [
    { name: 'X-Service-Webhook-Id', in: 'header', required: true, description: 'Delivery id (whd_...), identical across retries; deduplicate on it.', schema: { type: 'string', pattern: '^whd_' } },
    { name: 'X-Service-Webhook-Timestamp', in: 'header', required: true, description: 'Unix seconds at signing; reject more than 300 s from now.', schema: { type: 'string', pattern: '^[0-9]+$' } },
    { name: 'X-Service-Webhook-Signature', in: 'header', required: true, description: '`v1=` + hex HMAC-SHA256 (key: the endpoint secret) of `<delivery id>.<timestamp>.<raw body>`.', schema: { type: 'string', pattern: '^v1=[0-9a-f]{64}$' } },
  ];
  const item = (summary: string, schema: JsonObject): JsonObject => ({
    post: {
      summary,
      security: [],
      parameters: headers,
      requestBody: { required: true, content: { 'application/json': { schema } } },
      responses: { '2XX': { description: 'Delivered. Anything else (or no answer within 30 s) is retried up to 5 times.' } },
    },
  });
  const taskInfoWith = (extra: JsonObject) => ({ allOf: [{ $ref: `${COMPONENT}task_info` }, extra] });
  return {
    'task.created': item('A task was created', taskEvent('task.created', { type: 'object', required: ['task_info'], properties: { task_info: taskInfoWith({ properties: { status: { const: 'pending' } } }) } }, 'payload: task_info only (status pending).')),
    'task.succeeded': item('A task completed', taskEvent('task.succeeded', {
      type: 'object',
      required: ['task_info'],
      properties: {
        task_info: taskInfoWith({ properties: { status: { const: 'completed' } } }),
        images: { type: 'array', items: { type: 'string', format: 'uri' } },
        videos: { type: 'array', items: { type: 'string', format: 'uri' } },
        audios: { type: 'array', items: { type: 'string', format: 'uri' } },
      },
    }, 'payload: the full GET task response (task_info and the result fields).')),
    'task.failed': item('A task failed', taskEvent('task.failed', { type: 'object', required: ['task_info'], properties: { task_info: taskInfoWith({ required: ['error'], properties: { status: { const: 'failed' } } }) } }, 'payload: task_info with status failed and its error.')),
    'balance.low': item('The wallet balance dropped below the threshold', {
      allOf: [
        { $ref: `${COMPONENT}event_envelope` },
        {
          properties: {
            type: { const: 'balance.low' },
            data: {
              type: 'object',
              required: ['user_id', 'payload'],
              properties: {
                user_id: { type: 'string', format: 'uuid' },
                payload: {
                  type: 'object',
                  required: ['available_balance', 'trigger_threshold', 'currency'],
                  properties: {
                    available_balance: { type: 'string', pattern: '^-?[0-9]+\\.[0-9]{2}$', description: 'Credits after the triggering charge.' },
                    trigger_threshold: { type: 'string', pattern: '^[0-9]+\\.[0-9]{2}$', description: 'Credits.' },
                    currency: { const: 'credits' },
                  },
                },
              },
            },
          },
        },
      ],
    }),
  };
}

let version: string | undefined;
function packageVersion(): string {
  try {
    version ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    version = '0.0.0';
  }
  return version;
}

