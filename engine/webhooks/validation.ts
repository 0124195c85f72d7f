// Validation of endpoint create/update bodies, table-driven by field. Every problem becomes a
// FieldError with its own code; the error thrown carries the most basic code found:
// 2002 (missing) before 2001 (wrong type/format/enum) before 2003 (rejected value).
import { errorNamed } from '../errors/catalogue.ts';
import { GatewayError, type FieldError } from '../errors/gateway-error.ts';
import { EVENT_TYPES, type EventType } from '../events/types.ts';

export const MAX_URL_CHARS = 2048;
export const MAX_DESCRIPTION_CHARS = 200;

export interface EndpointFields {
  url?: string;
  events?: EventType[];
  description?: string | null;
  enabled?: boolean;
}

const FIELDS = ['url', 'events', 'description', 'enabled'] as const;

/** Check the body; `create` requires url and events. Returns the well-formed fields. */
export function parseEndpointInput(input: unknown, mode: 'create' | 'update'): EndpointFields {
  const errors: FieldError[] = [];
  const err = (code: number, pointer: string, detail: string) => errors.push({ pointer, detail, code });

  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw fail([{ pointer: '', detail: 'The body must be a JSON object.', code: 2001 }]);
  }
  const body = input as Record<string, unknown>;
  const out: EndpointFields = {};

  for (const key of Object.keys(body)) {
    if (!(FIELDS as readonly string[]).includes(key)) err(2001, `/${escape(key)}`, `Unknown field ${key}; allowed: ${FIELDS.join(', ')}.`);
  }

  if (body.url === undefined) {
    if (mode === 'create') err(2002, '/url', 'url is required.');
  } else {
    const problem = urlProblem(body.url);
    if (problem) err(problem.code, '/url', problem.detail);
    else out.url = body.url as string;
  }

  if (body.events === undefined) {
    if (mode === 'create') err(2002, '/events', 'events is required: one or more event types.');
  } else if (!Array.isArray(body.events)) {
    err(2001, '/events', 'events must be an array of event types.');
  } else if (body.events.length === 0) {
    err(2002, '/events', 'events must name at least one event type.');
  } else {
    const seen = new Set<string>();
    body.events.forEach((e: unknown, i: number) => {
      if (typeof e !== 'string' || !(EVENT_TYPES as readonly string[]).includes(e)) {
        err(2001, `/events/${i}`, `Unknown event type ${JSON.stringify(e)}; allowed: ${EVENT_TYPES.join(', ')}.`);
      } else if (seen.has(e)) {
        err(2001, `/events/${i}`, `Duplicate event type ${e}.`);
      }
      if (typeof e === 'string') seen.add(e);
    });
    out.events = body.events as EventType[];
  }

  if (body.description !== undefined && body.description !== null) {
    if (typeof body.description !== 'string') err(2001, '/description', 'description must be a string.');
    else if ([...body.description].length > MAX_DESCRIPTION_CHARS) err(2003, '/description', `description is at most ${MAX_DESCRIPTION_CHARS} characters.`);
    else out.description = body.description;
  } else if (body.description === null) {
    out.description = null;
  }

  if (body.enabled !== undefined) {
    if (typeof body.enabled !== 'boolean') err(2001, '/enabled', 'enabled must be a boolean.');
    else out.enabled = body.enabled;
  }

  if (errors.length > 0) throw fail(errors);
  return out;
}

function urlProblem(value: unknown): { code: number; detail: string } | null {
  if (typeof value !== 'string') return { code: 2001, detail: 'url must be a string.' };
  if (value.length > MAX_URL_CHARS) return { code: 2003, detail: `url is at most ${MAX_URL_CHARS} characters.` };
  if (!URL.canParse(value)) return { code: 2001, detail: 'url is not a valid absolute URL.' };
  const url = new URL(value);
  if (url.protocol !== 'https:') return { code: 2001, detail: 'url must use https.' };
  if (url.username || url.password) return { code: 2001, detail: 'url must not contain credentials.' };
  if (!url.hostname) return { code: 2001, detail: 'url has no host.' };
  return null;
}

/** One GatewayError for a list of field errors (see the header for which code leads). */
export function fail(errors: FieldError[]): GatewayError {
  const rank = (code: number | undefined) => [2002, 2001, 2003].indexOf(code ?? 2001);
  const lead = [...errors].sort((a, b) => rank(a.code) - rank(b.code))[0]!;
  const detail = errors.length === 1 ? lead.detail : `${lead.detail} (${errors.length} problems; see errors)`;
  return new GatewayError(errorNamed(lead.code ?? 2001), detail, { errors });
}

/** RFC 6901 escaping of one pointer segment. */
function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
