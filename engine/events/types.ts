// Every event type the gateway emits, each defined once: its name, a summary and what its
// payload holds (the docs), and the JSON Schema of its `data` (the spec's "Events"). A new event
// type is added here and nowhere else: webhook subscriptions accept it (EVENT_TYPES), the
// OpenAPI document lists it under `webhooks` with this schema (engine/docs/openapi-components.ts),
// the console offers it (GET /v1/webhooks/event-types), and a task event in TASK_EVENTS is what
// the lifecycle emits and the task console lists. test/events/event-types.test.ts holds the
// emitted events to these schemas and the OpenAPI document to this list.

/** A JSON Schema as a plain object; `$ref`s name the OpenAPI document's shared components. */
type Schema = { readonly [key: string]: unknown };

export interface EventDefinition {
  /** One line: what happened. */
  summary: string;
  /** What the payload holds, for the docs. */
  description: string;
  /** The JSON Schema of the event's `data`. */
  data: Schema;
}

/** The OpenAPI document's shared schemas (engine/docs/openapi-components.ts), as the payloads `$ref` them. */
export const COMPONENT = '#/components/schemas/';

const taskInfoWith = (extra: Schema): Schema => ({ allOf: [{ $ref: `${COMPONENT}task_info` }, extra] });

/** A task event's `data`: the task's vendor and model beside its payload. */
function taskData(payload: Schema): Schema {
  return { type: 'object', required: ['vendor', 'model_name', 'payload'], properties: { vendor: { type: 'string' }, model_name: { type: 'string' }, payload } };
}

const urls = { type: 'array', items: { type: 'string', format: 'uri' } };

export const EVENT_DEFINITIONS = {
  'task.created': {
    summary: 'A task was created',
    description: 'payload: task_info only (status pending).',
    data: taskData({ type: 'object', required: ['task_info'], properties: { task_info: taskInfoWith({ properties: { status: { const: 'pending' } } }) } }),
  },
  'task.succeeded': {
    summary: 'A task completed',
    description: 'payload: the full GET task response (task_info and the result fields).',
    data: taskData({
      type: 'object',
      required: ['task_info'],
      properties: {
        task_info: taskInfoWith({ properties: { status: { const: 'completed' } } }),
        images: urls,
        videos: urls,
        audios: urls,
        results_expire_at: { type: 'string', format: 'date-time', description: 'When the result files stop opening, while the result store is on.' },
      },
    }),
  },
  'task.failed': {
    summary: 'A task failed',
    description: 'payload: task_info with status failed and its error.',
    data: taskData({ type: 'object', required: ['task_info'], properties: { task_info: taskInfoWith({ required: ['error'], properties: { status: { const: 'failed' } } }) } }),
  },
  'balance.low': {
    summary: 'The wallet balance dropped below the threshold',
    description: 'payload: the balance after the triggering charge and the threshold it crossed, in credits (2 decimals, rounded down).',
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
} as const satisfies Record<string, EventDefinition>;

export type EventType = keyof typeof EVENT_DEFINITIONS;
export const EVENT_TYPES = Object.keys(EVENT_DEFINITIONS) as readonly EventType[];

/**
 * The events a task emits, by the status it reached: `task.created` when it is accepted, one
 * terminal event when it ends. The lifecycle emits what this says and the console lists a task's
 * events from it (engine/tasks/console.ts).
 */
export const TASK_EVENTS = { created: 'task.created', completed: 'task.succeeded', failed: 'task.failed' } as const satisfies Record<string, EventType>;

/** The events a task in `status` has emitted so far, in order. */
export function taskEventsAt(status: string): EventType[] {
  const terminal = (TASK_EVENTS as Record<string, EventType>)[status];
  return status === 'created' || !terminal ? [TASK_EVENTS.created] : [TASK_EVENTS.created, terminal];
}
