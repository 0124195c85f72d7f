// The body a receiver gets: the spec's envelope `{id, type, created_at, data}` (never the
// internal tenant_id), serialized once per event and stored, so every attempt and every
// endpoint sends byte-identical JSON.
//
// Payloads over `max_payload_bytes` (spec: 64 KB) are never sent as such. Instead a "thin"
// event goes out, the same envelope with:
//  - task events: `data.payload` reduced to `{task_info, truncated: true}` (vendor and
//    model_name kept), so the receiver GETs the task for its result fields;
//  - if that is still too big (or for any other family): `data` = `{truncated: true}` plus,
//    for task events, `vendor`, `model_name` and `payload.task_info.{id,status}` when present.
// Receivers recognise thin events by `truncated: true` and fetch the resource.
import type { GatewayEvent } from '../events/bus.ts';

export interface SerializedEvent {
  body: string;
  truncated: boolean;
}

export function serializeEvent(event: GatewayEvent, maxBytes: number): SerializedEvent {
  const envelope = (data: Record<string, unknown>) => JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data });
  const fits = (body: string) => Buffer.byteLength(body, 'utf8') <= maxBytes;

  const full = envelope(event.data);
  if (fits(full)) return { body: full, truncated: false };

  const isTask = event.type.startsWith('task.');
  const payload = asObject(event.data.payload);
  const taskInfo = asObject(payload?.task_info);
  if (isTask) {
    const thin = envelope({ ...pick(event.data, ['vendor', 'model_name']), payload: { task_info: taskInfo ?? {}, truncated: true } });
    if (fits(thin)) return { body: thin, truncated: true };
  }

  const minimal: Record<string, unknown> = { truncated: true };
  if (isTask) {
    Object.assign(minimal, pick(event.data, ['vendor', 'model_name']));
    minimal.payload = { task_info: taskInfo ? pick(taskInfo, ['id', 'status']) : {}, truncated: true };
  }
  const body = envelope(minimal);
  // Only oversized vendor/model names could still overflow; drop them rather than send > limit.
  return { body: fits(body) ? body : envelope({ truncated: true }), truncated: true };
}

function asObject(x: unknown): Record<string, unknown> | undefined {
  return x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : undefined;
}

function pick(obj: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (typeof obj[k] === 'string') out[k] = obj[k];
  return out;
}
