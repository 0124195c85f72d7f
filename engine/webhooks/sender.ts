// One delivery attempt: sign with a fresh timestamp and POST the stored body. Runs inside a
// Piscina worker (worker.ts) so signing and socket work stay off the API's event loop.
//
// The HTTPS client is one undici Agent per worker: it trusts what Node trusts plus the
// configured extra CAs, never follows redirects (plain `request` has no redirect interceptor),
// and resolves hosts through the SSRF guard, so every connection lands on an allowed address.
import { createSecureContext, getCACertificates } from 'node:tls';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { deadline } from '../util/deadline.ts';
import { signPayload, HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP } from './signature.ts';
import { AddressPolicy, guardedLookup, hostOf } from './ssrf.ts';

export interface SenderOptions {
  userAgent: string;
  caPem: string[];
  allowPrivateCidrs: string[];
  /** Upper bound for establishing a connection (the attempt timeout). */
  connectTimeoutMs: number;
}

export interface SendTask {
  url: string;
  secret: string;
  deliveryId: string;
  body: string;
  /**
   * The gateway clock minus this thread's Date.now() when the task was queued: the worker
   * signs "now" on the gateway's clock (an injected test clock included) at the moment it
   * actually sends, however long the task waited in the pool.
   */
  clockOffsetMs: number;
  timeoutMs: number;
  /** Traced: the attempt's span, sent as `traceparent` so the receiver can join the trace. */
  traceparent?: string;
  /**
   * The latest start (gateway clock) that keeps the endpoint's rate limit: a send of a reserved
   * slot that starts later is not made (`missed_by_ms`). Checked here, where `started_at` is
   * taken, because the wait before it (the scheduler's timer, this pool's queue) is unbounded
   * on a busy machine.
   */
  notAfter?: number;
}

export interface SendResult {
  /** True for a 2xx within the timeout. */
  ok: boolean;
  /** When the attempt started (and was signed), gateway clock, ms. */
  started_at: number;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  /** Set when nothing was sent: the attempt started this long after `notAfter`. */
  missed_by_ms?: number;
}

export interface Sender {
  send(task: SendTask): Promise<SendResult>;
  close(): Promise<void>;
}

const MAX_ERROR_CHARS = 300;

export function createSender(opts: SenderOptions): Sender {
  const policy = AddressPolicy.fromCidrs(opts.allowPrivateCidrs);
  // One secure context for all connections: passing `ca` per connection would re-parse the
  // ~150 root certificates on every TLS handshake (milliseconds each, on this thread).
  // A `ca` option replaces Node's store rather than adding to it, so start from the store
  // Node's own clients use ('default': the bundled roots, NODE_EXTRA_CA_CERTS, and the system
  // store under --use-system-ca), not from tls.rootCertificates, which is only the bundled
  // roots: an operator who trusts a private CA the standard Node way must not have to repeat
  // it in webhooks.ca_pem.
  const secureContext = createSecureContext({ ca: [...getCACertificates('default'), ...opts.caPem] });
  const agent = new Agent({
    allowH2: false,
    connect: {
      secureContext,
      lookup: guardedLookup(policy),
      timeout: opts.connectTimeoutMs,
    },
  });

  async function send(task: SendTask): Promise<SendResult> {
    const startedAt = Date.now() + task.clockOffsetMs;
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const result = (r: Omit<SendResult, 'started_at' | 'latency_ms'>): SendResult => ({ ...r, started_at: startedAt, latency_ms: elapsed() });
    const url = new URL(task.url);
    const timestampSec = Math.floor(startedAt / 1000);
    if (task.notAfter !== undefined && startedAt > task.notAfter) {
      return result({ ok: false, status_code: null, error: null, missed_by_ms: startedAt - task.notAfter });
    }

    // An IP literal never goes through lookup, so the guard is applied here.
    const host = hostOf(url);
    if (isIP(host) !== 0) {
      const why = policy.refusal(host);
      if (why) return result({ ok: false, status_code: null, error: `destination refused: ${why}` });
    }

    const limit = deadline(task.timeoutMs);
    const signal = limit.signal;
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: agent,
        signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': opts.userAgent,
          [HEADER_ID]: task.deliveryId,
          [HEADER_TIMESTAMP]: String(timestampSec),
          [HEADER_SIGNATURE]: signPayload(task.secret, task.deliveryId, timestampSec, task.body),
          ...(task.traceparent ? { traceparent: task.traceparent } : undefined),
        },
        body: task.body,
      });
      const status = res.statusCode;
      const outcome = status >= 200 && status < 300
        ? result({ ok: true, status_code: status, error: null })
        : result({ ok: false, status_code: status, error: status >= 300 && status < 400 ? `redirect (HTTP ${status}) not followed` : `HTTP ${status}` });
      // The status decides; the body is read (bounded, within the same deadline) only to free the connection.
      res.body.dump({ limit: 64 * 1024 }).catch(() => {}).finally(limit.clear);
      return outcome;
    } catch (err) {
      limit.clear();
      return result({ ok: false, status_code: null, error: signal.aborted ? `timeout: no response within ${task.timeoutMs} ms` : describe(err) });
    }
  }

  return { send, close: () => agent.close() };
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: unknown; errors?: unknown[] };
  // undici and net wrap the interesting error (e.g. our DestinationRefusedError) in causes.
  if (e?.cause) return describe(e.cause);
  if (Array.isArray(e?.errors) && e.errors.length > 0) return describe(e.errors[0]);
  const text = e?.code === 'EDESTREFUSED' ? (e.message ?? '') : `${e?.code ?? 'error'}: ${e?.message ?? String(err)}`;
  return text.slice(0, MAX_ERROR_CHARS);
}
