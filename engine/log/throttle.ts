// A repeated failure is logged at most once per interval (a second by default), with a count,
// instead of once per occurrence: when Redis refuses writes, every job, delivery and submission
// fails the same way, and a line per job (about 1,300 per fault window, measured) buries the
// one line an operator needs. Occurrences are grouped by level, message and the error's kind
// (its service code, Redis error code or class name), so a different failure still gets its
// own line at once. The first occurrence is written at once; later ones within the interval are
// counted, and the count goes out with the next line of the group, or with the newest held
// occurrence once the interval has passed and no new one came (`repeated`: how many more
// occurred since the group's previous line than the line itself; `repeated_ms`: over how long).
// So lines plus their `repeated` are every occurrence. Each line names its group's kind
// (`error_kind`), so a reader can tell two groups of one message apart. Used by every site that
// logs per job or per request on a failure of the store or of a dependency.
import type { Logger } from 'pino';

type Level = 'warn' | 'error';

interface Group {
  /** When the group's last line was written. */
  lastAt: number;
  /** Occurrences held back since that line. */
  held: number;
  /** The fields of the newest held occurrence, written with the count when no new one comes. */
  fields?: Record<string, unknown>;
  timer?: NodeJS.Timeout;
}

/** Groups kept at most; past it the oldest (by insertion) is flushed and dropped. */
const MAX_GROUPS = 1000;

export class ThrottledLog {
  private readonly groups = new Map<string, Group>();
  private readonly logger: Logger;
  private readonly intervalMs: number;

  constructor(logger: Logger, intervalMs = 1000) {
    this.logger = logger;
    this.intervalMs = intervalMs;
  }

  warn(fields: Record<string, unknown>, msg: string): void {
    this.log('warn', fields, msg);
  }

  error(fields: Record<string, unknown>, msg: string): void {
    this.log('error', fields, msg);
  }

  log(level: Level, fields: Record<string, unknown>, msg: string): void {
    const kind = kindOf(fields.err);
    const key = `${level}\u0000${msg}\u0000${kind}`;
    const now = Date.now();
    let g = this.groups.get(key);
    if (!g) {
      if (this.groups.size >= MAX_GROUPS) this.evictOldest();
      g = { lastAt: 0, held: 0 };
      this.groups.set(key, g);
    }
    if (now - g.lastAt >= this.intervalMs) {
      this.write(level, msg, g, { ...fields, error_kind: kind }, now);
      return;
    }
    g.held++;
    g.fields = { ...fields, error_kind: kind };
    // The count of a burst that stops goes out once the interval is over.
    g.timer ??= setTimeout(() => this.flush(level, msg, key), g.lastAt + this.intervalMs - now).unref();
  }

  /** Writes every held count now (shutdown). */
  flushAll(): void {
    for (const key of [...this.groups.keys()]) {
      const [level, msg] = key.split('\u0000') as [Level, string];
      this.flush(level, msg, key);
    }
  }

  private flush(level: Level, msg: string, key: string): void {
    const g = this.groups.get(key);
    if (!g) return;
    if (g.timer) clearTimeout(g.timer);
    g.timer = undefined;
    // The newest held occurrence is the line itself: the others are its count.
    if (g.held > 0) {
      g.held--;
      this.write(level, msg, g, g.fields ?? {}, Date.now());
    }
  }

  private write(level: Level, msg: string, g: Group, fields: Record<string, unknown>, now: number): void {
    const extra = g.held > 0 ? { repeated: g.held, repeated_ms: now - g.lastAt } : {};
    this.logger[level]({ ...fields, ...extra }, msg);
    if (g.timer) clearTimeout(g.timer);
    g.timer = undefined;
    g.lastAt = now;
    g.held = 0;
    g.fields = undefined;
  }

  private evictOldest(): void {
    const [key] = this.groups.keys();
    if (key === undefined) return;
    const [level, msg] = key.split('\u0000') as [Level, string];
    this.flush(level, msg, key);
    this.groups.delete(key);
  }
}

/** An error's kind for grouping: its service code, Redis error code, or class name. */
function kindOf(err: unknown): string {
  if (!(err instanceof Error)) return typeof err;
  const code = (err as { code?: unknown }).code;
  const cause = err.cause instanceof Error ? `/${kindOf(err.cause)}` : '';
  if (code !== undefined) return `${String(code)}${cause}`;
  const reply = /^[A-Z]{3,}\b/.exec(err.message)?.[0];
  return `${err.name}${reply ? `:${reply}` : ''}${cause}`;
}

const byLogger = new WeakMap<Logger, ThrottledLog>();

/** The throttled log of `logger`: one per logger, so every site writing through it shares its groups. */
export function throttled(logger: Logger): ThrottledLog {
  let t = byLogger.get(logger);
  if (!t) byLogger.set(logger, (t = new ThrottledLog(logger)));
  return t;
}
