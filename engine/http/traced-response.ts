// The gateway's HTTP responses (the server's ServerResponse class): a data-plane answer's
// Traceparent goes out in the head its route writes, not set on the response beforehand.
//
// Why: node's writeHead(status, headers) sends a head as it is given, unless a header was set
// with setHeader first; then it sets every header of the head one by one (a name check, a value
// check, a lower-casing and an entry each) and merges. The front door's setHeader('Traceparent')
// at a request's start sent every proxied answer that way: about 1 µs a sync chat (an
// in-process micro-benchmark, 0.8–2.0 µs against 0.8–1.1 µs per head), 1.1% of its CPU profile.
// The control plane keeps setHeader: express replaces a response's prototype with its own (this
// class's writeHead is then not the one called) and writes its headers one by one anyway.
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';
import { ServerResponse } from '../util/node-http.ts';

export class TracedResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** The request's Traceparent (engine/http/traceparent.ts), written with the head. */
  traceparent: string | undefined;

  override writeHead(statusCode: number, reason?: string | OutgoingHttpHeaders | OutgoingHttpHeader[], headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this {
    const tp = this.traceparent;
    if (tp === undefined) return super.writeHead(statusCode, reason as string, headers);
    const given = typeof reason === 'string' ? headers : reason;
    // A head given as an object (every data-plane answer): the header joins it, so node keeps its
    // fast path; the gateway's own value wins over one a route passed through. Else (an implicit
    // head after setHeader calls, or raw header pairs): set as before.
    if (given !== undefined && !Array.isArray(given)) {
      const head = { ...given, traceparent: tp };
      return typeof reason === 'string' ? super.writeHead(statusCode, reason, head) : super.writeHead(statusCode, head);
    }
    this.setHeader('traceparent', tp);
    return typeof reason === 'string' ? super.writeHead(statusCode, reason, given) : super.writeHead(statusCode, given);
  }
}
