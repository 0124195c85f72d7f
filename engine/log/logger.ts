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

/** Lines held before a turn ends are written at once past this many. */
const MAX_BATCH_LINES = 512;
let stdoutBatcher: (pino.DestinationStream & { flush(): void }) | undefined;

/**
 * stdout written once per event-loop turn: the lines logged during a turn go out in one
 * write(2) after it (sonic-boom, synchronous: it handles partial writes and EAGAIN). A write
 * per line cost ~20 µs of a proxied request under load, and sonic-boom's asynchronous mode
 * (a thread-pool write) costs more than it saves. Nothing waits: at low traffic each line is
 * written at the end of its own turn. Held lines are written at exit; a kill -9 loses at most
 * one turn's lines. One batcher for the process, shared by every logger writing to stdout.
 */
function batchedStdout(): pino.DestinationStream & { flush(): void } {
  if (stdoutBatcher) return stdoutBatcher;
  const out = pino.destination({ dest: 1, sync: true });
  let lines: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
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
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
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
