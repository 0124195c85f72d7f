// The operations of the OpenAPI document (./openapi.ts), one per route and method: an async
// route's create, read and cancel, a proxy route's call; their request bodies and the error
// responses each can answer, named from the catalogue (./problems.ts).
import type { RouteSpec, VendorDescriptor } from '../descriptors/types.ts';
import type { JsonObject } from '../validation/json-schema.ts';
import { codeList, COMPONENT, named, problem } from './problems.ts';

export function createOperation(d: VendorDescriptor, r: RouteSpec, operationId: string, requestRef: string | undefined, validationCodes: number[]): JsonObject {
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

export function readOperation(d: VendorDescriptor, r: RouteSpec, operationId: string, responseRef: string): JsonObject {
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

export function cancelOperation(d: VendorDescriptor, r: RouteSpec, operationId: string, responseRef: string): JsonObject {
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

export function proxyOperation(d: VendorDescriptor, r: RouteSpec, operationId: string, requestRef: string | undefined, validationCodes: number[]): JsonObject {
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
