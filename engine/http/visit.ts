// One request's trip through the front door: what the door's answer and its access line need
// to know about it, filled in by the handler as it learns it. A class, not an object of
// closures: every request has one, and its two readers as closures were a context and two
// functions more per request (and a shape that changed as the handler filled it in).
import type { IncomingMessage } from 'node:http';
import { clientAddress } from './client-address.ts';
import { readBody, type BodyPolicy, type RequestBody } from './request-body.ts';
import type { Trace } from './traceparent.ts';

export class Visit {
  readonly trace: Trace;
  /** performance.now() when the request came in. */
  readonly t0: number;
  /** The request path without its query (a credential in it masked). */
  readonly path: string;
  /** The route key of the descriptor route serving it. */
  route: string | undefined = undefined;
  tenantId: string | undefined = undefined;
  /** A refused create of a route like video model A: a 400 answers with a task_info-shaped body. */
  taskInfoErrors = false;
  /** The handler writes its own (richer) access line (the proxy exchange). */
  logged = false;
  private readonly req: IncomingMessage;
  private readonly policy: BodyPolicy | undefined;
  private readonly trustProxy: boolean;
  private read: Promise<RequestBody> | undefined = undefined;

  constructor(req: IncomingMessage, trace: Trace, t0: number, path: string, policy: BodyPolicy | undefined, trustProxy: boolean) {
    this.req = req;
    this.trace = trace;
    this.t0 = t0;
    this.path = path;
    this.policy = policy;
    this.trustProxy = trustProxy;
  }

  /** The client's address (engine/http/client-address.ts, server.trust_proxy), worked out when asked. */
  clientAddress(): string {
    return clientAddress(this.req, this.trustProxy);
  }

  /** The request body, read under the route's body policy; every call after the first answers the first call's promise. */
  readBody(): Promise<RequestBody> {
    return (this.read ??= readBody(this.req, this.policy));
  }
}
