// The one typed error of the gateway. Every failure a client can see is a GatewayError carrying
// a catalogue entry, named (./catalogue.ts); engine/http/answer.ts renders it as RFC 9457.
// Nothing else reaches a client.
import { CATALOGUE, type ErrorCode, type ErrorName } from './catalogue.ts';

/** One invalid input, as a JSON pointer into the request (or `/path/<name>` for path parameters). */
export interface FieldError {
  pointer: string;
  detail: string;
  code?: number;
}

export interface GatewayErrorOptions {
  /** Instead of the entry's status (a proxied provider's own 4xx status, kept for the client). */
  status?: number;
  errors?: FieldError[];
  headers?: Record<string, string>;
  /** RFC 9457 extension members the problem body carries beside the standard ones. */
  extensions?: Record<string, unknown>;
  cause?: unknown;
}

export class GatewayError extends Error {
  /** The catalogue entry. */
  readonly errorName: ErrorName;
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly errors: FieldError[];
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(name: ErrorName, detail: string, opts: GatewayErrorOptions = {}) {
    super(detail, opts.cause === undefined ? undefined : { cause: opts.cause });
    const entry = CATALOGUE[name];
    this.name = 'GatewayError';
    this.errorName = name;
    this.code = entry.code;
    this.status = opts.status ?? entry.status;
    this.title = entry.title;
    this.detail = detail;
    this.errors = opts.errors ?? [];
    this.headers = opts.headers ?? {};
    this.extensions = opts.extensions ?? {};
  }

  /** The `{code, title, detail}` object carried in `task_info.error`. */
  toTaskError(): TaskError {
    return { code: this.code, title: this.title, detail: this.detail };
  }
}

export interface TaskError {
  code: number;
  title: string;
  detail: string;
}

export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}

/** Seconds a client is asked to wait before retrying a request refused for an unavailable dependency. */
export const DEPENDENCY_RETRY_AFTER_S = 1;

/**
 * A dependency the request needs (the store, the job queue, the rate-limit counters) cannot be
 * reached now: 503 / 4003 with Retry-After. The adapters raise it for every transport failure,
 * so a request is refused, never queued behind a reconnect. Nothing of the refused request is
 * done later (a create that may have been half-written is withdrawn: engine/tasks/submit.ts).
 */
export function dependencyUnavailable(dependency: string, cause?: unknown): GatewayError {
  return new GatewayError('dependencyUnavailable', `Unavailable now: the gateway's ${dependency}. Retry after the time in Retry-After.`, {
    headers: { 'Retry-After': String(DEPENDENCY_RETRY_AFTER_S) },
    cause,
  });
}

export function isDependencyUnavailable(err: unknown): boolean {
  return err instanceof GatewayError && err.errorName === 'dependencyUnavailable';
}
