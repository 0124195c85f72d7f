// Raw HTTP/1.1 over a TCP socket, for what fetch cannot send: malformed framing, bad chunked
// encoding, truncated bodies, oversized request lines, slow senders.
import { connect } from 'node:net';

export interface RawPart {
  status: number;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  body: string;
}

export interface RawAnswer extends RawPart {
  /** The first final answer (status 0 when there was none), then every final (non-1xx) one. */
  answers: RawPart[];
  /** Everything received, as latin1. */
  all: string;
  /** The server closed the connection before `timeoutMs`. */
  closed: boolean;
  /** Neither closed nor done (`answers` complete answers) within `timeoutMs`. */
  timedOut: boolean;
  ms: number;
}

export interface RawOptions {
  /**
   * Half-close after writing, so the server sees the end of the request stream (a truncated
   * body is then refused at once). Node's server treats a half-close as the client leaving:
   * requests still being answered are dropped, so a well-framed request waits for `answers`.
   */
  end?: boolean;
  /** Done once this many complete final answers have arrived (default: wait for the close). */
  answers?: number;
  timeoutMs?: number;
  /** Written after `data`, one item every `everyMs` (a slow sender). */
  drip?: { parts: (string | Buffer)[]; everyMs: number };
}

/** Send `data` on a fresh connection and collect what comes back until the server closes it (or `answers` arrived). */
export function rawRequest(url: string, data: string | Buffer, opts: RawOptions = {}): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const t0 = Date.now();
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let drip: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (closed: boolean, answered = false) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(drip);
      socket.destroy();
      const all = Buffer.concat(chunks).toString('latin1');
      const answers = splitAnswers(all, closed);
      resolve({ ...(answers[0] ?? { status: 0, headers: {}, body: '' }), answers, all, closed, timedOut: !closed && !answered, ms: Date.now() - t0 });
    };
    const timer = setTimeout(() => finish(false), opts.timeoutMs ?? 5000);
    socket.on('data', (c) => {
      chunks.push(c);
      if (opts.answers && splitAnswers(Buffer.concat(chunks).toString('latin1')).length >= opts.answers) finish(false, true);
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => {});
    socket.write(data);
    if (opts.drip) {
      const parts = [...opts.drip.parts];
      drip = setInterval(() => {
        const next = parts.shift();
        if (next === undefined) clearInterval(drip);
        else if (!socket.destroyed) socket.write(next);
      }, opts.drip.everyMs);
    }
    if (opts.end) socket.end();
  });
}

/** The complete final answers at the start of `all` (1xx interim answers skipped); `closed`: the connection ended. */
export function splitAnswers(all: string, closed = false): RawPart[] {
  const out: RawPart[] = [];
  let rest = all;
  for (;;) {
    const m = /^HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/.exec(rest);
    const headEnd = rest.indexOf('\r\n\r\n');
    if (!m || headEnd === -1) return out;
    const status = Number(m[1]);
    const headers: Record<string, string> = {};
    for (const line of rest.slice(m[0].length, headEnd).split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const start = headEnd + 4;
    let end: number;
    let body: Buffer;
    if (status < 200) {
      rest = rest.slice(start);
      continue;
    } else if (headers['transfer-encoding'] === 'chunked') {
      const decoded = dechunk(rest, start);
      if (!decoded) return out;
      ({ end, body } = decoded);
    } else if (headers['content-length'] !== undefined) {
      end = start + Number(headers['content-length']);
      if (rest.length < end) return out;
      body = Buffer.from(rest.slice(start, end), 'latin1');
    } else if (closed) {
      end = rest.length; // delimited by the close (an HTTP/1.0 answer)
      body = Buffer.from(rest.slice(start), 'latin1');
    } else {
      return out;
    }
    out.push({ status, headers, body: body.toString('utf8') });
    rest = rest.slice(end);
  }
}

function dechunk(s: string, at: number): { end: number; body: Buffer } | undefined {
  const parts: Buffer[] = [];
  for (;;) {
    const eol = s.indexOf('\r\n', at);
    if (eol === -1) return undefined;
    const size = parseInt(s.slice(at, eol), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) {
      const end = s.indexOf('\r\n\r\n', eol);
      return end === -1 ? undefined : { end: end + 4, body: Buffer.concat(parts) };
    }
    if (s.length < eol + 2 + size + 2) return undefined;
    parts.push(Buffer.from(s.slice(eol + 2, eol + 2 + size), 'latin1'));
    at = eol + 2 + size + 2;
  }
}
