// W3C Trace Context: continue a valid incoming `traceparent` with a new span id (ours), else
// start a new trace. The result is on every response, in every log line, and sent upstream.
import { randomHex } from '../util/ids.ts';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

export interface Trace {
  traceId: string;
  traceparent: string;
}

export function continueTrace(incoming: string | undefined): Trace {
  const m = incoming ? TRACEPARENT.exec(incoming.trim().toLowerCase()) : null;
  const valid = m && m[1] !== 'ff' && !(m[1] === '00' && m[5]) && !/^0+$/.test(m[2]!) && !/^0+$/.test(m[3]!);
  const traceId = valid ? m[2]! : randomHex(16);
  const flags = valid ? m[4]! : '01';
  return { traceId, traceparent: `00-${traceId}-${randomHex(8)}-${flags}` };
}
