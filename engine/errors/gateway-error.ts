// The one typed error of the gateway. Every failure a client can see is a GatewayError carrying
// a service code; engine/http/problem.ts renders it as RFC 9457. Nothing else reaches a client.
import { entryFor, type ErrorCode } from './catalogue.ts';

/** One invalid input, as a JSON pointer into the request (or `/path/<name>` for path parameters). */
export interface FieldError {
  pointer: string;
  detail: string;
  code?: number;
}

export interface GatewayErrorOptions {
  status?: number;
  title?: string;
  errors?: FieldError[];
  headers?: Record<string, string>;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly code: ErrorCode | number;
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly errors: FieldError[];
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode | number, detail: string, opts: GatewayErrorOptions = {}) {
    super(detail, opts.cause === undefined ? undefined : { cause: opts.cause });
    const entry = entryFor(code);
    this.name = 'GatewayError';
    this.code = code;
    this.status = opts.status ?? entry.status;
    this.title = opts.title ?? entry.title;
    this.detail = detail;
    this.errors = opts.errors ?? [];
    this.headers = opts.headers ?? {};
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
