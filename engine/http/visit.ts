// One request's trip through the front door: what the door's answer and its access line need
// to know about it, filled in by the handler as it learns it.
import type { BodyReader } from './request-body.ts';
import type { Trace } from './traceparent.ts';

export interface Visit {
  readonly trace: Trace;
  /** performance.now() when the request came in. */
  readonly t0: number;
  /** The request path without its query. */
  readonly path: string;
  /** The client's address (engine/http/client-address.ts, server.trust_proxy), worked out when asked. */
  clientAddress?(): string;
  /** The request body, read (at most once) under the route's body policy. */
  readonly readBody: BodyReader;
  /** The route key of the descriptor route serving it. */
  route?: string;
  tenantId?: string;
  /** A refused create of a route like video model A: a 400 answers with a task_info-shaped body. */
  taskInfoErrors?: boolean;
  /** The handler writes its own (richer) access line (the proxy exchange). */
  logged?: boolean;
}
