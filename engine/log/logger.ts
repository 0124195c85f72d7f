// pino, one JSON line per event; API keys, secrets and auth headers redacted wherever they appear.
import pino, { type Logger, type LevelWithSilent } from 'pino';
import { isoAt } from '../util/clock.ts';

export const REDACT_PATHS = [
  'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
  'key', '*.key', 'secret', '*.secret', 'api_key', '*.api_key', 'token', '*.token',
  'credentials', '*.credentials', 'headers["mj-api-secret"]', '*.headers["mj-api-secret"]',
];

export function createLogger(level: LevelWithSilent, destination: pino.DestinationStream = batchedStdout()): Logger {
  return pino({ level, base: { service: 'model-gateway' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, timestamp: isoTimestamp }, destination);
}

// pino's isoTime, with the text formatted once per millisecond.
const isoTimestamp = () => `,"time":"${isoAt(Date.now())}"`;

/** Lines are held at most this long, and written at once past MAX_BATCH_LINES. */
const FLUSH_MS = 10;
const MAX_BATCH_LINES = 512;
let stdoutBatcher: (pino.DestinationStream & { flush(): void }) | undefined;

/**
 * stdout written in batches: the lines logged within FLUSH_MS go out in one write(2)
 * (sonic-boom, synchronous: it handles partial writes and EAGAIN). A write per line cost ~20 µs
 * of a proxied request under load, a write per event-loop turn still ~2.5 µs (a turn holds one
 * or two requests), and sonic-boom's asynchronous mode (a thread-pool write) costs more than it
 * saves. Nothing waits on the write: a line is at most FLUSH_MS late. Held lines are written at
 * exit; a kill -9 loses at most FLUSH_MS of lines. One batcher for the process, shared by every
 * logger writing to stdout.
 */
function batchedStdout(): pino.DestinationStream & { flush(): void } {
  if (stdoutBatcher) return stdoutBatcher;
  const out = pino.destination({ dest: 1, sync: true });
  let lines: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (lines.length === 0) return;
    const text = lines.join('');
    lines = [];
    out.write(text);
  };
  process.once('exit', flush);
  stdoutBatcher = {
    write(line: string) {
      lines.push(line);
      if (lines.length >= MAX_BATCH_LINES) flush();
      // unref: a pending batch never keeps the process alive (the exit handler writes it).
      else timer ??= setTimeout(flush, FLUSH_MS).unref();
    },
    flush,
  };
  return stdoutBatcher;
}

/**
 * The per-request access log: its fields are fixed and never hold a secret, so it skips the
 * root logger's wildcard redaction (about 15 µs a line) and redacts top-level names only.
 */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: ['authorization', 'key', 'api_key', 'token', 'secret'], censor: '[redacted]' } });
}
