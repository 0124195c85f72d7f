// The shared components of the OpenAPI document (./openapi.ts): task_info and its error, the
// problem body, a task's GET response, and the webhooks (each event type's payload schema is
// defined in engine/events/types.ts; this wraps it in the envelope and the delivery headers).
import { URL_LIST_FIELDS } from '../descriptors/result-fields.ts';
import type { RouteSpec } from '../descriptors/types.ts';
import type { ErrorName } from '../errors/catalogue.ts';
import { EVENT_DEFINITIONS, EVENT_TYPES } from '../events/types.ts';
import type { JsonObject } from '../validation/json-schema.ts';
import { TASK_STATUSES } from '../vocabulary/task-status.ts';
import { codeList, COMPONENT } from './problems.ts';

/** The errors a task most often ends with, after its creation was answered. */
const TASK_ERRORS: readonly ErrorName[] = ['upstreamUnavailable', 'upstreamRequestFailed', 'upstreamResponseError', 'upstreamTimeout', 'upstreamExecutionFailed', 'internalOperationFailed', 'taskExecutionTimeout', 'taskCancelled', 'submissionOutcomeUnknown', 'descriptorExpressionFailed', 'resultCopyFailed'];

export function taskResponseSchema(routes: readonly RouteSpec[]): JsonObject {
  const props: JsonObject = { task_info: { $ref: `${COMPONENT}task_info` } };
  for (const r of routes) {
    for (const [field, spec] of Object.entries(r.result ?? {})) {
      // A field the descriptor marks optional may be absent from a completed task too.
      const when = typeof spec === 'object' && spec.optional ? 'present when the task is completed and the provider returned it' : 'present when the task is completed';
      props[field] = URL_LIST_FIELDS.has(field)
        ? { type: 'array', items: { type: 'string', format: 'uri' }, description: `Result URLs, ${when}: files on the gateway's result host while the result store is on (they open until results_expire_at, then answer 410).` }
        : { type: 'array', description: `Result field, ${when}.` };
    }
  }
  props.results_expire_at = { type: 'string', format: 'date-time', description: 'When the result files stop opening (the result store\'s retention); present on a completed task while the result store is on.' };
  return { type: 'object', required: ['task_info'], properties: props };
}

export function baseComponents(): JsonObject {
  return {
    task_status: { type: 'string', enum: [...TASK_STATUSES] },
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

export function webhookItems(): JsonObject {
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
  // Each event type's envelope, its `data` as events/ defines it.
  return Object.fromEntries(EVENT_TYPES.map((type) => {
    const { summary, description, data } = EVENT_DEFINITIONS[type];
    const schema = { allOf: [{ $ref: `${COMPONENT}event_envelope` }, { properties: { type: { const: type }, data } }], description };
    return [type, item(summary, schema as JsonObject)];
  }));
}
