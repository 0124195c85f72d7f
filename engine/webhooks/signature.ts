// Webhook signatures (spec "Events" → "Signature"): HMAC-SHA256 over
// `<delivery id>.<timestamp>.<raw body>`, hex encoded, sent as `v1=<hex>`.
//
// The HMAC key is the endpoint secret exactly as shown to the user — the full `whsec_...`
// string, UTF-8 encoded, prefix included. We do not base64-decode the part after the prefix
// (as some providers do) because the spec says "key = the endpoint secret (`whsec_...`)" and a
// receiver should be able to verify with nothing but the string they copied from the console.
//
// This file is also the whole of the receivers' package, packages/webhooks (compiled from here
// so the gateway signs and receivers verify with the same code): it may import only `node:`
// built-ins that Node 18 has, and what it exports is that package's public API.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_VERSION = 'v1';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export const HEADER_ID = 'X-Service-Webhook-Id';
export const HEADER_TIMESTAMP = 'X-Service-Webhook-Timestamp';
export const HEADER_SIGNATURE = 'X-Service-Webhook-Signature';

/** `v1=<hex HMAC-SHA256(secret, "<id>.<ts>.<rawBody>")>`. The body is hashed as raw bytes. */
export function signPayload(secret: string, deliveryId: string, timestampSec: number, rawBody: Buffer | string): string {
  const hmac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  hmac.update(`${deliveryId}.${timestampSec}.`, 'utf8');
  hmac.update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody);
  return `${SIGNATURE_VERSION}=${hmac.digest('hex')}`;
}

export type VerificationFailure = 'missing_header' | 'bad_prefix' | 'timestamp_skew' | 'bad_signature' | 'bad_json';

export class WebhookVerificationError extends Error {
  readonly reason: VerificationFailure;
  constructor(reason: VerificationFailure, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

export interface VerifyOptions {
  /** Largest accepted distance between the signed timestamp and now, either way. Default 300. */
  toleranceSeconds?: number;
  /** Current time in milliseconds. Default `Date.now`. */
  now?: () => number;
}

export type HeaderBag = Record<string, string | string[] | undefined>;

/**
 * Verify a delivery exactly as received and return its parsed JSON event. Throws
 * WebhookVerificationError. Order of checks: headers present → `v1=` prefix → signature
 * (constant time) → timestamp within tolerance → JSON. The signature is checked before the
 * timestamp so that `timestamp_skew` always means "authentic, but too old or too new"
 * (a replay or a wrong clock), never "forged".
 */
export function verifyWebhook(rawBody: Buffer | string, headers: HeaderBag, secret: string, opts: VerifyOptions = {}): unknown {
  const id = headerValue(headers, HEADER_ID);
  const timestamp = headerValue(headers, HEADER_TIMESTAMP);
  const signature = headerValue(headers, HEADER_SIGNATURE);
  if (!id || !timestamp || !signature) {
    const missing = [[HEADER_ID, id], [HEADER_TIMESTAMP, timestamp], [HEADER_SIGNATURE, signature]]
      .filter(([, v]) => !v)
      .map(([name]) => name);
    throw new WebhookVerificationError('missing_header', `missing header(s): ${missing.join(', ')}`);
  }

  const prefix = `${SIGNATURE_VERSION}=`;
  if (!signature.startsWith(prefix)) {
    throw new WebhookVerificationError('bad_prefix', `unsupported signature version (only ${prefix} is accepted)`);
  }

  if (!/^\d{1,12}$/.test(timestamp)) {
    throw new WebhookVerificationError('timestamp_skew', 'timestamp is not a Unix time in seconds');
  }
  const ts = Number(timestamp);

  const received = signature.slice(prefix.length);
  const expected = signPayload(secret, id, ts, rawBody).slice(prefix.length);
  if (!constantTimeHexEqual(received, expected)) {
    throw new WebhookVerificationError('bad_signature', 'signature does not match');
  }

  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowSec = Math.floor((opts.now ?? Date.now)() / 1000);
  if (Math.abs(nowSec - ts) > tolerance) {
    throw new WebhookVerificationError('timestamp_skew', `timestamp is ${nowSec - ts} s from now (tolerance ${tolerance} s)`);
  }

  try {
    return JSON.parse(typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('bad_json', 'body is not valid JSON');
  }
}

/** Case-insensitive header lookup; a repeated header counts by its first value. */
function headerValue(headers: HeaderBag, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted) continue;
    const v = Array.isArray(value) ? value[0] : value;
    if (v !== undefined && v !== '') return v;
  }
  return undefined;
}

/** Compare two hex digests in constant time; lengths (public knowledge: 64) are checked first. */
function constantTimeHexEqual(received: string, expected: string): boolean {
  if (received.length !== expected.length || !/^[0-9a-fA-F]+$/.test(received)) return false;
  const a = Buffer.from(received.toLowerCase(), 'hex');
  const b = Buffer.from(expected, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
