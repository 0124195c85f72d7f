// The one classifier of upstream calls that got no HTTP answer at all (network, timeout), for
// the async client (client.ts) and the proxy's raw dispatch alike. It checks what undici throws
// by type (its error classes, the abort signal's TimeoutError, the socket's errno code), never by
// message, and answers with a typed UpstreamFailure.
import { errors } from 'undici';
import { UpstreamFailure, type UpstreamStage } from './failure.ts';

/** The upstream did not answer (connect, headers or body) within its timeout: 3004. */
export class UpstreamTimeout extends UpstreamFailure {
  constructor(stage: UpstreamStage) {
    super('upstreamTimeout', 'The provider did not answer in time.', stage);
    this.name = 'UpstreamTimeout';
  }
}

/** The upstream could not be reached or dropped the connection: 3001. */
export class UpstreamUnreachable extends UpstreamFailure {
  /** The system or undici error code (ECONNREFUSED, UND_ERR_SOCKET, ...), when there was one. */
  readonly networkCode: string | undefined;
  constructor(stage: UpstreamStage, code: string | undefined) {
    super('upstreamUnavailable', `The provider could not be reached (${code || 'connection failed'}).`, stage);
    this.name = 'UpstreamUnreachable';
    this.networkCode = code;
  }
}

function isTimeout(err: unknown): boolean {
  return err instanceof errors.HeadersTimeoutError
    || err instanceof errors.BodyTimeoutError
    || err instanceof errors.ConnectTimeoutError
    // AbortSignal.timeout() rejects with a DOMException named TimeoutError.
    || (err instanceof DOMException && err.name === 'TimeoutError')
    || (err as NodeJS.ErrnoException | null)?.code === 'ETIMEDOUT';
}

/** An UpstreamFailure stays as it is (the caller aborted with it); anything else is classified. */
export function classifyNetworkError(err: unknown, stage: UpstreamStage): UpstreamFailure {
  if (err instanceof UpstreamFailure) return err;
  if (isTimeout(err)) return new UpstreamTimeout(stage);
  const code = (err as { code?: unknown } | null)?.code;
  return new UpstreamUnreachable(stage, typeof code === 'string' ? code : undefined);
}
