// The body of a data-plane request, read by the front door's one reader under the policy its
// route-table entry declares (JSON, or JSON with large media parsed in the media pool). The door
// hands each handler a reader that reads at most once; the handler decides when (a create reads
// JSON before authenticating, so a malformed body is named first; media bodies and proxied chat
// after, so an unauthenticated caller costs no upload or pool work).
import type { IncomingMessage } from 'node:http';
import type { MediaRule } from '../media/checks.ts';
import { readMediaBody } from './media-body.ts';
import { hasBody, parseJsonObject, readJsonBody } from './raw-body.ts';

export type BodyPolicy =
  | { kind: 'json'; limit: number }
  | { kind: 'media'; limit: number; rules: readonly MediaRule[] };

export interface RequestBody {
  /** The bytes as sent (JSON policy only; the proxy forwards them unparsed when it can). */
  raw?: Buffer;
  /** The parsed body; undefined when the request has none. */
  json: unknown;
  /** Media blobs the body holds (media policy): released by the caller unless a task takes them. */
  tokens?: string[];
}

/** The body under `policy` (read once per request: ./visit.ts keeps the promise). */
// Not async: a chat reads its body on every request, and each async layer is a promise more.
export function readBody(req: IncomingMessage, policy: BodyPolicy | undefined): Promise<RequestBody> {
  if (!policy || !hasBody(req)) {
    req.resume();
    return Promise.resolve({ json: undefined });
  }
  if (policy.kind === 'media') return readMediaBody(req, policy.limit, policy.rules).then((parsed) => ({ json: parsed?.body, tokens: parsed?.tokens }));
  return readJsonBody(req, policy.limit).then((raw) => ({ raw, json: parseJsonObject(raw) }));
}
